"""What a run's training body hands its results to: the ``Channel`` (progress, artifacts, the cancel flag) and the
``Ending`` it returns. Apart from ``training`` so that ``search`` can use them without importing the body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from get_core.runs.records import MetricPoint, RunStatus

if TYPE_CHECKING:
    from get_core.runs.store import RunStore


@dataclass(frozen=True)
class Ending:
    """How a run ends: its final status, why, and its test scores (R2, RMSE) once they are known."""

    status: RunStatus
    error: str | None = None
    scores: tuple[float | None, float | None] = (None, None)

    def write(self, store: RunStore, run_id: int) -> RunStatus:
        r2, rmse = self.scores
        return store.set_status(run_id, self.status, error=self.error, test_r2=r2, test_rmse=rmse).status


class Channel(Protocol):
    """Where a run's results go and where its cancel flag comes from."""

    def report(self, *, progress: float, phase: str | None = None, stage: int | None = None,
               n_stages: int | None = None, epoch: int | None = None, n_epochs: int | None = None,
               best_hard_r2: float | None = None, metrics: Sequence[MetricPoint] = ()) -> bool:
        """Record progress fields and metric points; True when the run should stop (cancelled or ended)."""

    def put_json(self, name: str, value: Any) -> None:
        """Keep a JSON artifact of the run."""

    def cancelled(self) -> bool:
        """Whether cancellation was requested."""

    def ended_elsewhere(self) -> bool:
        """Whether someone else ended the run (stale, deleted): its results must not be written."""

    def on_stop(self, ending: Ending) -> None:
        """What a forced stop after a cancel request should record from now on (the best results so far)."""
