"""k-sparse splits (``max_split_features=k``): every hyperplane keeps at most k non-zero weights, exactly.

How the engine uses it (``optimize.run_stages``), for each start:
1. The first alpha stage (the soft one) runs dense, as for a dense tree: it finds the support.
2. Each later stage prunes as it goes: after every Adam step each node keeps its ``kept_features`` largest
   |weights| (scaled units: features in [0, 1], so magnitudes compare), a count that falls from p to k over the
   first ``PRUNE_FRACTION`` of the stage (cubic, as gradual magnitude pruning) and then stays k; the rest are set
   to exactly 0.0. The support may still move while the other weights and the thresholds adapt.
3. One more stage at the last alpha fine-tunes the start's best k-sparse tree with its support frozen (a mask).
Every hard-loss checkpoint (the initial trees too) scores the top-k projection of the current splits, and each start
keeps its best projected tree by hard training loss: only k-sparse trees are ever returned, and the CART start
(1-sparse) is always a candidate, so the result is never worse on the training rows than CART. Cost: one stage
more than a dense fit. Why this order (the report of issue 20, ``bench.studies.sparse_splits``): pruning from the
first stage on (at once or gradually) fixed the support before the soft stage had found it and missed planted
supports the dense solution holds; projecting the dense solution only once, before the masked stage, recovered
them but lost 4-6 points of R2 on data with no sparse structure (electrical_grid_stability, constant leaves).
Pruning moves each threshold by the removed terms at the data's mean row (``prune``), so a hyperplane keeps its
place at the data's centre instead of jumping. After the stages, ``node_refit`` refits each node's split with the
rest of the tree fixed (``train.train``), again never raising the hard training loss.

With ``groups`` (engine column -> raw column, ``get_core.model.inputs``: a category column's levels, a number and its
"if missing" column) k counts groups: a split keeps the k groups of largest weight norm, each whole, so a category
column is one term with one weight per category.
"""

from __future__ import annotations

import math

import torch

from get_core.engine.soft import Params

#: Share of a pruning stage over which the kept count falls from p to k.
PRUNE_FRACTION = 0.5


def kept_features(p: int, k: int, epoch: int, n_epochs: int) -> int:
    """Features a split may keep after ``epoch`` of a pruning stage: p falling cubically to k by ``PRUNE_FRACTION``."""
    end = PRUNE_FRACTION * n_epochs
    if epoch >= end:
        return k
    return k + math.ceil((p - k) * (1.0 - epoch / end) ** 3)


def top_k_mask(weights: torch.Tensor, k: int, groups: torch.Tensor | None = None) -> torch.Tensor:
    """(M, N, p) bool: per node, the (at most) k largest |weights| that are non-zero; exactly k ties broken by topk.
    With ``groups`` (p,) the k groups of largest weight norm, whole (their non-zero weights)."""
    if groups is not None:
        n_groups = int(groups.max()) + 1
        if k >= n_groups:
            return weights != 0
        members = torch.nn.functional.one_hot(groups, n_groups).to(weights.dtype)  # (p, G)
        norms = weights.square() @ members  # (M, N, G); a matmul, not index_add_: repeatable on CUDA
        chosen = torch.zeros_like(norms, dtype=torch.bool)
        chosen.scatter_(2, norms.topk(k, dim=2).indices, True)
        return chosen[:, :, groups] & (weights != 0)
    if k >= weights.shape[2]:
        return weights != 0
    mask = torch.zeros_like(weights, dtype=torch.bool)
    mask.scatter_(2, weights.abs().topk(k, dim=2).indices, True)
    return mask & (weights != 0)


def prune(params: Params, mask: torch.Tensor, centers: torch.Tensor) -> None:
    """Zero the weights outside ``mask`` in place; each threshold moves by the removed terms at ``centers`` (M, p),
    so a·c - b is unchanged there."""
    removed = params.weights * ~mask  # (M, N, p)
    params.thresholds.sub_(torch.einsum("mnp,mp->mn", removed, centers))
    params.weights.masked_fill_(~mask, 0.0)  # +0.0, never -0.0


class Sparsifier:
    """The k-sparse rules of one ``run_stages`` call for M = B x ``starts`` models (see the module docstring)."""

    def __init__(self, k: int, centers: torch.Tensor, groups: torch.Tensor | None = None):
        self.k = k
        self.centers = centers  # (M, p) mean row of each model's problem
        self.groups = groups  # (p,) engine column -> group, None: each column its own
        self.n_terms = centers.shape[1] if groups is None else int(groups.max()) + 1
        self.support: torch.Tensor | None = None  # (M, N, p) the frozen support of the last stage

    @classmethod
    def of(cls, k: int | None, X: torch.Tensor, w: torch.Tensor, starts: int,
           groups: torch.Tensor | None = None) -> "Sparsifier | None":
        """None when splits stay dense (no k, or k >= p, or k >= the groups); X (B, n, p), w (B, n) the problems'
        rows and weights; ``groups`` (p,) as ``top_k_mask``."""
        if k is None or k >= (X.shape[2] if groups is None else int(groups.max()) + 1):
            return None
        return cls(k, (w.unsqueeze(2) * X).sum(dim=1).repeat_interleave(starts, dim=0), groups)

    def scored(self, params: Params) -> Params:
        """A copy of ``params`` with every split cut to its k largest terms (what a checkpoint scores)."""
        copy = Params(params.weights.clone(), params.thresholds.clone(), params.intercepts, params.coefs)
        prune(copy, top_k_mask(copy.weights, self.k, self.groups), self.centers)
        return copy

    def keep(self, models: torch.Tensor) -> None:
        """Narrow to ``models`` (indices), the starts a race keeps (``race``)."""
        self.centers = self.centers[models]
        self.support = None if self.support is None else self.support[models]

    def begin_stage(self, params: Params, frozen: bool) -> None:
        """``frozen``: the stage fine-tunes on the support ``params`` (k-sparse trees) have; else it may move."""
        self.support = top_k_mask(params.weights, self.k, self.groups) if frozen else None

    def after_step(self, params: Params, stage: int, epoch: int, n_epochs: int) -> None:
        """Prune ``params`` in place after an Adam step: to the frozen support, or to this epoch's kept count
        (nothing in the first stage)."""
        if self.support is not None:
            params.weights.masked_fill_(~self.support, 0.0)
        elif stage > 0:
            keep = kept_features(self.n_terms, self.k, epoch, n_epochs)
            prune(params, top_k_mask(params.weights, keep, self.groups), self.centers)
