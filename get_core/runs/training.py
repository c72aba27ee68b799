"""A run's training body, free of any store: the same function trains a run in a local worker process and on a
Dask worker that cannot see the SQLite file.

``train_run(dataset, params, channel)`` takes the run's inputs (the table as Parquet bytes, its JSON parameters) and
a ``Channel`` that carries everything out: progress and metric points (returning whether to stop), JSON artifacts,
the cancel flag. The local worker's channel writes to the store as results arrive (``worker.StoreChannel``); the Dask
channel sends progress over Dask and returns the artifacts as the task's result (``remote.RemoteChannel``).

Steps: split the usable rows train/test with the run's seed, encode them with ``get_core.encoding.prepare`` (fill
values and category levels learned from the training rows only), train GET, fit the baselines of issue 5 (CART of
the same depth and a random forest, ``get_core.compare.fit_baselines``). Artifacts ``encoding``, ``split``,
``model``, ``predictions``, ``baselines`` (or ``baselines_error``).
"""

from __future__ import annotations

import math
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np

from get_core.config import GETConfig
from get_core.runs.records import MetricPoint, RunFinishedError, RunStatus, StoreError

if TYPE_CHECKING:
    from get_core.runs.store import RunStore

BASELINES_SKIPPED = ("Cancelled by request while fitting the baselines: the trained tree and its test scores are kept; "
                     "the baseline comparison was skipped.")


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


def train_run(dataset: bytes, params: Mapping[str, Any], channel: Channel, share: float = 1.0) -> Ending:
    """Train one run from its inputs to its ending; every result goes through ``channel``. Training fills ``share``
    of the progress bar and the baselines the rest, so the bar never reads 100% while they still run."""
    from get_core import model_file
    from get_core.data import from_parquet_bytes
    from get_core.encoding import DataSpec, prepare, usable_rows
    from get_core.train import MinMax, train  # torch: only the training path loads it

    seed = int(params.get("seed", 0))
    df, spec = from_parquet_bytes(dataset), DataSpec.from_dict(params["data"])
    n_rows = len(usable_rows(df, spec))
    train_idx, test_idx = split_rows(n_rows, float(params.get("test_fraction", 0.25)), seed)
    prepared = prepare(df, spec, fit_rows=train_idx)  # fill values and category levels from training rows only
    channel.put_json("encoding", prepared.encoding.to_dict())
    channel.put_json("split", {"seed": seed, "train": train_idx.tolist(), "test": test_idx.tolist(),
                               "row_ids": prepared.row_ids.tolist()})
    config = GETConfig(**{**params["config"], "random_state": seed})
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    # the trainer's y scale: the loss curves show RMSE in the target's units (views.curves)
    channel.put_json("target_scale", {"y_scale": MinMax.fit(X_train, y_train).y_scale})
    reached = [0.0]  # the last progress fraction reported, for the cancel message

    def on_progress(progress: Any) -> bool:
        reached[0] = progress.fraction * share
        metrics = [MetricPoint(progress.phase, r.start, progress.stage, progress.epoch,
                               progress.stage * progress.n_epochs + progress.epoch, r.alpha, r.soft_loss,
                               r.hard_loss) for r in progress.records]
        stop = channel.report(progress=reached[0], phase=progress.phase, stage=progress.stage,
                              n_stages=progress.n_stages, epoch=progress.epoch, n_epochs=progress.n_epochs,
                              best_hard_r2=progress.best_hard_r2, metrics=metrics)
        return stop or channel.cancelled()

    tree = train(X_train, y_train, config, on_progress=on_progress, feature_names=prepared.feature_names)
    if channel.ended_elsewhere():
        raise RunFinishedError("The run was ended while training.")
    channel.put_json("model", model_file.to_dict(tree))
    channel.on_stop(Ending(RunStatus.CANCELLED, "Cancelled by request; the best tree found so far is kept."))
    y_pred = tree.predict(X_test)
    scores = regression_scores(y_test, y_pred)
    channel.put_json("predictions", {"test": test_idx.tolist(), "y_true": y_test.tolist(),
                                     "y_pred": y_pred.tolist()})
    if tree.meta.get("cancelled") or channel.cancelled():
        return Ending(RunStatus.CANCELLED, f"Cancelled by request at {100 * reached[0]:.0f}%; the best tree found "
                      "so far is kept.", scores)
    channel.on_stop(Ending(RunStatus.CANCELLED, BASELINES_SKIPPED, scores))
    ran = GETConfig(**tree.meta["config"])  # with a time budget, the starts and epochs the race chose
    _fit_baselines(channel, X_train, y_train, X_test, y_test, ran, prepared.feature_names, share)
    if channel.cancelled():
        return Ending(RunStatus.CANCELLED, "Cancelled by request while fitting the baselines, which finished first: "
                      "the trained tree, its test scores and the baseline comparison are kept.", scores)
    return Ending(RunStatus.FINISHED, scores=scores)


def _fit_baselines(channel: Channel, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                   y_test: np.ndarray, config: GETConfig, feature_names: list[str], share: float) -> None:
    """CART and random forest on the same split (issue 5); a failing baseline never fails the run."""
    from get_core.compare import fit_baselines  # scikit-learn: kept out of the supervisor, which imports this module

    # Training is complete: its last stage and epoch, so the loss curves keep their stage lines (n_stages, n_epochs).
    channel.report(progress=share, phase="baselines", stage=config.n_alphas - 1, n_stages=config.n_alphas,
                   epoch=config.n_epochs, n_epochs=config.n_epochs)
    try:
        result = fit_baselines(X_train, y_train, X_test, y_test, config.depth, config.random_state,
                               feature_names=feature_names)
    except Exception as exc:
        traceback.print_exc()
        channel.put_json("baselines_error", {"error": describe(exc)})
        return
    channel.put_json("baselines", result)


def split_rows(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row positions: a seeded permutation, ``round(n * test_fraction)`` rows (>= 1) to test."""
    n_test = min(n - 2, max(1, int(round(n * test_fraction))))
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def regression_scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float | None, float | None]:
    """(R2, RMSE) in the target's units; R2 is None when the test target is constant or has < 2 rows."""
    if len(y_true) == 0:
        return None, None
    residual = float(np.sum((y_true - y_pred) ** 2))
    total = float(np.sum((y_true - y_true.mean()) ** 2))
    rmse = math.sqrt(residual / len(y_true))
    return (1.0 - residual / total if len(y_true) > 1 and total > 0 else None), rmse


def describe(exc: BaseException) -> str:
    """A run's failure as one sentence for its page."""
    from get_core.data import DataError

    if isinstance(exc, (DataError, StoreError)):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "Out of memory: use fewer rows, starts or a smaller depth."
    return f"The worker failed: {type(exc).__name__}: {exc}. The full traceback is kept as the run's 'traceback'."
