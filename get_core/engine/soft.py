"""The soft (scaled-sigmoid) tree loss and its exact gradient, without an autograd graph.

Why hand-written: the authors' implementation spends ~80% of its time in autograd's backward of a gathered
[leaves x depth x n] product (shared/notes/engine-performance.md). The soft loss of one row satisfies a bottom-up
recursion over the heap, R_leaf = (y - f_leaf(x))^2 and R_t = s_t R_2t + (1 - s_t) R_2t+1, so the loss is R_root and
its gradient needs only the top-down reach probabilities Q (Q_2t = Q_t s_t, Q_2t+1 = Q_t (1 - s_t)):
dL/ds_t = Q_t (R_2t - R_2t+1) and dL/dleaf = -2 Q_leaf (y - f_leaf). Two level-wise passes over (models, nodes, rows)
arrays, no leaf-probability tensor. ``tests/test_soft.py`` checks every gradient against torch.autograd.

Classification (``classes``): y is one-hot (B, n, C), the leaves hold C values each (intercepts (M, L, C)), and the
leaf's own loss and gradient come from ``classes.leaf_losses`` / ``classes.leaf_gradient``; the recursion is the same.

Logistic leaves (``LOGISTIC``, issue 52): each leaf holds C logits that are linear in the row, z_lc = b_lc + a_lc·x
(intercepts (M, L, C), coefs (M, L, C, p)), and R_l = logsumexp(z_l) - z_l·y, the log loss of the leaf's softmax;
dR_l/dz_l = softmax(z_l) - y, so the leaves' gradient is one more matmul with the rows, as GET-Linear's is. It
holds (M, L, C, n) logits (``Problems.chunks`` sizes its row chunks for them) and has no fused CPU kernel.

Conventions: B problems (datasets) x S starts = M models. Arrays are node-major, (M, nodes, rows), so each tree
level is a contiguous block. Row weights ``w`` (B, n) already include 1/n_b (and 0 for padding rows), so the loss is
a weighted mean. Split at node t: go left when a_t·x <= b_t; soft "left" value s_t = sigmoid(alpha (b_t - a_t·x)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from get_core.engine import classes

Tensor = torch.Tensor

#: The soft pass's per-leaf loss (``Problems.class_loss``) when the leaves are logistic models.
LOGISTIC = "logistic"


@dataclass
class Params:
    """Trainable parameters of M trees of one depth. ``coefs`` is None for constant leaves."""

    weights: Tensor  # (M, N, p) split hyperplanes, N = 2^D - 1 branch nodes in heap order
    thresholds: Tensor  # (M, N)
    intercepts: Tensor  # (M, L) leaf constants / intercepts, L = 2^D; (M, L, C) class values (classification)
    coefs: Tensor | None  # (M, L, p) linear-leaf slopes; (M, L, C, p) logistic leaves' (classification)

    def tensors(self) -> list[Tensor]:
        return [t for t in (self.weights, self.thresholds, self.intercepts, self.coefs) if t is not None]

    def clone(self) -> "Params":
        return Params(*(None if t is None else t.clone() for t in (self.weights, self.thresholds, self.intercepts,
                                                                  self.coefs)))


def level_slice(level: int) -> slice:
    """Heap rows (0-based) of the branch nodes at ``level`` (root = level 0)."""
    return slice(2 ** level - 1, 2 ** (level + 1) - 1)


class Workspace:
    """Preallocated (models, nodes, rows) buffers reused every epoch.

    Why: fresh 60 MB tensors per op cost a page-fault storm (mmap'd allocations are zeroed on first touch), which
    measured slower than the arithmetic itself; every op below writes into these buffers with ``out=``.
    """

    def __init__(self, n_models: int, depth: int, n_rows: int, dtype: torch.dtype, device: torch.device):
        N, L = 2 ** depth - 1, 2 ** depth
        self.s = torch.empty(n_models, N, n_rows, dtype=dtype, device=device)
        self.diff = torch.empty_like(self.s)
        self.resid = torch.empty(n_models, L, n_rows, dtype=dtype, device=device)
        self.ping = torch.empty_like(self.resid)
        self.pong = torch.empty_like(self.resid)

    @staticmethod
    def view(buffer: Tensor, *shape: int) -> Tensor:
        """The first prod(shape) elements of ``buffer`` as a contiguous tensor of ``shape``."""
        return buffer.view(-1)[:math.prod(shape)].view(shape)


def leaf_residuals(params: Params, Xat: Tensor, y: Tensor, starts: int, out: Tensor) -> Tensor:
    """y - f_leaf(x) for every model, leaf and row, written into ``out`` (M, L, n). Xat (B, p+1, n) ends in ones."""
    B, n = y.shape
    M, L = params.intercepts.shape
    if params.coefs is None:
        torch.sub(y.view(B, 1, 1, n), params.intercepts.view(B, starts, L, 1), out=out.view(B, starts, L, n))
        return out
    neg_leaf = torch.cat([params.coefs, params.intercepts.unsqueeze(2)], dim=2).neg_()  # (M, L, p+1)
    torch.bmm(neg_leaf.view(B, starts * L, -1), Xat, out=out.view(B, starts * L, n))
    out.view(B, starts, L, n).add_(y.view(B, 1, 1, n))
    return out


def leaf_logits(params: Params, Xat: Tensor, starts: int) -> Tensor:
    """Every logistic leaf's logits at every row, (M, L, C, n); Xat (B, p+1, n) ends in ones."""
    M, L, C, p = params.coefs.shape
    B, _, n = Xat.shape
    leafp = torch.cat([params.coefs, params.intercepts.unsqueeze(3)], dim=3)  # (M, L, C, p+1)
    return torch.bmm(leafp.view(B, starts * L * C, p + 1), Xat).view(M, L, C, n)


def _logistic_losses(Z: Tensor, y: Tensor, starts: int, out: Tensor) -> Tensor:
    """R_l(x_i, y_i) = logsumexp(z_l) - z_l·y_i (M, L, n) from the logits Z (M, L, C, n) and one-hot y (B, n, C),
    written into ``out``; Z becomes softmax(z_l) in place, the gradient's, so the exponentials are taken once (on
    segment, depth 6, logsumexp, softmax and a product over classes took 60% of an epoch)."""
    M, L, C, n = Z.shape
    B = y.shape[0]
    row_class = y.argmax(dim=2).view(B, 1, 1, 1, n).expand(B, starts, L, 1, n)  # padding rows: class 0, weight 0
    R = out.view(M, L, 1, n)
    torch.neg(Z.view(B, starts, L, C, n).gather(3, row_class).view(M, L, 1, n), out=R)  # -z_l·y
    top = Z.amax(dim=2, keepdim=True)
    total = Z.sub_(top).exp_().sum(dim=2, keepdim=True)
    R.add_(top).add_(total.log())
    Z.div_(total)
    return out


def soft_loss_and_grad(params: Params, alpha: Tensor, Xa: Tensor, Xat: Tensor, y: Tensor, w: Tensor, starts: int,
                       work: Workspace | None = None, class_loss: str = classes.SOFT_LOSS) -> tuple[Tensor, Params]:
    """Soft loss per model (M,) and its gradient with respect to every parameter (L1 term excluded).

    Xa (B, n, p+1) is X with a trailing column of ones, Xat (B, p+1, n) its contiguous transpose; y and w (B, n), or
    y (B, n, C) one-hot for classification with ``class_loss`` per leaf; alpha (M,). ``work`` must have been made for
    these M, depth and n (made here if omitted).
    """
    B, n = w.shape
    classify = y.dim() == 3
    M, N, p = params.weights.shape
    L = N + 1
    depth = L.bit_length() - 1
    work = work or Workspace(M, depth, n, y.dtype, y.device)
    a = alpha.view(M, 1, 1)
    # u = alpha (b - a·x) = [-alpha a, alpha b]·[x, 1]; s = sigmoid(u) is the soft "go left" value.
    split = torch.cat([params.weights, params.thresholds.unsqueeze(2).neg()], dim=2).mul_(-a)  # (M, N, p+1)
    s = work.s
    torch.bmm(split.view(B, starts * N, p + 1), Xat, out=s.view(B, starts * N, n))
    s.sigmoid_()  # (M, N, n)
    diff, buffers = work.diff, (work.ping, work.pong)
    logistic = classify and params.coefs is not None
    if logistic:
        Z = leaf_logits(params, Xat, starts)
        R = _logistic_losses(Z, y, starts, work.ping)
    elif classify:
        R = classes.leaf_losses(params.intercepts, y, starts, class_loss, work.ping)
    else:
        resid = leaf_residuals(params, Xat, y, starts, work.resid)  # (M, L, n)
        R = torch.mul(resid, resid, out=work.ping)
    for i, level in enumerate(reversed(range(depth))):
        child = R.view(M, 2 ** level, 2, n)
        d = diff[:, level_slice(level)]
        torch.sub(child[:, :, 0], child[:, :, 1], out=d)
        R = torch.addcmul(child[:, :, 1], s[:, level_slice(level)], d,
                          out=Workspace.view(buffers[(i + 1) % 2], M, 2 ** level, n))
    wm = w.view(B, 1, n).expand(B, starts, n).reshape(M, 1, n)
    loss = (R * wm).sum(dim=(1, 2))  # (M,)

    Q = wm
    for level in range(depth):
        s_l, d = s[:, level_slice(level)], diff[:, level_slice(level)]
        child = Workspace.view(buffers[level % 2], M, 2 ** level, 2, n)
        left = torch.mul(Q, s_l, out=child[:, :, 0])
        torch.sub(Q, left, out=child[:, :, 1])
        d.mul_(left)
        d.addcmul_(d, s_l, value=-1.0)  # dL/du = Q s (1 - s) (R_l - R_r)
        Q = child.view(M, 2 ** (level + 1), n)

    g_split = torch.bmm(diff.view(B, starts * N, n), Xa).view(M, N, p + 1)  # [sum G x, sum G]
    g_weights = g_split[:, :, :p].mul(-a)
    g_thresholds = g_split[:, :, p].mul(alpha.view(M, 1))
    if logistic:  # dL/dz = Q (softmax(z) - y), then one matmul with [x, 1]
        C = Z.shape[2]
        G = Z  # softmax(z), from _logistic_losses
        G.view(B, starts, L, C, n).sub_(y.transpose(1, 2).reshape(B, 1, 1, C, n)).mul_(Q.view(B, starts, L, 1, n))
        g_leaf = torch.bmm(G.view(B, starts * L * C, n), Xa).view(M, L, C, p + 1)
        return loss, Params(g_weights, g_thresholds, g_leaf[..., p].contiguous(), g_leaf[..., :p].contiguous())
    if classify:
        return loss, Params(g_weights, g_thresholds, classes.leaf_gradient(params.intercepts, Q, y, starts, class_loss),
                            None)
    leaf_err = resid.mul_(Q)  # Q_leaf (y - f): (M, L, n)
    g_leaf = torch.bmm(leaf_err.view(B, starts * L, n), Xa).view(M, L, p + 1).mul_(-2.0)
    g_coefs = None if params.coefs is None else g_leaf[:, :, :p].contiguous()
    return loss, Params(g_weights, g_thresholds, g_leaf[:, :, p].contiguous(), g_coefs)
