"""Training progress: what ``train`` reports to its caller, how often, and how a cancellation comes back.

The callback receives a ``Progress`` at most every ``REPORT_INTERVAL`` seconds between checkpoints and may return
True to stop; the trainer knows nothing of who listens (a page, the run worker, a benchmark).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

#: Progress callbacks between checkpoints come at most this often (seconds): bounds the rate, keeps cancel prompt.
REPORT_INTERVAL = 0.5


@dataclass(frozen=True)
class StartRecord:
    start: int
    alpha: float
    soft_loss: float  # MSE on the min-max scaled target under soft routing
    hard_loss: float  # MSE on the scaled target of the hard-split tree at the last checkpoint
    hard_accuracy: float | None = None  # a classifier's: training accuracy of that tree; None for regression


@dataclass(frozen=True)
class Progress:
    phase: str  # "optimize" or "polish"
    stage: int
    n_stages: int
    epoch: int
    n_epochs: int
    fraction: float  # 0..1 of the whole fit
    records: tuple[StartRecord, ...]
    best_hard_loss: float
    best_hard_r2: float
    started: int | None = None  # racing (``race``): the starts the race began with; ``records`` are those alive
    best_hard_accuracy: float | None = None  # a classifier's: the highest hard training accuracy at a checkpoint so far


ProgressCallback = Callable[[Progress], "bool | None"]


class Reporter:
    """Rate-limits progress callbacks and remembers a cancellation request.

    With ``problem_weights`` (B,) (polish: one problem per subtree), per-start losses are combined over problems as
    the share of the training rows each covers, plus ``offset`` for the rows outside them: the whole tree's MSE.
    """

    def __init__(self, on_progress: ProgressCallback | None, y_var: float, phase: str = "optimize",
                 span: tuple[float, float] = (0.0, 1.0), problem_weights: torch.Tensor | None = None,
                 offset: float = 0.0):
        self.on_progress, self.y_var, self.phase, self.span = on_progress, max(y_var, 1e-300), phase, span
        self.problem_weights, self.offset = problem_weights, offset
        self.cancelled = False
        self._last = 0.0
        self.best_accuracy: float | None = None

    def due(self) -> bool:
        return self.on_progress is not None and time.monotonic() - self._last >= REPORT_INTERVAL

    def _per_start(self, values: torch.Tensor, starts: int) -> list[float]:
        if self.problem_weights is None:
            return values.tolist()
        per_problem = values.double().cpu().view(-1, starts) * self.problem_weights.view(-1, 1)
        return (per_problem.sum(dim=0) + self.offset).tolist()

    def report(self, stage: int, n_stages: int, epoch: int, n_epochs: int, alphas: torch.Tensor, soft: torch.Tensor,
               hard: torch.Tensor, best: torch.Tensor, starts: int, ids: torch.Tensor | None = None,
               started: int | None = None, accuracy: torch.Tensor | None = None) -> None:
        """In a race (``race``), ``ids`` are the alive starts' own numbers (else 0..starts-1) and ``started`` how
        many it began with. A classifier's ``accuracy`` (M,) at the latest checkpoint goes out per start and as the
        best so far; not in a polish, whose per-subtree accuracies are no whole tree's."""
        if self.on_progress is None:
            return
        done = (stage + epoch / max(1, n_epochs)) / n_stages
        fraction = self.span[0] + (self.span[1] - self.span[0]) * min(1.0, done)
        alpha = alphas.view(-1, starts)[0].tolist()
        numbers = range(starts) if ids is None else ids.tolist()
        per_start = ([None] * len(alpha) if accuracy is None or self.problem_weights is not None else
                     accuracy.view(-1, starts)[0].tolist())
        records = tuple(StartRecord(i, a, s, h, c) for i, a, s, h, c in zip(
            numbers, alpha, self._per_start(soft, starts), self._per_start(hard, starts), per_start))
        if per_start and per_start[0] is not None:
            self.best_accuracy = max(per_start + ([] if self.best_accuracy is None else [self.best_accuracy]))
        best_loss = float(best.min() if self.problem_weights is None else
                          (best.double().cpu() * self.problem_weights).sum() + self.offset)
        progress = Progress(self.phase, stage, n_stages, epoch, n_epochs, fraction, records, best_loss,
                            1.0 - best_loss / self.y_var, started, self.best_accuracy)
        self._last = time.monotonic()
        if self.on_progress(progress):
            self.cancelled = True
