"""Hard routing and the deterministic leaf models it implies (paper Appendix C).

Leaves are never taken from gradient training: after each stage they are recomputed from the hard splits, as the mean
of the leaf's targets (constant leaves) or a ridge-stabilized least-squares fit on its rows (linear leaves, GET-Linear).
Which linear leaves keep their slopes is the rule (``tree.LINEAR_LEAF_RULES``):

* ``"ols"``, the paper's plain rule: every leaf with at least p+2 rows is a least-squares fit, the others their mean;
* ``"gcv"`` (the default): a leaf keeps its least-squares fit only where it beats the leaf's mean by generalized
  cross-validation, RSS / (n (1 - k/n)^2) with k = p+1 parameters against k = 1. A deep GET-Linear tree has many
  leaves of a few dozen rows; plain least squares there fits noise with p+1 parameters and extrapolates wildly on new
  rows (abalone, depth 8, fast budget: test R2 26 with "ols", 38 with "gcv"), and the depth search then sees a
  noisy validation curve. GCV needs only the leaf's own training rows (its RSS and n), so it costs nothing extra.
  Under "gcv" a leaf of fewer than ``MIN_LEAF_ROWS`` rows also has no value of its own: it predicts its nearest
  ancestor's mean with that many rows, unclamped. Under squared loss a heavy-tailed target rewards splits that wall
  off one or two extreme rows in a leaf of their own (their error drops to zero), and a test row that lands in that
  polytope then gets the extreme value: on gas_turbine_co (depth 5, the app's 6-s fit, split seed 0) 10 leaves of
  1-14 rows held 20% of the test error, test R2 54 against a training R2 of 88. With the rule the hard loss that
  picks the best tree no longer gains from such a leaf, so the search spends its leaves elsewhere (test R2 67).

A leaf no training row reaches takes its nearest non-empty ancestor's mean, never an arbitrary constant.

With ``clip`` (``GETRegressor(clip_leaves=True)``, the default) a linear leaf's prediction is clamped to the range of
the training targets that reached it. A line fitted on a leaf's rows is only supported there; a new row can land in
the leaf far outside that support (an oblique leaf is a wide, unbounded polytope) and the line then extrapolates
without limit: on gas_turbine_co (fast budget, split seed 2) one such leaf took GET-Linear's test R2 from 68 to 32.
The clamp costs two numbers per leaf and is a no-op for constant leaves (a mean lies in its range), so only linear
leaves carry bounds. The fitted tree's leaves (``refit_tree_leaves``) narrow a sloped leaf's range further to Tukey's
far fences of its training targets, [Q1 - FENCE IQR, Q3 + FENCE IQR]: a small leaf whose line runs through one
extreme target would hand that target to every new row at its end (gas_turbine_co: a 14-row leaf held the table's
largest target and 60% of a fit's test error). Over the 12 shared tables' app-default trees (seeds 0-2) the fences
gained +0.37 R2 points (se 0.22), all on gas_turbine_co, and cost at most 0.03 on any other tree
(``results/app-default-variants-v2.md``).

Classification (``classes``): y is one-hot (B, n, C); a leaf's values are its rows' weighted class shares (the
Brier / Gini optimum), and an empty leaf takes its nearest non-empty ancestor's shares, like a mean.

Batched like ``soft.py``: B problems x S starts = M models; X (B, n, p), y and w (B, n) with w holding 1/n_b per real
row and 0 for padding. Leaf indices are 0..L-1 (heap node id minus L).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from torch.utils.weak import WeakIdKeyDictionary

from get_core.engine import classes
from get_core.model import routing
from get_core.model.tree import ObliqueTree

Tensor = torch.Tensor

#: Ridge penalty on the slopes of a linear leaf, relative to the leaf's (weighted) row count; data are in [0, 1].
RIDGE = 1e-6
#: ``"gcv"`` only: a leaf with fewer training rows than this has no model of its own and predicts its nearest
#: ancestor's mean with at least this many (see the module docstring).
MIN_LEAF_ROWS = 10
#: ``"gcv"`` only: a leaf keeps its slopes only with at least this many training rows per parameter (p + 1); 1 asks
#: nothing beyond GCV's p + 2 rows. Stricter values were measured for the app's default run and not adopted
#: (``bench.studies.app_variants``, results/app-default-variants.md): on gas_turbine_co a leaf of 14 rows and 10
#: parameters nearly interpolates an extreme target and GCV keeps its line (60% of one split's test error); 3 rows
#: per parameter fixes that leaf, and trained with, test R2 rose by +0.96 (standard error 0.91) over 36 paired fits,
#: all of it from that table: -0.18 (se 0.23) over the other 33.
SLOPE_ROWS_PER_PARAMETER = 1
#: ``_leaf_sums``: the most rows of one leaf that one matmul of its batch sums, and about how many elements it holds
#: at a time, so its memory stays bounded for any row count.
_BLOCK_ROWS = 128
_SUM_CHUNK = 2 ** 25


@dataclass
class LeafFit:
    intercepts: Tensor  # (M, L), or (M, L, C) class shares
    coefs: Tensor | None  # (M, L, p)
    n_samples: Tensor  # (M, 2L-1) rows reaching each node, heap order (row t-1 is node t)
    node_means: Tensor  # (M, 2L-1) mean target per node, NaN where no row; (M, 2L-1, C) class shares
    lower: Tensor | None = None  # (M, L) a leaf's prediction is clamped to [lower, upper]; None: no clamp
    upper: Tensor | None = None
    accuracy: Tensor | None = None  # (M,) a classifier's hard training accuracy (``hard_accuracy``); None: regression


def route(weights: Tensor, thresholds: Tensor, Xat: Tensor, starts: int) -> Tensor:
    """Leaf index (M, n) of every row under hard splits: left iff a·x <= b. Xat (B, p+1, n) ends in a ones row."""
    M, N, p = weights.shape
    B, _, n = Xat.shape
    split = torch.cat([weights, thresholds.unsqueeze(2).neg()], dim=2)  # margin = a·x - b
    margin = torch.bmm(split.view(B, starts * N, p + 1), Xat).view(M, N, n)
    node = torch.zeros(M, 1, n, dtype=torch.long, device=Xat.device)
    for _ in range((N + 1).bit_length() - 1):
        go_right = margin.gather(1, node) > 0
        node = 2 * node + 1 + go_right
    return node.view(M, n) - N


def route_native(weights: Tensor, thresholds: Tensor, Xa: Tensor, starts: int) -> Tensor | None:
    """``route``'s leaf indices from the compiled router (``routing.route_models``), which visits only each row's
    path instead of computing every node's margin for every row (at 1,000,000 rows a checkpoint's routing took
    2.5-5 s); None where it does not apply (not float32 on the CPU, no compiler) or where it does not reproduce
    ``route`` on this machine. Xa (B, n, p+1) ends in a ones column."""
    if Xa.device.type != "cpu" or Xa.dtype != torch.float32 or not _native_matches_route():
        return None
    split = torch.cat([weights, thresholds.unsqueeze(2).neg()], dim=2).detach().contiguous()
    leaf = routing.route_models(split.numpy(), Xa.detach().contiguous().numpy(), starts, torch.get_num_threads())
    return None if leaf is None else torch.from_numpy(leaf)


@lru_cache(maxsize=1)
def _native_matches_route() -> bool:
    """Whether the compiled router gives ``route``'s leaves here, on random problems whose thresholds put rows on
    the splits (margins that are zero up to rounding, where any other order of arithmetic would send rows the other
    way). Checked once per process: torch's CPU matmul adds one fused multiply-add per feature in order (measured
    with MKL on AVX-512 and AVX2), which the router copies; should a BLAS add otherwise, training keeps ``route``."""
    gen = torch.Generator().manual_seed(0)
    for p, depth, n in ((3, 4, 3000), (10, 6, 3000), (70, 3, 1000)):
        B, S, N = 2, 3, 2 ** depth - 1
        X = torch.rand(B, n, p, generator=gen) * torch.rand(B, 1, p, generator=gen)
        Xa = torch.cat([X, torch.ones(B, n, 1)], dim=2).contiguous()
        weights = torch.randn(B * S, N, p, generator=gen)
        on_split = torch.randint(0, n, (B * S, N), generator=gen)
        thresholds = torch.einsum("mnp,mnp->mn", weights.double(),
                                  X.repeat_interleave(S, dim=0).gather(1, on_split.unsqueeze(2).expand(-1, -1, p))
                                  .double()).float()
        leaf = routing.route_models(torch.cat([weights, thresholds.unsqueeze(2).neg()], dim=2).numpy(), Xa.numpy(), S)
        if leaf is None or not torch.equal(torch.from_numpy(leaf), route(weights, thresholds, Xa.transpose(1, 2)
                                                                             .contiguous(), S)):
            return False
    return True


def _per_model(t: Tensor, starts: int) -> Tensor:
    """A per-problem tensor (B, ...) for each of its starts: (B*S, ...). One problem (a plain fit) gets a read-only
    view of its one row set, not ``starts`` copies (at 1,000,000 rows and 10 starts the copies of y and w were a
    quarter of a checkpoint's leaf statistics); the values, and so every sum over them, are the same."""
    if t.shape[0] == 1:
        return t.expand(starts, *t.shape[1:])
    return t.repeat_interleave(starts, dim=0)


def _class_cells(leaf: Tensor, y: Tensor, starts: int) -> Tensor:
    """Each model's (leaf, class) cell of each row, leaf x C + class (M, n), from one-hot y (B, n, C)."""
    return _per_model(class_codes(y), starts) + leaf * y.shape[2]


#: The class codes of the one-hot targets seen, by tensor (weakly: they go with it).
_CODES = WeakIdKeyDictionary()


def class_codes(y: Tensor) -> Tensor:
    """Each row's class (B, n) from one-hot y (B, n, C) (0 for a padding row of zeros), read once per tensor: a fit's
    checkpoints score the same rows many times, and one argmax of 1,000,000 rows of 50 classes took 0.13 s."""
    codes = _CODES.get(y)
    if codes is None:
        codes = _CODES[y] = y.argmax(dim=2)
    return codes


def node_statistics(leaf: Tensor, y: Tensor, w: Tensor, n_leaves: int, starts: int) -> tuple[Tensor, Tensor]:
    """(n_samples, node_means) for every node of every model, heap order, (M, 2L-1) (means (M, 2L-1, C) for
    one-hot y)."""
    M = leaf.shape[0]
    dtype = w.dtype
    weight = torch.zeros(M, 2 * n_leaves - 1, dtype=dtype, device=w.device)
    total = torch.zeros(M, 2 * n_leaves - 1, *y.shape[2:], dtype=dtype, device=w.device)
    count = torch.zeros_like(weight)
    at_leaves = slice(n_leaves - 1, None)  # scattered into the leaves' columns: no (M, n) heap index to build
    weight[:, at_leaves].scatter_add_(1, leaf, _per_model(w, starts))  # per-row terms once per problem
    if y.dim() == 3:  # each row's weight to its (leaf, class) cell: n adds per model, not n x C
        C = y.shape[2]
        cells = torch.zeros(M, n_leaves * C, dtype=dtype, device=w.device)
        cells.scatter_add_(1, _class_cells(leaf, y, starts), _per_model(w, starts))
        total[:, at_leaves] = cells.view(M, n_leaves, C)
    else:
        total[:, at_leaves].scatter_add_(1, leaf, _per_model(w * y, starts))
    count[:, at_leaves].scatter_add_(1, leaf, _per_model((w > 0).to(dtype), starts))
    level_size = n_leaves // 2  # parents from children, bottom-up
    while level_size >= 1:
        lo = level_size - 1
        for arr in (weight, total, count):
            kids = arr[:, 2 * lo + 1: 2 * lo + 1 + 2 * level_size]
            arr[:, lo:lo + level_size] = kids.reshape(M, level_size, 2, *arr.shape[2:]).sum(dim=2)
        level_size //= 2
    means = total / (weight.unsqueeze(2) if y.dim() == 3 else weight)
    means[count == 0] = float("nan")
    return count.round().long(), means


def fill_from_ancestors(node_values: Tensor) -> Tensor:
    """Copy of (M, 2L-1) node values where every NaN takes its nearest non-NaN ancestor's value."""
    filled = node_values.clone()
    size = 2
    while size <= (filled.shape[1] + 1) // 2:  # top-down, one level at a time
        level = filled[:, size - 1: 2 * size - 1]
        parents = filled[:, size // 2 - 1: size - 1].repeat_interleave(2, dim=1)
        filled[:, size - 1: 2 * size - 1] = torch.where(torch.isnan(level), parents, level)
        size *= 2
    return filled


def fit_leaves(leaf: Tensor, X: Tensor, y: Tensor, w: Tensor, depth: int, linear: str | None, starts: int,
               clip: bool = False) -> LeafFit:
    """Leaf models implied by the hard routing ``leaf`` (M, n); ``linear`` is None (constant leaves) or a rule;
    ``clip`` bounds each linear leaf by its training targets' range."""
    L = 2 ** depth
    n_samples, means = node_statistics(leaf, y, w, L, starts)
    fallback = fill_from_ancestors(means)[:, L - 1:]  # (M, L): own mean, or nearest non-empty ancestor's
    if linear is None:
        return LeafFit(fallback, None, n_samples, means)
    intercepts, coefs, rss = _ridge_leaves(leaf, X, y, w, L, starts)
    rows = n_samples[:, L - 1:]
    k = X.shape[2] + 1
    few = torch.zeros_like(rows, dtype=torch.bool)
    if linear == "gcv":
        mean_rss = _mean_rss(leaf, y, w, L, starts)
        n = rows.to(torch.float64)
        keep = (rows > k) & (rows >= SLOPE_ROWS_PER_PARAMETER * k) & (rss / (1 - k / n.clamp(min=k + 1)) ** 2 < mean_rss / (1 - 1 / n.clamp(min=2)) ** 2)
        few = rows < MIN_LEAF_ROWS
        keep &= ~few
        fallback = torch.where(few, _supported_means(n_samples, means)[:, L - 1:], fallback)
    else:
        keep = rows > k
    intercepts = torch.where(keep, intercepts, fallback)
    coefs = coefs.masked_fill(~keep.unsqueeze(-1), 0.0)
    lower, upper = _target_range(leaf, y, w, L, starts) if clip else (None, None)
    if lower is not None:
        lower, upper = lower.masked_fill(few, float("-inf")), upper.masked_fill(few, float("inf"))
    return LeafFit(intercepts, coefs, n_samples, means, lower, upper)


def _supported_means(n_samples: Tensor, means: Tensor) -> Tensor:
    """(M, 2L-1) node means where every node of fewer than ``MIN_LEAF_ROWS`` rows takes its nearest ancestor's
    that has that many (the root always keeps its own)."""
    few = n_samples < MIN_LEAF_ROWS
    few[:, 0] = False
    return fill_from_ancestors(means.masked_fill(few, float("nan")))


def _target_range(leaf: Tensor, y: Tensor, w: Tensor, L: int, starts: int) -> tuple[Tensor, Tensor]:
    """(M, L) smallest and largest target of each leaf's real rows (padding has w = 0); -inf / inf when empty."""
    inf = torch.tensor(float("inf"), dtype=y.dtype, device=y.device)
    lower = torch.full((leaf.shape[0], L), float("inf"), dtype=y.dtype, device=y.device)
    upper = torch.full_like(lower, float("-inf"))
    lower.scatter_reduce_(1, leaf, _per_model(torch.where(w > 0, y, inf), starts), "amin")
    upper.scatter_reduce_(1, leaf, _per_model(torch.where(w > 0, y, -inf), starts), "amax")
    empty = lower > upper
    return lower.masked_fill(empty, float("-inf")), upper.masked_fill(empty, float("inf"))


def _mean_rss(leaf: Tensor, y: Tensor, w: Tensor, L: int, starts: int) -> Tensor:
    """(M, L) weighted residual sum of squares of each leaf's rows about their mean, float64."""
    w64, y64 = w.double(), y.double()
    wy = w64 * y64
    sw = torch.zeros(leaf.shape[0], L, dtype=torch.float64, device=y.device)
    sw.scatter_add_(1, leaf, _per_model(w64, starts))
    swy = torch.zeros_like(sw).scatter_add_(1, leaf, _per_model(wy, starts))
    swyy = torch.zeros_like(sw).scatter_add_(1, leaf, _per_model(wy * y64, starts))
    return (swyy - swy.square() / sw.clamp(min=1e-300)).clamp(min=0)


def _ridge_leaves(leaf: Tensor, X: Tensor, y: Tensor, w: Tensor, L: int, starts: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per-leaf weighted least squares on [x, 1] with a small ridge on the slopes, solved in float64:
    (intercepts, coefs, residual sum of squares), the RSS (M, L) in float64 and weighted like the loss."""
    B, n, p = X.shape
    M = leaf.shape[0]
    q = p + 1
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype, device=X.device)], dim=2).double()  # (B, n, q)
    gram, rhs, yy = _leaf_sums(leaf, Xa, w.double(), y.double(), L, starts)
    leaf_weight = gram[:, p, p]  # sum of w in the leaf
    penalty = torch.zeros(M * L, q, dtype=torch.float64, device=X.device)
    penalty[:, :p] = RIDGE * leaf_weight.unsqueeze(1)
    penalty[:, p] = 1e-12
    penalty += 1e-12
    theta = torch.linalg.solve(gram + torch.diag_embed(penalty), rhs.unsqueeze(2)).squeeze(2)
    fitted = (theta.unsqueeze(1) @ gram @ theta.unsqueeze(2)).view(-1)  # sum w (x.theta)^2
    rss = (yy - 2 * (theta * rhs).sum(dim=1) + fitted).clamp(min=0).view(M, L)
    theta = theta.view(M, L, q).to(X.dtype)
    return theta[:, :, p], theta[:, :, :p], rss


def _leaf_sums(leaf: Tensor, Xa: Tensor, w: Tensor, y: Tensor, L: int, starts: int) -> tuple[Tensor, Tensor, Tensor]:
    """Each model's weighted sums over each leaf's rows, float64, flat over (model, leaf): the Gram matrices
    sum w x x^T (M*L, q, q), sum w y x (M*L, q) and sum w y^2 (M*L,), all read off one (q+1, q+1) matrix per leaf
    of [x, y] rows.

    Why blocks: scattering each row's outer product to its leaf moves n (q+1)^2 floats through memory per model,
    and on 40 features (ailerons) it took most of a linear-leaf fit. Here each model's rows are sorted by leaf and cut
    into blocks of at most ``block`` rows of one leaf (zero-weight padding); one batched matmul sums each block and
    only the blocks' sums are scattered (``python -m bench.studies.leaf_sums``: 2-10 times less CPU from 5 features
    on). ``block`` is at most the mean leaf's row count, so the padding at most doubles the rows; about
    ``_SUM_CHUNK`` elements are held at a time (models, and rows when one model alone exceeds it)."""
    M, n, q = leaf.shape[0], Xa.shape[1], Xa.shape[2] + 1  # q: the columns of [x, 1, y]
    device = Xa.device
    sums = Xa.new_zeros(M * L, q, q)
    rows_w = torch.cat([Xa, y.unsqueeze(2), w.unsqueeze(2)], dim=2).reshape(-1, q + 1)  # (B*n, [x, 1, y, w])
    block = max(1, min(_BLOCK_ROWS, n // L))
    row_cost = 2 * (q + 1) + (q * q) // block  # a row's elements in a chunk: copied, padded, its block's sum
    chunk_rows = min(n, max(block, _SUM_CHUNK // row_cost))
    per_chunk = max(1, _SUM_CHUNK // (chunk_rows * row_cost))
    for m0 in range(0, M, per_chunk):
        models = torch.arange(m0, min(M, m0 + per_chunk), device=device)
        for r0 in range(0, n, chunk_rows):
            positions = torch.arange(r0, min(n, r0 + chunk_rows), device=device)
            key = (leaf[models][:, positions] + (models * L).unsqueeze(1)).reshape(-1)  # each row's (model, leaf)
            source = (((models // starts) * n).unsqueeze(1) + positions).reshape(-1)
            picked, segment = _leaf_blocks(key, rows_w, source, M * L, block)
            weighted = picked[:, :, :q] * picked[:, :, q:]
            sums.index_add_(0, segment, weighted.transpose(1, 2) @ picked[:, :, :q])
    p = q - 2
    return sums[:, :p + 1, :p + 1], sums[:, :p + 1, p + 1], sums[:, p + 1, p + 1]


def _leaf_blocks(key: Tensor, rows: Tensor, source: Tensor, n_segments: int, block: int) -> tuple[Tensor, Tensor]:
    """``rows[source]`` sorted by ``key`` and cut into (n_blocks, block, columns) blocks, each holding rows of one
    key (the rest zeros), and each block's key."""
    order = torch.argsort(key)
    key, source = key[order], source[order]
    counts = torch.bincount(key, minlength=n_segments)
    blocks = (counts + block - 1) // block
    rank = torch.arange(len(key), device=key.device) - (torch.cumsum(counts, 0) - counts)[key]
    slot = ((torch.cumsum(blocks, 0) - blocks)[key] + torch.div(rank, block, rounding_mode="floor")) * block \
        + rank % block
    n_blocks = int(blocks.sum())
    padded = rows.new_zeros(n_blocks * block, rows.shape[1])
    padded[slot] = rows[source]
    segment = torch.repeat_interleave(torch.arange(n_segments, device=key.device), blocks)
    return padded.view(n_blocks, block, rows.shape[1]), segment


def predict_leaves(leaf: Tensor, fit: LeafFit, X: Tensor, starts: int) -> Tensor:
    """Hard prediction (M, n) of every model for its problem's rows; (M, n, C) class shares for classification."""
    if fit.intercepts.dim() == 3:
        return fit.intercepts.gather(1, leaf.unsqueeze(2).expand(-1, -1, fit.intercepts.shape[2]))
    pred = fit.intercepts.gather(1, leaf)
    if fit.coefs is not None:
        Xm = _per_model(X, starts)  # (M, n, p)
        k = fit.coefs.gather(1, leaf.unsqueeze(2).expand(-1, -1, X.shape[2]))
        pred = pred + (Xm * k).sum(dim=2)
    if fit.lower is not None:
        pred = torch.minimum(torch.maximum(pred, fit.lower.gather(1, leaf)), fit.upper.gather(1, leaf))
    return pred


def hard_loss(leaf: Tensor, fit: LeafFit, X: Tensor, y: Tensor, w: Tensor, starts: int) -> Tensor:
    """Weighted mean squared error (M,) of the hard-split tree; for one-hot y its Brier score, which at the leaves'
    class shares is the weighted Gini impurity of the leaves (CART's criterion). For one-hot y, |y - F|^2 =
    1 - 2 F[class] + |F|^2 is gathered per row: no (M, n, C) array (1,000,000 rows of 50 classes: 6.9 s for 8
    models before, a probe's single call)."""
    if fit.intercepts.dim() == 3:
        F = fit.intercepts  # (M, L, C)
        own = F.reshape(F.shape[0], -1).gather(1, _class_cells(leaf, y, starts))  # (M, n): F[leaf, class]
        squared = F.square().sum(dim=2).gather(1, leaf).sub_(own, alpha=2.0).add_(1.0)
    else:
        squared = (_per_model(y, starts) - predict_leaves(leaf, fit, X, starts)).square_()  # in place: one buffer
    return squared.mul_(_per_model(w, starts)).sum(dim=1)


def hard_accuracy(leaf: Tensor, fit: LeafFit, y: Tensor, w: Tensor, starts: int) -> Tensor:
    """Weighted share (M,) of the rows whose leaf's largest class share is their own class (one-hot y): the hard-split
    tree's training accuracy, which the run's live curves show beside the Brier score."""
    predicted = fit.intercepts.argmax(dim=2).gather(1, leaf)
    hits = (_per_model(class_codes(y), starts) == predicted).to(w.dtype)
    wm = _per_model(w, starts)
    return ((hits * wm).sum(dim=1) / wm.sum(dim=1).clamp(min=1e-300)).double()


#: Tukey's far fences (``refit_tree_leaves``): a sloped linear leaf's prediction stays within [Q1 - FENCE IQR,
#: Q3 + FENCE IQR] of its training targets (inside their range).
FENCE = 3.0


def refit_tree_leaves(tree: ObliqueTree, X: np.ndarray, y_scaled: np.ndarray, linear_rule: str = "gcv",
                      clip: bool = True, sample_weight: np.ndarray | None = None, scaled: bool = False) -> ObliqueTree:
    """Set ``tree``'s leaves, node counts and node means from its own float64 routing of the training rows
    (``linear_rule`` and ``clip`` apply to a linear-leaf tree; a classifier's ``y_scaled`` is one-hot (n, C)).
    ``scaled``: X is already ``tree.scale_X(X)`` (the trainer scales its rows once per fit, not once per call)."""
    Xs = X if scaled else tree.scale_X(X)
    if tree.is_classifier:
        return _refit_class_leaves(tree, Xs, y_scaled, sample_weight)
    leaf = torch.as_tensor(routing.leaves(tree, Xs, scaled=True) - tree.n_leaves).view(1, -1)
    Xs = torch.as_tensor(Xs).unsqueeze(0)
    y = torch.as_tensor(np.asarray(y_scaled, dtype=np.float64)).view(1, -1)
    w = torch.as_tensor(_normalized(sample_weight, y.shape[1])).view(1, -1)
    linear = tree.leaf_type == "linear"
    fit = fit_leaves(leaf, Xs, y, w, tree.depth, linear_rule if linear else None, 1, clip and linear)
    tree.leaf_intercepts = fit.intercepts[0].numpy().copy()
    tree.leaf_coefs = np.zeros_like(tree.leaf_coefs) if fit.coefs is None else fit.coefs[0].numpy().copy()
    tree.n_samples = fit.n_samples[0].numpy().copy()
    tree.node_values = fit.node_means[0].numpy().copy()
    no_bounds = np.full(tree.n_leaves, np.inf)
    tree.leaf_lower = -no_bounds if fit.lower is None else fit.lower[0].numpy().copy()
    tree.leaf_upper = no_bounds if fit.upper is None else fit.upper[0].numpy().copy()
    if fit.lower is not None:
        _fence_sloped_leaves(tree, leaf[0].numpy(), y[0].numpy(), w[0].numpy())
    return tree


def _fence_sloped_leaves(tree: ObliqueTree, leaf: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
    """Narrow each sloped leaf's bounds to Tukey's far fences of its training targets (rows of weight > 0)."""
    for i in np.flatnonzero(np.any(tree.leaf_coefs != 0, axis=1)):
        q1, q3 = np.percentile(y[(leaf == i) & (w > 0)], [25, 75])
        tree.leaf_lower[i] = max(tree.leaf_lower[i], q1 - FENCE * (q3 - q1))
        tree.leaf_upper[i] = min(tree.leaf_upper[i], q3 + FENCE * (q3 - q1))


def _normalized(sample_weight: np.ndarray | None, n: int) -> np.ndarray:
    """Row weights summing to 1 (the engine's mean over rows): 1/n each, or ``sample_weight`` rescaled."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    sw = np.asarray(sample_weight, dtype=np.float64)
    return sw / sw.sum()


def _refit_class_leaves(tree: ObliqueTree, Xs: np.ndarray, Y: np.ndarray,
                        sample_weight: np.ndarray | None) -> ObliqueTree:
    """A classifier's node counts (weighted, in sample-weight units), smoothed leaf probabilities (a leaf no
    training row reaches takes its nearest reached ancestor's), row counts and majority shares; Xs scaled."""
    sw = np.ones(len(Y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    L = tree.n_leaves
    leaf = routing.leaves(tree, Xs, scaled=True) - L
    counts = np.zeros((2 * L - 1, Y.shape[1]))
    rows = np.zeros(2 * L - 1, dtype=np.int64)
    counts[L - 1:] = np.bincount(leaf * Y.shape[1] + Y.argmax(axis=1), sw, L * Y.shape[1]).reshape(L, -1)  # one-hot Y
    rows[L - 1:] = np.bincount(leaf[sw > 0], minlength=L)
    for t in range(L - 1, 0, -1):  # parents from children, node t is row t-1
        counts[t - 1] = counts[2 * t - 1] + counts[2 * t]
        rows[t - 1] = rows[2 * t - 1] + rows[2 * t]
    total = counts.sum(axis=1)
    proba = classes.smoothed(counts)
    for t in range(2, 2 * L):  # top-down: an unreached node takes its parent's shares
        if total[t - 1] <= 0:
            proba[t - 1] = proba[t // 2 - 1]
    tree.node_counts, tree.leaf_proba, tree.n_samples = counts, proba[L - 1:], rows
    with np.errstate(invalid="ignore", divide="ignore"):
        tree.node_values = np.where(total > 0, counts.max(axis=1) / total, np.nan)
    return tree


def leaf_values(tree: ObliqueTree) -> np.ndarray:
    """What each leaf predicts in the engine's hard loss: its intercept, or for a classifier its training rows' raw
    class shares (L, C) (the Brier optimum; ``leaf_proba`` where no row reached it)."""
    if not tree.is_classifier:
        return tree.leaf_intercepts
    counts = tree.node_counts[tree.n_leaves - 1:]
    total = counts.sum(axis=1, keepdims=True)
    return np.where(total > 0, counts / np.where(total > 0, total, 1.0), tree.leaf_proba)


def row_losses(tree: ObliqueTree, X: np.ndarray, y_scaled: np.ndarray,
               sample_weight: np.ndarray | None = None, scaled: bool = False) -> np.ndarray:
    """Each training row's hard loss (n,), times its weight: squared error, or a classifier's Brier score at the
    leaves' raw class shares (its sum is the leaves' weighted Gini impurity). ``scaled``: X is ``tree.scale_X(X)``."""
    Xs = X if scaled else tree.scale_X(X)
    if tree.is_classifier:  # one-hot rows: |y - v|^2 = 1 - 2 v[class] + |v|^2, no (n, C) array of shares
        values, leaf = leaf_values(tree), routing.leaves(tree, Xs, scaled=True) - tree.n_leaves
        losses = 1.0 - 2.0 * values[leaf, y_scaled.argmax(axis=1)] + np.square(values).sum(axis=1)[leaf]
    else:
        losses = (routing.predict_scaled(tree, Xs, scaled=True)[1] - y_scaled) ** 2
    return losses if sample_weight is None else losses * sample_weight
