"""Gradient-based entire-tree optimization (the paper's Algorithm 1), batched over starts and problems.

``train(X, y, config, on_progress)`` is the whole pipeline: min-max (or robust) scaling, multi-start (start 0 from
CART, the others random) with all starts in one tensor program, the iterative scaled-sigmoid schedule with warm
starts, leaves recomputed from hard splits after every stage, best-of by hard training loss, optional subtree polish,
and the final ``ObliqueTree``. ``run_stages`` is the reusable core: polish calls it with one problem per subtree.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import torch

from get_core import leaves, native
from get_core.data import ROBUST_PERCENTILES
from get_core.progress import ProgressCallback, Reporter
from get_core.schedule import alpha_stage_bounds
from get_core.soft import Params, Workspace, soft_loss_and_grad
from get_core.starts import cart_splits, random_splits
from get_core.tree import LINEAR_LEAF_RULES, MAX_DEPTH, ObliqueTree

#: Keep (models x branch nodes x rows) per soft-pass chunk under this many float32 elements (~64 MB per array).
CHUNK_ELEMENTS = 2 ** 24
#: Hard-loss checkpoints per stage (the last epoch is always one); each may update the best tree.
CHECKPOINTS_PER_STAGE = 20
#: Feature scalings: "minmax" maps each feature's range to [0, 1] (the paper's); "robust" its 1st-99th percentiles.
SCALINGS = ("minmax", "robust")
#: Robust scaling maps a feature's whole range to at most this many units (values up to data.MAX_ABS stay finite).
MAX_ROBUST_STRETCH = 1e6


@dataclass(frozen=True)
class GETConfig:
    depth: int = 4
    leaf: str = "constant"  # "constant" (GET) or "linear" (GET-Linear)
    linear_leaves: str = "gcv"  # which linear leaves keep their slopes: LINEAR_LEAF_RULES
    clip_leaves: bool = True  # clamp a linear leaf's prediction to its training targets' range (leaves.py)
    n_starts: int = 10
    n_epochs: int = 3000  # per alpha stage
    alpha_range: tuple[float, float] = (5.0, 150.0)
    n_alphas: int = 2  # stages per start, ascending alphas; see alpha_stage_bounds
    learning_rate: float = 0.01
    l1: float = 0.0  # l1 * sum|a| added to the (mean) soft loss, paper eq. (11)
    polish: bool = False
    random_state: int | None = None
    device: str = "auto"  # "auto" | "cpu" | "cuda"
    fixed_alpha: float | None = None  # ablation (paper Table 4): every stage uses this alpha instead
    scaling: str = "minmax"  # one of SCALINGS; see MinMax.fit

    def validate(self) -> None:
        """Raise ValueError naming the first bad parameter."""
        checks = [
            (_integer(self.depth) and 1 <= self.depth <= MAX_DEPTH, "depth",
             f"an integer from 1 to {MAX_DEPTH}"),
            (self.leaf in ("constant", "linear"), "leaf", "'constant' or 'linear'"),
            (self.linear_leaves in LINEAR_LEAF_RULES, "linear_leaves", f"one of {LINEAR_LEAF_RULES}"),
            (isinstance(self.clip_leaves, (bool, np.bool_)), "clip_leaves", "True or False"),
            (_integer(self.n_starts) and self.n_starts >= 1, "n_starts", "an integer >= 1"),
            (_integer(self.n_epochs) and self.n_epochs >= 1, "n_epochs", "an integer >= 1"),
            (_integer(self.n_alphas) and self.n_alphas >= 1, "n_alphas", "an integer >= 1"),
            (0 < _real(self.alpha_range, 0) <= _real(self.alpha_range, 1) < math.inf, "alpha_range",
             "(min, max) with 0 < min <= max, both finite"),
            (0 < _real(self.learning_rate) < math.inf, "learning_rate", "a finite number > 0"),
            (0 <= _real(self.l1) < math.inf, "l1", "a finite number >= 0"),
            (self.device in ("auto", "cpu", "cuda"), "device", "'auto', 'cpu' or 'cuda'"),
            (self.fixed_alpha is None or 0 < _real(self.fixed_alpha) < math.inf, "fixed_alpha",
             "None or a finite number > 0"),
            (self.scaling in SCALINGS, "scaling", " or ".join(repr(s) for s in SCALINGS)),
        ]
        for ok, name, expected in checks:
            if not ok:
                raise ValueError(f"{name} must be {expected}; got {getattr(self, name)!r}")


def _integer(value: object) -> bool:
    """An int, not a bool: ``depth=True`` is a slip, not depth 1."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _real(value: object, index: int | None = None) -> float:
    """``value`` (or its item ``index``, for a pair) as a float, NaN when it is not a real number: NaN fails every
    range check, so ``validate`` names the parameter instead of raising a TypeError."""
    if index is not None:
        try:
            items = tuple(value)  # type: ignore[arg-type]
        except TypeError:
            return math.nan
        value = items[index] if len(items) == 2 else math.nan
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return math.nan
    return float(value)


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
    """AdamW without weight decay (the paper's only regularizer is the optional L1 term), state per tensor."""

    def __init__(self, tensors: list[torch.Tensor]):
        self.m = [torch.zeros_like(t) for t in tensors]
        self.v = [torch.zeros_like(t) for t in tensors]
        self.t = 0

    def step(self, tensors: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        self.t += 1
        c1, c2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        for p, g, m, v in zip(tensors, grads, self.m, self.v):
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
    """
    depth = (params.weights.shape[1] + 1).bit_length() - 1
    linear = config.linear_leaves if params.coefs is not None else None
    clip = config.clip_leaves and linear is not None
    M, N = params.weights.shape[:2]
    chunks = problems.chunks(M, N)
    fit, hard = _hard_evaluate(params, problems, chunks, depth, starts, linear, clip)
    params = _with_leaves(params, fit)
    best, best_loss = params.clone(), hard.clone()  # per model (start)
    n_stages, n_epochs = alphas.shape[1], config.n_epochs
    checkpoints = set(np.linspace(n_epochs / CHECKPOINTS_PER_STAGE, n_epochs, CHECKPOINTS_PER_STAGE).round().astype(
        int).tolist())
    device_alphas = alphas.to(problems.X.device, problems.X.dtype)
    workspaces: dict[int, Workspace] = {}
    for stage in range(n_stages):
        alpha = device_alphas[:, stage].contiguous()
        adam = _Adam(params.tensors())
        problem_best = best_loss.view(-1, starts).min(dim=1).values
        reporter.report(stage, n_stages, 0, n_epochs, alphas[:, stage], torch.full((M,), math.nan), hard,
                        problem_best, starts)
        for epoch in range(1, n_epochs + 1):
            soft, grads = _soft_pass(params, alpha, problems, chunks, starts, config.l1, workspaces)
            adam.step(params.tensors(), grads.tensors(), _learning_rate(config.learning_rate, epoch, n_epochs))
            at_checkpoint = epoch in checkpoints
            if at_checkpoint:
                fit, hard = _hard_evaluate(params, problems, chunks, depth, starts, linear, clip)
                _keep_best(best, best_loss, params, fit, hard)
                problem_best = best_loss.view(-1, starts).min(dim=1).values
            if at_checkpoint or reporter.due():
                reporter.report(stage, n_stages, epoch, n_epochs, alphas[:, stage], soft, hard, problem_best, starts)
            if reporter.cancelled:
                return _per_problem_best(best, best_loss, starts)
        params = best.clone()
    return _per_problem_best(best, best_loss, starts)


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


@dataclass(frozen=True)
class MinMax:
    """Min-max scaling to [0, 1] learned on the training data (the paper's preprocessing)."""

    x_min: np.ndarray
    x_scale: np.ndarray
    y_min: float
    y_scale: float

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, scaling: str = "minmax") -> "MinMax":
        """``scaling="robust"`` maps each feature's 1st-99th percentiles to [0, 1] instead of its range (min-max
        where those coincide), so a few far outliers cannot squeeze the other rows into a sliver of [0, 1] where
        the sigmoid is flat at every alpha and GET's splits hardly move; trees are affine-invariant per feature,
        so either is the same model class."""
        x_min, y_min = X.min(axis=0), float(y.min())
        x_range, y_range = X.max(axis=0) - x_min, float(y.max()) - y_min
        if scaling == "robust":
            low, high = np.percentile(X, ROBUST_PERCENTILES, axis=0)
            span = np.maximum(high - low, x_range / MAX_ROBUST_STRETCH)  # float32 keeps every scaled value finite
            x_min, x_range = np.where(high > low, low, x_min), np.where(high > low, span, x_range)
        return cls(x_min, np.where(x_range > 0, x_range, 1.0), y_min, y_range if y_range > 0 else 1.0)

    def transform(self, X: np.ndarray, y: np.ndarray | None = None):
        Xs = (X - self.x_min) / self.x_scale
        return Xs if y is None else (Xs, (y - self.y_min) / self.y_scale)


def make_generator(random_state: int | None) -> torch.Generator:
    seed = random_state if random_state is not None else int(np.random.SeedSequence().entropy % (2 ** 63))
    return torch.Generator().manual_seed(int(seed))


def train(X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None = None,
          feature_names: Sequence[str] | None = None, warm_start: ObliqueTree | None = None) -> ObliqueTree:
    """Fit one oblique regression tree by GET; see the module docstring. Returns it in the data's original units.

    ``warm_start`` (a tree of ``config.depth`` on the same features, e.g. one fitted on a subset of these rows) takes
    start 0's place, before the CART start; the result is never worse on X, y than that tree's splits.
    """
    config.validate()
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    t0 = time.perf_counter()
    scaling = MinMax.fit(X, y, config.scaling)
    Xs, ys = scaling.transform(X, y)
    device = resolve_device(config.device)
    gen = make_generator(config.random_state)
    problems = Problems.from_arrays([(Xs, ys)], device)
    warm = None if warm_start is None else rescaled_splits(warm_start, scaling, config.depth)
    params = initial_params(problems, [(Xs, ys)], config, config.depth, gen, warm=warm)
    alphas = alpha_schedule(config.n_starts, config, gen)
    y_var = float(ys.var())
    span = (0.0, 0.5 if config.polish else 1.0)
    reporter = Reporter(on_progress, y_var, "optimize", span)
    result = run_stages(problems, params, alphas, config, config.n_starts, reporter)
    tree = tree_from_params(result.best, scaling, feature_names, config, X, ys)
    tree.meta.update(
        config={k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        alphas=alphas.tolist(), device=str(device), optimize_seconds=time.perf_counter() - t0,
        cancelled=reporter.cancelled,
    )
    if config.polish and not reporter.cancelled:
        from get_core.polish import polish  # polish builds on this module (floors: polish -> optimize)

        tree = polish(tree, X, y, config, gen, Reporter(on_progress, y_var, "polish", (0.5, 1.0)))
    tree.meta["train_mse_scaled"] = float(np.mean((tree.predict_scaled(X) - ys) ** 2))
    tree.meta["train_r2"] = 1.0 - tree.meta["train_mse_scaled"] / max(y_var, 1e-300)
    tree.meta["fit_seconds"] = time.perf_counter() - t0
    return tree


def rescaled_splits(tree: ObliqueTree, scaling: MinMax, depth: int) -> Params:
    """``tree``'s hyperplanes as split parameters in ``scaling``'s [0, 1] units (same regions of feature space)."""
    if tree.depth != depth or tree.n_features != len(scaling.x_min):
        raise ValueError(f"warm_start must be a depth-{depth} tree on {len(scaling.x_min)} features; got depth "
                         f"{tree.depth} on {tree.n_features}.")
    a, c = map(np.array, zip(*(tree.split_in_original_units(t) for t in range(1, tree.n_branches + 1))))
    weights, thresholds = a * scaling.x_scale, c - a @ scaling.x_min  # a·x <= c with x = x_min + x_scale·u
    return Params(torch.as_tensor(weights[None], dtype=torch.float32),
                  torch.as_tensor(thresholds[None], dtype=torch.float32), None, None)


def tree_from_params(best: Params, scaling: MinMax, feature_names: Sequence[str] | None, config: GETConfig,
                     X: np.ndarray, y_scaled: np.ndarray) -> ObliqueTree:
    """The ObliqueTree of model 0 of ``best``, leaves refit in float64 from the tree's own (numpy) hard routing."""
    weights = best.weights[0].double().cpu().numpy()
    p, L = weights.shape[1], weights.shape[0] + 1
    tree = ObliqueTree(weights, best.thresholds[0].double().cpu().numpy(), np.zeros(L), np.zeros((L, p)),
                       np.zeros(2 * L - 1, dtype=np.int64), np.full(2 * L - 1, np.nan), scaling.x_min,
                       scaling.x_scale, scaling.y_min, scaling.y_scale,
                       list(feature_names) if feature_names is not None else [], config.leaf)
    return leaves.refit_tree_leaves(tree, X, y_scaled, config.linear_leaves, config.clip_leaves)
