"""What the run store hands out: the run lifecycle, frozen records and the errors its calls raise.

Plain values with no database behind them, so pages and the worker can hold, compare and show them freely; the
contract for who may change them is in ``get_core.runs.store``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from get_core.errors import GETExplorerError


class RunStatus(str, Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    def is_finished(self) -> bool:
        return self in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED)

    def can_become(self, status: "RunStatus") -> bool:
        """QUEUED -> RUNNING | CANCELLED | FAILED and RUNNING -> FINISHED | FAILED | CANCELLED; nothing else."""
        return status in _TRANSITIONS.get(self.value, ())


_TRANSITIONS = {"QUEUED": ("RUNNING", "CANCELLED", "FAILED"), "RUNNING": ("FINISHED", "FAILED", "CANCELLED")}


class StoreError(GETExplorerError):
    """A store call that cannot be honoured; the message is fit to show to a user."""


class StoreUnavailable(StoreError):
    """The run database cannot be used as it is (a wrong path, a damaged, foreign or read-only file); the message
    names the file, says what is wrong and what to do. Nothing in that file has been changed."""


class StoreReplaced(StoreUnavailable):
    """The database file this store opened was deleted or replaced while it was open: its runs are gone from the
    path. The store refuses to go on (it never starts a fresh empty file where the runs were)."""


class RunNotFound(StoreError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class RunFinishedError(StoreError):
    """A write to a run that has already finished (finished runs are immutable)."""


class InvalidTransition(StoreError):
    pass


@dataclass(frozen=True)
class Run:
    run_id: int
    name: str
    status: RunStatus
    params: Mapping[str, Any]  # read-only view of the JSON parameters given at creation
    dataset_name: str
    dataset_fingerprint: str
    n_rows: int
    n_features: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    heartbeat_at: float | None
    worker_pid: int | None
    cancel_requested: bool
    progress: float  # 0..1 of the whole fit
    phase: str | None
    stage: int | None
    n_stages: int | None
    epoch: int | None
    n_epochs: int | None
    best_hard_r2: float | None  # best training R2 (hard routing) so far
    test_r2: float | None
    test_rmse: float | None
    error: str | None  # why a run failed or was cancelled
    owner: str = "local"  # whose run it is (get_core.runs.access): the local user, a signed-in user, a workspace

    def duration(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)

    def eta_seconds(self, now: float | None = None) -> float | None:
        """Remaining time. With the whole-run estimate the Train page stored when the run was started
        (``params["estimated_seconds"]``: search, refit, polish, counterpart and baselines, ``runs.estimate``), that
        estimate less the time spent, so the figure shrinks through every phase; once past it, or without one, a
        budgeted run's GET budget less the time spent while training, else an extrapolation from the progress so
        far. None before the first progress report, and while the baselines are fitted past the estimate: the
        forest reports no progress, so an extrapolation from the standing bar grew while the run was nearly done
        (issue 35)."""
        elapsed = self.duration(now)
        if self.status is not RunStatus.RUNNING or elapsed is None or not 0.01 <= self.progress < 1:
            return None
        estimated = self.params.get("estimated_seconds")
        if isinstance(estimated, (int, float)) and elapsed < float(estimated):
            return float(estimated) - elapsed
        if self.phase == "baselines":
            return None
        budget = (self.params.get("config") or {}).get("time_budget")
        if budget is not None:
            return float(budget) - elapsed if elapsed < float(budget) else None
        return elapsed * (1 - self.progress) / self.progress

    @property
    def percent(self) -> int:
        """The run's progress as the whole percent every page shows (the panel's text and the Runs table alike)."""
        return int(round(100 * min(1.0, max(0.0, self.progress))))


@dataclass(frozen=True)
class MetricPoint:
    phase: str
    start: int
    stage: int
    epoch: int
    step: int  # position on a run-wide epoch axis: stage * n_epochs + epoch
    alpha: float
    soft_loss: float | None
    hard_loss: float | None
    hard_accuracy: float | None = None  # a class run's training accuracy of the hard-split tree; None: regression


@dataclass(frozen=True)
class Artifact:
    name: str
    media_type: str
    data: bytes
    created_at: float

    def json(self) -> Any:
        return json.loads(self.data.decode("utf-8"))
