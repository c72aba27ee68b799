"""The batched GET engine (the paper's Algorithm 1): many trees, over starts and problems, in one tensor program.

``run_stages`` optimizes B problems x S starts through the iterative scaled-sigmoid schedule (``alpha_schedule``)
with warm starts, leaves recomputed from hard splits after every stage, and keeps each problem's best tree by hard
training loss. ``initial_params`` builds the starts (a warm start, CART, random hyperplanes). The pipeline
(``train``: scaling, one problem, the ``ObliqueTree``) and the subtree polish (one problem per subtree) call it.
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from get_core.budget import PROBE_SHARE, now
from get_core.engine import classes, leaves, native
from get_core.config import GETConfig, soft_rows
from get_core.engine.progress import Reporter
from get_core.engine.plan import Plan
from get_core.engine.race import (LADDER, MAX_EPOCHS, MIN_CHECKPOINTS, MIN_EPOCHS, MIN_EPOCHS_MORE_STARTS, Costs,
                                  Race, RacePlan, plan)
from get_core.schedule import alpha_stage_bounds
from get_core.engine.soft import LOGISTIC, Params, Workspace, leaf_logits, soft_loss_and_grad
from get_core.engine.sparse import Sparsifier
from get_core.engine.starts import cart_splits, random_splits

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


#: CUDA fits running now in ``repeatable`` scopes (threads of one process, e.g. a Dask worker's), and whether the
#: first of them switched torch's deterministic mode on (then the last to end switches it off).
_REPEATABLE = {"fits": 0, "switched_on": False}
_REPEATABLE_LOCK = threading.Lock()


@contextmanager
def repeatable(device: torch.device) -> Iterator[None]:
    """Within: a fit on ``device`` adds in a fixed order, so one ``random_state`` gives one tree bit for bit.

    CUDA's scatter-adds (the leaves' sums, the backward of a gather) add in the order its threads happen to finish,
    so two fits differed in the last bits and then in their splits; torch's deterministic algorithms add in a fixed
    order instead, while any CUDA fit of the process runs (the CPU's already do). A user who switched the mode on
    keeps it. ``warn_only``: an operation without such a version warns rather than stopping a user's fit.
    """
    if device.type != "cuda":
        yield
        return
    with _REPEATABLE_LOCK:
        if _REPEATABLE["fits"] == 0 and not torch.are_deterministic_algorithms_enabled():
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS's condition for repeatable products
            torch.use_deterministic_algorithms(True, warn_only=True)
            _REPEATABLE["switched_on"] = True
        _REPEATABLE["fits"] += 1
    try:
        yield
    finally:
        with _REPEATABLE_LOCK:
            _REPEATABLE["fits"] -= 1
            if _REPEATABLE["fits"] == 0 and _REPEATABLE["switched_on"]:
                torch.use_deterministic_algorithms(False)
                _REPEATABLE["switched_on"] = False


@dataclass
class Problems:
    """B datasets padded to a common row count: Xa (B, n, p+1) = [X, 1], Xat its transpose, y and w (B, n) (y
    (B, n, C) one-hot for classification, trained with the per-leaf ``class_loss``).

    ``w`` is 1/n_b on real rows (or the rows' sample weights scaled to sum to 1) and 0 on padding, so every loss is
    a per-problem (weighted) mean. The ones column lets one matmul apply a hyperplane's weights and threshold
    together.
    """

    Xa: torch.Tensor
    Xat: torch.Tensor
    y: torch.Tensor
    w: torch.Tensor
    n_rows: torch.Tensor  # (B,) int64, on the CPU
    class_loss: str = classes.SOFT_LOSS
    weighted: bool = False  # rows carry sample weights (``sample`` then weights its draws)
    groups: torch.Tensor | None = None  # (p,) engine column -> raw column: what max_split_features counts (``sparse``)

    @classmethod
    def from_arrays(cls, subsets: Sequence[tuple[np.ndarray, ...]], device: torch.device,
                    dtype: torch.dtype = torch.float32, class_loss: str = classes.SOFT_LOSS) -> "Problems":
        """``subsets``: (X, y) or (X, y, sample_weight) per problem; y (n,) or one-hot (n, C). The arrays are built
        in ``dtype`` (numpy casts each value as torch would), so no float64 (n, p+1) copy precedes the tensors."""
        n_max = max(len(s[1]) for s in subsets)
        p = subsets[0][0].shape[1]
        np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
        Xa = np.zeros((len(subsets), n_max, p + 1), dtype=np_dtype)
        y = np.zeros((len(subsets), n_max, *np.shape(subsets[0][1])[1:]), dtype=np_dtype)
        w = np.zeros((len(subsets), n_max), dtype=np_dtype)
        for b, (xb, yb, *wb) in enumerate(subsets):
            Xa[b, :len(yb), :p], y[b, :len(yb)] = xb, yb
            w[b, :len(yb)] = wb[0] / wb[0].sum() if wb and wb[0] is not None else 1.0 / max(1, len(yb))
        Xa[:, :, p] = 1.0
        Xa_t = torch.as_tensor(Xa, dtype=dtype, device=device)
        return cls(Xa_t, Xa_t.transpose(1, 2).contiguous(), torch.as_tensor(y, dtype=dtype, device=device),
                   torch.as_tensor(w, dtype=dtype, device=device), torch.tensor([len(s[1]) for s in subsets]),
                   class_loss, any(len(s) > 2 and s[2] is not None for s in subsets))

    @property
    def X(self) -> torch.Tensor:
        return self.Xa[:, :, :-1]

    @property
    def n_problems(self) -> int:
        return self.Xa.shape[0]

    @property
    def classes(self) -> bool:
        """Class targets: y is one-hot, (B, n, C)."""
        return self.y.dim() == 3

    def sample(self, size: int, gen: torch.Generator) -> "Problems":
        """``size`` rows per problem, drawn uniformly with replacement from its real rows and weighted 1/size (times
        n_b w_i with sample weights): every per-problem mean loss and its gradient, estimated without bias at
        size/n of the cost."""
        B, device = self.n_problems, self.Xa.device
        u = torch.rand(B, size, generator=gen, device=device, dtype=torch.float64)
        limit = self.n_rows.to(device).view(B, 1)
        rows = torch.minimum((u * limit).long(), limit - 1)  # (B, size)
        w = (self.w.gather(1, rows) * (limit.to(self.w.dtype) / size) if self.weighted
             else torch.full(rows.shape, 1.0 / size, dtype=self.w.dtype, device=device))
        Xa, y = _take_rows(self.Xa, rows), _take_rows(self.y, rows)
        # Xat a view: torch's products take it as it is, only the compiled soft pass copies it (``_soft_pass``); at
        # 101 columns, past that kernel's width, the copy was a third of a sampled epoch
        return Problems(Xa, Xa.transpose(1, 2), y, w, torch.full((B,), size), self.class_loss)

    def chunks(self, n_models: int, n_nodes: int) -> list["Problems"]:
        """Row chunks that bound the soft pass's memory; losses and gradients add over chunks."""
        n = self.Xa.shape[1]
        width = n_nodes * (2 * self.y.shape[2] if self.class_loss == LOGISTIC else 1)  # logistic: (L, C) logits
        size = max(64, CHUNK_ELEMENTS // max(1, n_models * width))
        if size >= n:
            return [self]
        return [Problems(self.Xa[:, i:i + size], self.Xat[:, :, i:i + size], self.y[:, i:i + size],
                         self.w[:, i:i + size], self.n_rows, self.class_loss, self.weighted)
                for i in range(0, n, size)]


def _take_rows(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``t`` (B, n, ...) at ``rows`` (B, size) per problem: whole rows copied by one ``index_select`` (at 1,000,000 x
    11 rows, a sample of 8,192 took 0.15 ms against 0.9 ms for ``gather`` with an expanded index)."""
    B, n = t.shape[:2]
    flat = (rows + torch.arange(B, device=rows.device).view(B, 1) * n).view(-1)
    return t.reshape(B * n, *t.shape[2:]).index_select(0, flat).view(B, rows.shape[1], *t.shape[2:])


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
    if (native.available(problems.Xa.device, problems.Xa.shape[2] - 1) and problems.Xa.dtype == torch.float32
            and problems.class_loss != LOGISTIC):
        loss, grads = native.soft_loss_and_grad(params, alpha, problems.Xat.contiguous(), problems.y, problems.w,
                                                  starts, problems.n_rows, problems.class_loss)
    else:
        loss, grads = None, None
        M, N = params.weights.shape[:2]
        for c in chunks:
            n = c.y.shape[1]
            if n not in workspaces:
                workspaces[n] = Workspace(M, N.bit_length(), n, c.y.dtype, c.y.device)
            l_c, g_c = soft_loss_and_grad(params, alpha, c.Xa, c.Xat, c.y, c.w, starts, workspaces[n], c.class_loss)
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


def _route(params: Params, problems: Problems, chunks: list[Problems], starts: int) -> torch.Tensor:
    """Every model's leaf index for every row: the compiled router where it reproduces ``leaves.route``, else that."""
    leaf = leaves.route_native(params.weights, params.thresholds, problems.Xa, starts)
    if leaf is not None:
        return leaf
    return torch.cat([leaves.route(params.weights, params.thresholds, c.Xat, starts) for c in chunks], dim=1)


def _hard_evaluate(params: Params, problems: Problems, chunks: list[Problems], depth: int, starts: int,
                   linear: str | None, clip: bool) -> tuple[leaves.LeafFit, torch.Tensor]:
    leaf = _route(params, problems, chunks, starts)
    fit = leaves.fit_leaves(leaf, problems.X, problems.y, problems.w, depth, linear, starts, clip)
    if fit.intercepts.dim() == 3:  # a classifier: its hard accuracy travels with the progress (``Reporter``)
        fit.accuracy = leaves.hard_accuracy(leaf, fit, problems.y, problems.w, starts)
    if problems.class_loss == LOGISTIC:
        return fit, _logistic_hard_loss(params, leaf, chunks, starts)
    return fit, leaves.hard_loss(leaf, fit, problems.X, problems.y, problems.w, starts).double()


def _logistic_hard_loss(params: Params, leaf: torch.Tensor, chunks: list[Problems], starts: int) -> torch.Tensor:
    """The weighted log loss (M,) of the hard-split trees with their logistic leaves as trained (``soft.LOGISTIC``):
    what picks each start's best tree when the leaves are logistic models, which class shares would misjudge.
    ``leaf`` (M, n): every row's leaf, the rows of ``chunks`` in order."""
    total, first = None, 0
    for c in chunks:
        Z = leaf_logits(params, c.Xat, starts)  # (M, L, C, n)
        M, _, C, n = Z.shape
        B = c.y.shape[0]
        at = leaf[:, first:first + n].to(Z.device)
        first += n
        z = Z.gather(1, at.reshape(M, 1, 1, n).expand(M, 1, C, n)).view(B, starts, C, n)
        rows = torch.logsumexp(z, dim=2) - (z * c.y.transpose(1, 2).reshape(B, 1, C, n)).sum(dim=2)
        part = (rows * c.w.view(B, 1, n)).sum(dim=2).view(M).double()
        total = part if total is None else total + part
    return total


def _with_leaves(params: Params, fit: leaves.LeafFit, class_loss: str = classes.SOFT_LOSS) -> Params:
    """``params``' splits with the leaves of their hard split (a classifier's in the soft loss's form); logistic
    leaves keep their own, trained with the splits (no closed form to recompute them from)."""
    if class_loss == LOGISTIC:
        return Params(params.weights, params.thresholds, params.intercepts.clone(), params.coefs.clone())
    coefs = None if params.coefs is None else fit.coefs.clone()
    values = fit.intercepts.clone() if fit.intercepts.dim() == 2 else classes.leaf_scores(fit.intercepts, class_loss)
    return Params(params.weights, params.thresholds, values, coefs)


def _keep_best(best: Params, best_loss: torch.Tensor, params: Params, fit: leaves.LeafFit,
               loss: torch.Tensor, class_loss: str) -> None:
    """Per model: where ``loss`` beats ``best_loss``, store the current splits with their hard-split leaves."""
    better = torch.nonzero(loss < best_loss).flatten()
    if len(better) == 0:
        return
    for dst, src in zip(best.tensors(), _with_leaves(params, fit, class_loss).tensors()):
        dst[better] = src[better]
    best_loss[better] = loss[better]


def _per_problem_best(best: Params, best_loss: torch.Tensor, starts: int) -> StageResult:
    value, start = best_loss.view(-1, starts).min(dim=1)
    source = start + torch.arange(len(start), device=start.device) * starts
    return StageResult(Params(*(None if t is None else t[source].clone() for t in (
        best.weights, best.thresholds, best.intercepts, best.coefs))), value)


def run_stages(problems: Problems, params: Params, alphas: torch.Tensor, config: GETConfig, starts: int,
               reporter: Reporter, race: Race | None = None) -> StageResult:
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
    With a ``race`` (``time_budget``), its rungs drop the worse starts at checkpoints (``_Stages._cut``); their best
    trees stay candidates in ``archive`` (``race``).
    """
    if race is not None:
        race.start()
    return _Stages(problems, params, alphas, config, starts, reporter, race).run()


class _Stages:
    """One ``run_stages`` call. Per model (M = B x ``starts``, the race narrows them together, ``_cut``): ``params``
    (optimized), ``best`` and ``best_loss`` (each start's best tree so far: the next stage's warm start), ``kept``
    and ``kept_loss`` (each start's result: ``best`` itself for dense splits, else its best k-sparse tree),
    ``alphas`` (M, n_stages; on the host for progress, ``device_alphas`` on the problems' device) and ``hard`` (the
    latest hard losses); ``archive``: each problem's best tree among the starts a race dropped."""

    def __init__(self, problems: Problems, params: Params, alphas: torch.Tensor, config: GETConfig, starts: int,
                 reporter: Reporter, race: Race | None) -> None:
        self.problems, self.config, self.reporter, self.race, self.starts = problems, config, reporter, race, starts
        self.depth = (params.weights.shape[1] + 1).bit_length() - 1
        self.linear = config.linear_leaves if params.coefs is not None and not problems.classes else None
        self.clip = config.clip_leaves and self.linear is not None
        self.N = params.weights.shape[1]
        self.chunks, self.workspaces = problems.chunks(params.weights.shape[0], self.N), {}
        fit, self.hard = self.evaluate(params)
        if problems.class_loss == LOGISTIC:  # logistic leaves start as their hard split's log shares, slopes 0
            params = Params(params.weights, params.thresholds, classes.leaf_scores(fit.intercepts, "log"),
                            params.coefs)
            fit, self.hard = self.evaluate(params)
        self.accuracy = fit.accuracy  # (M,) a classifier's hard training accuracy at the latest checkpoint
        self.params = _with_leaves(params, fit, problems.class_loss)
        self.best, self.best_loss = self.params.clone(), self.hard.clone()
        self.sparsity = Sparsifier.of(config.max_split_features, problems.X, problems.w, starts,
                                      problems.groups)  # None: dense
        self.kept, self.kept_loss = self.best, self.best_loss
        if self.sparsity is not None:
            trees, fit, hard = _projected(self.sparsity, self.params, self.evaluate)
            self.kept, self.kept_loss = _with_leaves(trees, fit, problems.class_loss).clone(), hard.clone()
        n_stages = alphas.shape[1]
        self.plan = list(range(n_stages)) + ([] if self.sparsity is None else [n_stages - 1])  # alpha column each
        self.alphas, self.device_alphas = alphas, alphas.to(problems.X.device, problems.X.dtype)
        self.archive: StageResult | None = None
        self.epoch_rows = _SoftRows(problems, config.batch_rows, config.random_state)

    def evaluate(self, trees: Params) -> tuple[leaves.LeafFit, torch.Tensor]:
        return _hard_evaluate(trees, self.problems, self.chunks, self.depth, self.starts, self.linear, self.clip)

    def run(self) -> StageResult:
        for stage, column in enumerate(self.plan):
            if self._stage(stage, column):
                break
            self.params = self.best.clone()
        return _merged(_per_problem_best(self.kept, self.kept_loss, self.starts), self.archive)

    def _stage(self, stage: int, column: int) -> bool:
        """One stage's epochs at alpha column ``column``; True when the fit stops there (cancelled, or the race out
        of time). The last stage with a k fine-tunes the best k-sparse trees on their frozen support."""
        n_epochs, config = self.config.n_epochs, self.config
        masked = self.sparsity is not None and stage == len(self.plan) - 1
        if masked:
            self.params = self.kept.clone()
        if self.sparsity is not None:
            self.sparsity.begin_stage(self.params, frozen=masked)
        alpha = self.device_alphas[:, column].contiguous()
        adam = _Adam(self.params.tensors(), config.weight_decay)
        problem_best = _problem_best(self.kept_loss, self.starts, self.archive)
        checkpoints = _checkpoints(n_epochs, stage, self.race)
        self._report(stage, 0, column, torch.full((len(alpha),), math.nan), problem_best)
        for epoch in range(1, n_epochs + 1):
            batch, parts = self.epoch_rows.next(self.chunks, self.params.weights.shape[0], self.N)
            soft, grads = _soft_pass(self.params, alpha, batch, parts, self.starts, config.l1, self.workspaces)
            adam.step(self.params.tensors(), grads.tensors(), _learning_rate(config.learning_rate, epoch, n_epochs))
            if self.sparsity is not None:
                self.sparsity.after_step(self.params, stage, epoch, n_epochs)
            at_checkpoint = epoch in checkpoints
            if at_checkpoint:
                problem_best = self._checkpoint(masked)
            if at_checkpoint or self.reporter.due():
                self._report(stage, epoch, column, soft, problem_best)
            if at_checkpoint and self.race is not None and self._cut(stage * n_epochs + epoch, adam):
                alpha = self.device_alphas[:, column].contiguous()
            if self.reporter.cancelled or (self.race is not None and self.race.out_of_time(stage * n_epochs + epoch)):
                return True
        return False

    def _checkpoint(self, masked: bool) -> torch.Tensor:
        """Score the current splits (and their top-k projection), keep each start's best; returns each problem's
        best hard loss so far."""
        fit, self.hard = self.evaluate(self.params)
        self.accuracy = fit.accuracy
        if masked:
            _keep_best(self.kept, self.kept_loss, self.params, fit, self.hard, self.problems.class_loss)
        else:
            _keep_best(self.best, self.best_loss, self.params, fit, self.hard, self.problems.class_loss)
        if self.sparsity is not None and not masked:
            _keep_best(self.kept, self.kept_loss, *_projected(self.sparsity, self.params, self.evaluate),
                       self.problems.class_loss)
        return _problem_best(self.kept_loss, self.starts, self.archive)

    def _report(self, stage: int, epoch: int, column: int, soft: torch.Tensor, problem_best: torch.Tensor) -> None:
        self.reporter.report(stage, len(self.plan), epoch, self.config.n_epochs, self.alphas[:, column], soft,
                             self.hard, problem_best, self.starts, *_race_view(self.race), accuracy=self.accuracy)

    def _cut(self, position: int, adam: _Adam) -> bool:
        """The race's rung at ``position``: every per-model state narrowed to the models it keeps (in place for the
        optimizer and the sparsifier; ``kept`` stays the same object as ``best`` when it was), the dropped starts'
        best trees kept in ``archive``. False when no rung is due or it drops nothing."""
        keep = self.race.survivors(position, self.kept_loss, self.starts)
        if keep is None:
            return False
        self.archive = _merged(_per_problem_best(self.kept, self.kept_loss, self.starts), self.archive)
        same = self.kept is self.best
        self.params, self.best, self.best_loss = _take(self.params, keep), _take(self.best, keep), self.best_loss[keep]
        self.kept, self.kept_loss = ((self.best, self.best_loss) if same else
                                     (_take(self.kept, keep), self.kept_loss[keep]))
        adam.m, adam.v = [m[keep] for m in adam.m], [v[keep] for v in adam.v]
        if self.sparsity is not None:
            self.sparsity.keep(keep)
        self.alphas, self.device_alphas, self.hard = self.alphas[keep.cpu()], self.device_alphas[keep], self.hard[keep]
        self.accuracy = None if self.accuracy is None else self.accuracy[keep]
        self.starts, self.workspaces = len(keep) // self.problems.n_problems, {}
        self.chunks = self.problems.chunks(len(keep), self.N)
        return True


def _checkpoints(n_epochs: int, stage: int, race: Race | None) -> set[int]:
    """The epochs of ``stage`` that check the hard loss: ``CHECKPOINTS_PER_STAGE`` spread evenly, and the race's
    rungs that fall in the stage. Why the rungs too: a rung waiting for the next even checkpoint lets all the starts
    overspend their share (abalone, depth 8, 60 s, 2,773 epochs per stage: the rungs at epochs 44 and 131 both
    waited for epoch 139, so 128 starts ran 3x their share and the rung had to drop 8x to keep to the deadline).
    A race's plan may check fewer times per stage (``race.plan``: when its smallest race would overrun)."""
    count = CHECKPOINTS_PER_STAGE if race is None else race.plan.checkpoints_per_stage
    even = np.linspace(n_epochs / count, n_epochs, count).round().astype(int)
    rungs = [] if race is None else [math.ceil(r - stage * n_epochs) for r in race.plan.rungs()]
    return set(even.tolist()) | {r for r in rungs if 0 < r <= n_epochs}


def _race_view(race: Race | None) -> tuple[torch.Tensor | None, int | None]:
    """What progress shows of a race: the alive starts' numbers and how many it began with."""
    return (None, None) if race is None else (race.ids, race.n_starts)


def _problem_best(kept_loss: torch.Tensor, starts: int, archive: StageResult | None) -> torch.Tensor:
    """(B,) each problem's best hard loss so far, the starts a race dropped included."""
    value = kept_loss.view(-1, starts).min(dim=1).values
    return value if archive is None else torch.minimum(value, archive.best_loss)


def _merged(result: StageResult, archive: StageResult | None) -> StageResult:
    """Per problem, the better of ``result`` and ``archive`` (ties: ``result``)."""
    if archive is None:
        return result
    older = archive.best_loss < result.best_loss
    trees = (None if a is None else torch.where(older.view(-1, *[1] * (a.dim() - 1)), b, a)
             for a, b in zip((result.best.weights, result.best.thresholds, result.best.intercepts, result.best.coefs),
                             (archive.best.weights, archive.best.thresholds, archive.best.intercepts,
                              archive.best.coefs)))
    return StageResult(Params(*trees), torch.where(older, archive.best_loss, result.best_loss))


def _take(params: Params, keep: torch.Tensor) -> Params:
    return Params(*(None if t is None else t[keep] for t in (params.weights, params.thresholds, params.intercepts,
                                                             params.coefs)))


def _timed(params: Params, problems: Problems, alphas: torch.Tensor, config: GETConfig, starts: int,
           seconds: float, max_calls: int) -> tuple[float, float]:
    """The fastest seconds per hard evaluation and per epoch (soft pass and Adam step) of these models, timed after
    one untimed call (up to ``max_calls`` within ``seconds``, one when it takes longer); ``params`` is not modified.
    Why the fastest: a plan that proves too slow is corrected at the race's rungs (more starts dropped), one that
    proves too cautious is not (dropped starts do not come back). Why one long call: on 300,000 x 19 at depth 4 the
    probes took 2.2 s of a 10-s budget (each evaluation scores every row, 8 of them), and a long call's time varies
    little. The evaluation's untimed call runs on ``WARM_ROWS`` rows only (it loads the router and allocates; on
    1,000,000 rows of 50 classes a full one cost 1.5 s, in a probe that makes four)."""
    params = params.clone()
    depth = (params.weights.shape[1] + 1).bit_length() - 1
    chunks, workspaces = problems.chunks(params.weights.shape[0], params.weights.shape[1]), {}
    linear = config.linear_leaves if params.coefs is not None and not problems.classes else None
    alpha, adam = alphas[:, 0].to(problems.X.device, problems.X.dtype).contiguous(), _Adam(params.tensors())

    def evaluate() -> None:
        _hard_evaluate(params, problems, chunks, depth, starts, linear, config.clip_leaves and linear is not None)

    epoch_rows = _SoftRows(problems, config.batch_rows, 0)  # a large table's epochs use a row sample

    def step() -> None:
        batch, parts = epoch_rows.next(chunks, len(alpha), params.weights.shape[1])
        _, grads = _soft_pass(params, alpha, batch, parts, starts, config.l1, workspaces)
        adam.step(params.tensors(), grads.tensors(), config.learning_rate)

    def warm_evaluate() -> None:
        first = _first_rows(problems, WARM_ROWS)
        _hard_evaluate(params, first, first.chunks(*params.weights.shape[:2]), depth, starts, linear,
                       config.clip_leaves and linear is not None)

    fastest = []
    for warm, call in ((warm_evaluate, evaluate), (step, step)):
        warm()
        times, begin = [], now()
        while not times or (now() - begin < seconds and len(times) < max_calls):
            clock = now()
            call()
            times.append(now() - clock)
        fastest.append(min(times))  # a shared machine only adds time; a race that runs slow drops more starts
    return fastest[0], fastest[1]


#: Rows of the probe's untimed evaluation (``_timed``).
WARM_ROWS = 4096


def _first_rows(problems: Problems, rows: int) -> Problems:
    """The first ``rows`` rows of each problem (all of them when it has fewer)."""
    if rows >= problems.Xa.shape[1]:
        return problems
    return Problems(problems.Xa[:, :rows], problems.Xat[:, :, :rows].contiguous(), problems.y[:, :rows],
                    problems.w[:, :rows], problems.n_rows.clamp(max=rows), problems.class_loss, problems.weighted)


def probe_costs(problems: Problems, params: Params, alphas: torch.Tensor, config: GETConfig, starts: int,
                seconds: float = 0.05, max_calls: int = 10) -> Costs:
    """The race's ``Costs`` on this data at ``starts`` per problem (``params``, ``alphas``: that many), and at one."""
    one = _take(params, torch.arange(0, params.weights.shape[0], starts))
    eval_one, epoch_one = _timed(one, problems, alphas[::starts], config, 1, seconds, max_calls)
    eval_all, epoch_all = _timed(params, problems, alphas, config, starts, seconds, max_calls)
    return Costs(((1, epoch_one), (starts, epoch_all)), ((1, eval_one), (starts, eval_all)))


#: Random trees per problem of the first probe; a second one times the plan's start count when it is larger.
PROBE_MODELS = 8


def budgeted(problems: Problems, config: GETConfig, depth: int, seconds: float, gen: torch.Generator,
             decisions: Plan, epochs_more_starts: int = MIN_EPOCHS_MORE_STARTS, most_starts: int | None = None,
             ) -> tuple[GETConfig, RacePlan, Costs | None]:
    """The config (starts and epochs), race plan and measured costs that fill ``seconds`` on these problems. Probes of
    random trees (from a generator seeded by one draw of ``gen``) time ``PROBE_MODELS`` and one start per problem,
    then the planned start count (or the most of ``race.LADDER`` that ``PROBE_SHARE`` of the budget can time), and
    the plan is made again from all three (``race.plan``, more starts while each gets ``epochs_more_starts``, at most
    ``most_starts``: what the fit's memory allows, ``memory.max_starts``). The
    starts and epochs are ``decisions``' "race" answer: when it replays a recorded plan, no probe runs (and the
    costs are None)."""
    probe_gen = torch.Generator().manual_seed(int(torch.randint(0, 2 ** 31 - 1, (1,), generator=gen)))
    sparse = Sparsifier.of(config.max_split_features, problems.X, problems.w, 1, problems.groups) is not None
    n_stages = config.n_alphas + int(sparse)  # one stage more, and each checkpoint also scores the top-k projection
    measured: list[Costs] = []

    def probed() -> list[int]:
        costs, race_plan = _probed(problems, config, depth, seconds, probe_gen, n_stages, sparse, epochs_more_starts,
                                   most_starts)
        measured.append(costs)
        return [race_plan.n_starts, race_plan.n_epochs, race_plan.checkpoints_per_stage]

    starts, epochs, checkpoints = decisions.answer("race", probed, lambda v: (
        isinstance(v, list) and len(v) == 3 and v[0] in LADDER and all(isinstance(x, int) for x in v[1:])
        and MIN_EPOCHS <= v[1] <= MAX_EPOCHS and MIN_CHECKPOINTS <= v[2] <= CHECKPOINTS_PER_STAGE))
    race_plan = RacePlan(starts, epochs, n_stages, checkpoints)
    return replace(config, n_starts=starts, n_epochs=epochs), race_plan, measured[0] if measured else None


def _probed(problems: Problems, config: GETConfig, depth: int, seconds: float, probe_gen: torch.Generator,
            n_stages: int, sparse: bool, epochs_more_starts: int, most_starts: int | None = None
            ) -> tuple[Costs, RacePlan]:
    """``budgeted``'s probes, timed: the costs they measured and the race that fills ``seconds`` at them."""
    clock = now()

    def probe(starts: int) -> Costs:
        settings = replace(config, n_starts=starts)
        params = initial_params(problems, None, settings, depth, probe_gen)
        measured = probe_costs(problems, params, alpha_schedule(params.weights.shape[0], settings, probe_gen),
                               config, starts)
        return replace(measured, evaluation=tuple((s, 2 * t) for s, t in measured.evaluation)) if sparse else measured

    def planned(costs: Costs) -> RacePlan:
        return plan(seconds - (now() - clock), costs, n_stages, CHECKPOINTS_PER_STAGE, epochs_more_starts,
                    most_starts)

    costs = probe(PROBE_MODELS)
    race_plan = planned(costs)
    affordable = [s for s in LADDER if PROBE_MODELS < s <= race_plan.n_starts
                  and 8 * costs.seconds(1, 1, s) <= PROBE_SHARE * seconds]
    if affordable:
        costs = costs.merged(probe(affordable[-1]))
        race_plan = planned(costs)
    return costs, race_plan


class _SoftRows:
    """The rows of each soft epoch: every row (``chunks`` as given), or on a large table a fresh sample
    (``config.soft_rows``) drawn by a generator seeded with ``random_state``, in chunks of its own."""

    def __init__(self, problems: Problems, batch_rows: int | None, random_state: int | None):
        self.problems = problems
        self.rows = soft_rows(batch_rows, int(problems.n_rows.max()))
        self.sampler = None if self.rows is None else _seeded(random_state, problems.X.device)

    def next(self, chunks: list[Problems], n_models: int, n_nodes: int) -> tuple[Problems, list[Problems]]:
        if self.rows is None:
            return self.problems, chunks
        batch = self.problems.sample(self.rows, self.sampler)
        return batch, batch.chunks(n_models, n_nodes)


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


def initial_params(problems: Problems, subsets: Sequence[tuple[np.ndarray, ...]] | None, config: GETConfig,
                   depth: int, gen: torch.Generator, warm: Params | None = None) -> Params:
    """Start trees for every problem: [warm start,] CART (not without ``subsets``), then random hyperplanes; (B*S)
    models on the device."""
    S = config.n_starts
    X_cpu = problems.X.cpu()
    groups = None if problems.groups is None else problems.groups.cpu().numpy()
    weights, thresholds = random_splits(X_cpu, problems.n_rows, S, depth, gen, groups)
    fixed = 0
    if warm is not None:
        weights[::S], thresholds[::S] = warm.weights.cpu(), warm.thresholds.cpu()
        fixed = 1
    if S > fixed and subsets is not None:
        seed = int(torch.randint(0, 2 ** 31 - 1, (1,), generator=gen))
        for b, (xb, yb, *wb) in enumerate(subsets):
            w_c, t_c = cart_splits(xb, yb, depth, seed, wb[0] if wb else None, groups)
            weights[b * S + fixed] = torch.as_tensor(w_c, dtype=weights.dtype)
            thresholds[b * S + fixed] = torch.as_tensor(t_c, dtype=thresholds.dtype)
    M, L, p = weights.shape[0], 2 ** depth, weights.shape[2]
    device = problems.X.device
    coefs = torch.zeros(M, L, p, dtype=weights.dtype, device=device) if config.leaf == "linear" else None
    values = torch.zeros(M, L, *problems.y.shape[2:], dtype=weights.dtype, device=device)  # (M, L, C) for classes
    if problems.class_loss == LOGISTIC:
        coefs = torch.zeros(M, L, problems.y.shape[2], p, dtype=weights.dtype, device=device)
    return Params(weights.to(device), thresholds.to(device), values, coefs)
