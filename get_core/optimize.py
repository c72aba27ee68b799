"""The batched GET engine (the paper's Algorithm 1): many trees, over starts and problems, in one tensor program.

``run_stages`` optimizes B problems x S starts through the iterative scaled-sigmoid schedule (``alpha_schedule``)
with warm starts, leaves recomputed from hard splits after every stage, and keeps each problem's best tree by hard
training loss. ``initial_params`` builds the starts (a warm start, CART, random hyperplanes). The pipeline
(``train``: scaling, one problem, the ``ObliqueTree``) and the subtree polish (one problem per subtree) call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from get_core import leaves, native
from get_core.config import GETConfig, soft_rows
from get_core.progress import Reporter
from get_core.schedule import alpha_stage_bounds
from get_core.soft import Params, Workspace, soft_loss_and_grad
from get_core.sparse import Sparsifier
from get_core.starts import cart_splits, random_splits

#: Keep (models x branch nodes x rows) per soft-pass chunk under this many float32 elements (~64 MB per array).
CHUNK_ELEMENTS = 2 ** 24
#: Hard-loss checkpoints per stage (the last epoch is always one); each may update the best tree.
CHECKPOINTS_PER_STAGE = 20


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch sees no CUDA device; use device='auto' or 'cpu'.")
    return torch.device(device)


@dataclass
class Problems:
    """B datasets padded to a common row count: Xa (B, n, p+1) = [X, 1], Xat its transpose, y and w (B, n).

    ``w`` is 1/n_b on real rows and 0 on padding, so every loss is a per-problem mean. The ones column lets one
    matmul apply a hyperplane's weights and threshold together.
    """

    Xa: torch.Tensor
    Xat: torch.Tensor
    y: torch.Tensor
    w: torch.Tensor
    n_rows: torch.Tensor  # (B,) int64, on the CPU

    @classmethod
    def from_arrays(cls, subsets: Sequence[tuple[np.ndarray, np.ndarray]], device: torch.device,
                    dtype: torch.dtype = torch.float32) -> "Problems":
        n_max = max(len(y) for _, y in subsets)
        p = subsets[0][0].shape[1]
        Xa = np.zeros((len(subsets), n_max, p + 1))
        y = np.zeros((len(subsets), n_max))
        w = np.zeros((len(subsets), n_max))
        for b, (xb, yb) in enumerate(subsets):
            Xa[b, :len(yb), :p], y[b, :len(yb)], w[b, :len(yb)] = xb, yb, 1.0 / max(1, len(yb))
        Xa[:, :, p] = 1.0
        Xa_t = torch.as_tensor(Xa, dtype=dtype, device=device)
        return cls(Xa_t, Xa_t.transpose(1, 2).contiguous(), torch.as_tensor(y, dtype=dtype, device=device),
                   torch.as_tensor(w, dtype=dtype, device=device), torch.tensor([len(s[1]) for s in subsets]))

    @property
    def X(self) -> torch.Tensor:
        return self.Xa[:, :, :-1]

    @property
    def n_problems(self) -> int:
        return self.Xa.shape[0]

    def sample(self, size: int, gen: torch.Generator) -> "Problems":
        """``size`` rows per problem, drawn uniformly with replacement from its real rows and weighted 1/size: every
        per-problem mean loss and its gradient, estimated without bias at size/n of the cost."""
        B, device = self.n_problems, self.Xa.device
        u = torch.rand(B, size, generator=gen, device=device, dtype=torch.float64)
        limit = self.n_rows.to(device).view(B, 1)
        rows = torch.minimum((u * limit).long(), limit - 1)  # (B, size)
        Xa = self.Xa.gather(1, rows.unsqueeze(2).expand(-1, -1, self.Xa.shape[2]))
        y = self.y.gather(1, rows)
        return Problems(Xa, Xa.transpose(1, 2).contiguous(), y, torch.full_like(y, 1.0 / size),
                        torch.full((B,), size))

    def chunks(self, n_models: int, n_nodes: int) -> list["Problems"]:
        """Row chunks that bound the soft pass's memory; losses and gradients add over chunks."""
        n = self.Xa.shape[1]
        size = max(64, CHUNK_ELEMENTS // max(1, n_models * n_nodes))
        if size >= n:
            return [self]
        return [Problems(self.Xa[:, i:i + size], self.Xat[:, :, i:i + size], self.y[:, i:i + size],
                         self.w[:, i:i + size], self.n_rows) for i in range(0, n, size)]


def alpha_schedule(n_models: int, config: GETConfig, gen: torch.Generator) -> torch.Tensor:
    """(M, n_alphas): per start, one alpha drawn uniformly from each stage's interval, sorted ascending."""
    if config.fixed_alpha is not None:
        return torch.full((n_models, config.n_alphas), float(config.fixed_alpha), dtype=torch.float64)
    bounds = torch.from_numpy(alpha_stage_bounds(config.alpha_range, config.n_alphas))
    u = torch.rand(n_models, config.n_alphas, generator=gen, dtype=torch.float64)
    return torch.sort(bounds[:, 0] + u * (bounds[:, 1] - bounds[:, 0]), dim=1).values


@dataclass
class StageResult:
    best: Params  # one model per problem: (B, ...)
    best_loss: torch.Tensor  # (B,) hard training loss of ``best`` (float64)


def _learning_rate(base: float, epoch: int, n_epochs: int) -> float:
    """Short linear warm-up, then cosine annealing to zero over the stage."""
    warm = max(1, n_epochs // 50)
    if epoch <= warm:
        return base * epoch / warm
    return base * 0.5 * (1.0 + math.cos(math.pi * (epoch - warm) / max(1, n_epochs - warm)))


class _Adam:
    """AdamW (torch.optim.AdamW's update, betas 0.9 / 0.999, eps 1e-8), state per tensor. ``weight_decay`` is
    decoupled as in AdamW; 0 (the default) skips it, leaving the paper's only regularizer, the optional L1 term."""

    def __init__(self, tensors: list[torch.Tensor], weight_decay: float = 0.0):
        self.m = [torch.zeros_like(t) for t in tensors]
        self.v = [torch.zeros_like(t) for t in tensors]
        self.t = 0
        self.weight_decay = weight_decay

    def step(self, tensors: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        self.t += 1
        c1, c2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        for p, g, m, v in zip(tensors, grads, self.m, self.v):
            if self.weight_decay:
                p.mul_(1 - lr * self.weight_decay)
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).addcmul_(g, g, value=0.001)
            p.addcdiv_(m, v.div(c2).sqrt_().add_(1e-8), value=-lr / c1)


def _soft_pass(params: Params, alpha: torch.Tensor, problems: Problems, chunks: list[Problems], starts: int,
               l1: float, workspaces: dict[int, Workspace]):
    """Soft loss (M,) and gradients: the fused CPU kernel when it is available, else torch ops over row chunks."""
    if native.available(problems.Xa.device, problems.Xa.shape[2] - 1) and problems.Xa.dtype == torch.float32:
        loss, grads = native.soft_loss_and_grad(params, alpha, problems.Xa, problems.y, problems.w, starts,
                                                  problems.n_rows)
    else:
        loss, grads = None, None
        M, N = params.weights.shape[:2]
        for c in chunks:
            n = c.y.shape[1]
            if n not in workspaces:
                workspaces[n] = Workspace(M, N.bit_length(), n, c.y.dtype, c.y.device)
            l_c, g_c = soft_loss_and_grad(params, alpha, c.Xa, c.Xat, c.y, c.w, starts, workspaces[n])
            if grads is None:
                loss, grads = l_c, g_c
            else:
                loss += l_c
                for total, part in zip(grads.tensors(), g_c.tensors()):
                    total += part
    if l1:
        loss += l1 * params.weights.abs().sum(dim=(1, 2))
        grads.weights.add_(torch.sign(params.weights), alpha=l1)
    return loss, grads


def _route(params: Params, chunks: list[Problems], starts: int) -> torch.Tensor:
    return torch.cat([leaves.route(params.weights, params.thresholds, c.Xat, starts) for c in chunks], dim=1)


def _hard_evaluate(params: Params, problems: Problems, chunks: list[Problems], depth: int, starts: int,
                   linear: str | None, clip: bool) -> tuple[leaves.LeafFit, torch.Tensor]:
    leaf = _route(params, chunks, starts)
    fit = leaves.fit_leaves(leaf, problems.X, problems.y, problems.w, depth, linear, starts, clip)
    return fit, leaves.hard_loss(leaf, fit, problems.X, problems.y, problems.w, starts).double()


def _with_leaves(params: Params, fit: leaves.LeafFit) -> Params:
    coefs = None if params.coefs is None else fit.coefs.clone()
    return Params(params.weights, params.thresholds, fit.intercepts.clone(), coefs)


def _keep_best(best: Params, best_loss: torch.Tensor, params: Params, fit: leaves.LeafFit,
               loss: torch.Tensor) -> None:
    """Per model: where ``loss`` beats ``best_loss``, store the current splits with their hard-split leaves."""
    better = torch.nonzero(loss < best_loss).flatten()
    if len(better) == 0:
        return
    for dst, src in zip(best.tensors(), _with_leaves(params, fit).tensors()):
        dst[better] = src[better]
    best_loss[better] = loss[better]


def _per_problem_best(best: Params, best_loss: torch.Tensor, starts: int) -> StageResult:
    value, start = best_loss.view(-1, starts).min(dim=1)
    source = start + torch.arange(len(start), device=start.device) * starts
    return StageResult(Params(*(None if t is None else t[source].clone() for t in (
        best.weights, best.thresholds, best.intercepts, best.coefs))), value)


def run_stages(problems: Problems, params: Params, alphas: torch.Tensor, config: GETConfig, starts: int,
               reporter: Reporter) -> StageResult:
    """Optimize M = B x ``starts`` trees through the alpha stages; return each problem's best hard-split tree.

    ``params`` (M models) are modified in place; ``alphas`` is (M, n_stages). Every start keeps its best hard-split
    tree (checked on the initial trees and at checkpoints, the last at each stage's end), so the result is never
    worse than any initial tree (e.g. the CART start). The next stage warm-starts from each start's best tree so far,
    with its hard-split leaves (Alg. 1 lines 8 and 12; the authors' code does the same). Why not from the stage's
    final splits: a soft first stage can leave a deep tree worse than its start, and the sharp stage did not recover
    (abalone, depth 8, paper budget: training R2 72.8, the CART start, against 75.2 from the best tree).
    With ``config.max_split_features`` every checkpoint also scores the top-k projection of the current splits, the
    stages after the first prune the splits to k features as they go, and one more stage at the last alpha
    fine-tunes each start's best k-sparse tree on its frozen support; only k-sparse trees are returned (``sparse``).
    """
    depth = (params.weights.shape[1] + 1).bit_length() - 1
    linear = config.linear_leaves if params.coefs is not None else None
    clip = config.clip_leaves and linear is not None
    M, N = params.weights.shape[:2]
    chunks = problems.chunks(M, N)

    def evaluate(trees: Params) -> tuple[leaves.LeafFit, torch.Tensor]:
        return _hard_evaluate(trees, problems, chunks, depth, starts, linear, clip)

    fit, hard = evaluate(params)
    params = _with_leaves(params, fit)
    best, best_loss = params.clone(), hard.clone()  # per model (start): the next stage's warm start
    sparsity = Sparsifier.of(config.max_split_features, problems.X, problems.w, starts)  # None: dense splits
    kept, kept_loss = best, best_loss  # the result per start: its best tree, its best k-sparse tree with a k
    if sparsity is not None:
        trees, fit, hard = _projected(sparsity, params, evaluate)
        kept, kept_loss = _with_leaves(trees, fit).clone(), hard.clone()
    n_stages, n_epochs = alphas.shape[1], config.n_epochs
    plan = list(range(n_stages)) + ([] if sparsity is None else [n_stages - 1])  # alpha column per stage
    checkpoints = set(np.linspace(n_epochs / CHECKPOINTS_PER_STAGE, n_epochs, CHECKPOINTS_PER_STAGE).round().astype(
        int).tolist())
    device_alphas = alphas.to(problems.X.device, problems.X.dtype)
    workspaces: dict[int, Workspace] = {}
    rows = soft_rows(config.batch_rows, int(problems.n_rows.max()))  # None: soft epochs on every row
    sampler = None if rows is None else _seeded(config.random_state, problems.X.device)
    for stage, column in enumerate(plan):
        masked = sparsity is not None and stage == len(plan) - 1
        if masked:
            params = kept.clone()
        if sparsity is not None:
            sparsity.begin_stage(params, frozen=masked)
        alpha = device_alphas[:, column].contiguous()
        adam = _Adam(params.tensors(), config.weight_decay)
        problem_best = kept_loss.view(-1, starts).min(dim=1).values
        reporter.report(stage, len(plan), 0, n_epochs, alphas[:, column], torch.full((M,), math.nan), hard,
                        problem_best, starts)
        for epoch in range(1, n_epochs + 1):
            batch = problems if rows is None else problems.sample(rows, sampler)
            soft, grads = _soft_pass(params, alpha, batch, chunks if rows is None else batch.chunks(M, N), starts,
                                     config.l1, workspaces)
            adam.step(params.tensors(), grads.tensors(), _learning_rate(config.learning_rate, epoch, n_epochs))
            if sparsity is not None:
                sparsity.after_step(params, stage, epoch, n_epochs)
            at_checkpoint = epoch in checkpoints
            if at_checkpoint:
                fit, hard = evaluate(params)
                _keep_best(kept if masked else best, kept_loss if masked else best_loss, params, fit, hard)
                if sparsity is not None and not masked:
                    _keep_best(kept, kept_loss, *_projected(sparsity, params, evaluate))
                problem_best = kept_loss.view(-1, starts).min(dim=1).values
            if at_checkpoint or reporter.due():
                reporter.report(stage, len(plan), epoch, n_epochs, alphas[:, column], soft, hard, problem_best,
                                starts)
            if reporter.cancelled:
                return _per_problem_best(kept, kept_loss, starts)
        params = best.clone()
    return _per_problem_best(kept, kept_loss, starts)


def _seeded(random_state: int | None, device: torch.device) -> torch.Generator:
    """The row sampler's generator, on the problems' device: seeded by ``random_state``, else fresh entropy."""
    gen = torch.Generator(device=device)
    if random_state is None:
        gen.seed()
    else:
        gen.manual_seed(random_state)
    return gen


def _projected(sparsity: Sparsifier, params: Params, evaluate: Callable[[Params], tuple[leaves.LeafFit, torch.Tensor]]
               ) -> tuple[Params, leaves.LeafFit, torch.Tensor]:
    """The top-k projection of ``params``'s splits, its hard-split leaves and its hard loss."""
    trees = sparsity.scored(params)
    return (trees, *evaluate(trees))


def initial_params(problems: Problems, subsets: Sequence[tuple[np.ndarray, np.ndarray]], config: GETConfig,
                   depth: int, gen: torch.Generator, warm: Params | None = None) -> Params:
    """Start trees for every problem: [warm start,] CART, then random hyperplanes; (B*S) models on the device."""
    S = config.n_starts
    X_cpu = problems.X.cpu()
    weights, thresholds = random_splits(X_cpu, problems.n_rows, S, depth, gen)
    fixed = 0
    if warm is not None:
        weights[::S], thresholds[::S] = warm.weights.cpu(), warm.thresholds.cpu()
        fixed = 1
    if S > fixed:
        seed = int(torch.randint(0, 2 ** 31 - 1, (1,), generator=gen))
        for b, (xb, yb) in enumerate(subsets):
            w_c, t_c = cart_splits(xb, yb, depth, seed)
            weights[b * S + fixed] = torch.as_tensor(w_c, dtype=weights.dtype)
            thresholds[b * S + fixed] = torch.as_tensor(t_c, dtype=thresholds.dtype)
    M, L, p = weights.shape[0], 2 ** depth, weights.shape[2]
    device = problems.X.device
    coefs = torch.zeros(M, L, p, dtype=weights.dtype, device=device) if config.leaf == "linear" else None
    return Params(weights.to(device), thresholds.to(device), torch.zeros(M, L, dtype=weights.dtype, device=device),
                  coefs)
