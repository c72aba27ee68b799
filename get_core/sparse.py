"""k-sparse splits (``max_split_features=k``): every hyperplane keeps at most k non-zero weights, exactly.

How the engine uses it (``optimize.run_stages``): support from the dense solution, then a masked fine-tune.
- The alpha stages run as for dense trees (each start warm-started from its best dense tree), and every hard-loss
  checkpoint (the initial trees too) also scores the top-k projection of the current splits: per node, the k largest
  |weights| in scaled units (features in [0, 1], so magnitudes compare), the rest set to exactly 0.0. Each start
  keeps its best projected tree by hard training loss, so the CART start (1-sparse) is always a candidate.
- One more stage at the last alpha fine-tunes each start's best k-sparse tree with its support frozen: after every
  Adam step the weights outside the support are set back to 0.0; its checkpoints update the same k-sparse best.
Only k-sparse trees are ever returned. Cost: one stage more than a dense fit. Measured against pruning inside the
stages (gradual or immediate iterative hard thresholding), which fixed the support too early and missed planted
supports the dense solution finds: bench.studies.sparse_splits and the report of issue 20.
Projecting moves each threshold by the removed terms at the data's mean row (``prune``), so the hyperplane keeps its
place at the data's centre instead of jumping.
"""

from __future__ import annotations

import torch

from get_core.soft import Params


def top_k_mask(weights: torch.Tensor, k: int) -> torch.Tensor:
    """(M, N, p) bool: per node, the (at most) k largest |weights| that are non-zero; exactly k ties broken by topk."""
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

    def __init__(self, k: int, centers: torch.Tensor):
        self.k = k
        self.centers = centers  # (M, p) mean row of each model's problem
        self.support: torch.Tensor | None = None  # (M, N, p) the masked stage's frozen support

    @classmethod
    def of(cls, k: int | None, X: torch.Tensor, w: torch.Tensor, starts: int) -> "Sparsifier | None":
        """None when splits stay dense (no k, or k >= p); X (B, n, p), w (B, n) the problems' rows and weights."""
        if k is None or k >= X.shape[2]:
            return None
        return cls(k, (w.unsqueeze(2) * X).sum(dim=1).repeat_interleave(starts, dim=0))

    def scored(self, params: Params) -> Params:
        """A copy of ``params`` with every split cut to its k largest terms (what a checkpoint scores)."""
        copy = Params(params.weights.clone(), params.thresholds.clone(), params.intercepts, params.coefs)
        prune(copy, top_k_mask(copy.weights, self.k), self.centers)
        return copy

    def freeze(self, params: Params) -> None:
        """Fix the support to the non-zero weights of ``params`` (k-sparse trees) for the masked stage."""
        self.support = top_k_mask(params.weights, self.k)

    def mask(self, params: Params) -> None:
        """Set the weights outside the frozen support back to 0.0 (after each step of the masked stage)."""
        params.weights.masked_fill_(~self.support, 0.0)
