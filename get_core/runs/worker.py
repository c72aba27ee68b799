"""The worker: ``python -m get_core.runs.worker RUN_ID`` trains one run in its own process.

It loads the run's parameters and dataset from the store (``GET_EXPLORER_DB``), splits the usable rows train/test
with the run's seed, encodes them with ``get_core.encoding.prepare`` (fill values and category levels learned from the
training rows only), trains GET, fits the baselines of issue 5 (CART of
the same depth and a random forest, ``get_core.compare.fit_baselines``), and writes everything back:
heartbeats, progress and metrics while training; artifacts ``encoding``, ``split``, ``model``, ``predictions``,
``baselines`` (and ``traceback`` on failure); finally the status with test R2 and RMSE.

Liveness and cancellation:
  * a heartbeat thread writes a heartbeat every ``HEARTBEAT_PERIOD_S`` and polls the cancel flag every
    ``CANCEL_POLL_S``, so a long epoch never looks stale and a cancel request is seen at once;
  * the trainer's progress callback (at most every 0.5 s, see ``get_core.progress.REPORT_INTERVAL``) writes progress
    and metrics and returns True once cancellation is requested; ``train`` then returns its best tree so far, which
    is evaluated and kept, and the run ends CANCELLED;
  * if the trainer (or the baseline fit) has not come back ``HARD_STOP_S`` after the request, the heartbeat thread
    ends the run CANCELLED itself with what the worker has so far (``Heartbeat.if_stopped``: the tree and, once
    known, its test scores), starts the next queued run and exits the process, so Cancel always takes effect within
    two seconds;
  * SIGTERM is treated as a cancel request;
  * a write refused because the run is no longer RUNNING (marked FAILED as stale) stops the worker quietly.
When it is done the worker asks the launcher to start the next queued run in the slot it frees.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from get_core.compare import fit_baselines
from get_core.config import GETConfig
from get_core.runs import estimate
from get_core.runs.results import load_results
from get_core.runs.store import (MetricPoint, Run, RunFinishedError, RunStatus, RunStore, StoreError,
                                 StoreUnavailable)

HEARTBEAT_PERIOD_S = 1.0
CANCEL_POLL_S = 0.2
HARD_STOP_S = 1.5
NO_MODEL = "Cancelled by request; the trainer had not reached a checkpoint, so no model is kept."
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


class Heartbeat(threading.Thread):
    """Beats, polls the cancel flag, and enforces the hard stop after a cancel request."""

    def __init__(self, store: RunStore, run_id: int, period: float = HEARTBEAT_PERIOD_S,
                 hard_stop: bool = True) -> None:
        super().__init__(name=f"heartbeat-{run_id}", daemon=True)
        self.store, self.run_id, self.period, self.hard_stop = store, run_id, period, hard_stop
        self.cancel = threading.Event()
        self.lost = threading.Event()  # the run was ended by someone else (stale, deleted)
        self.if_stopped = Ending(RunStatus.CANCELLED, NO_MODEL)  # the training thread updates it as results arrive
        self._halt = threading.Event()
        self._cancel_seen: float | None = None

    def request_cancel(self) -> None:
        self.cancel.set()

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5)

    def run(self) -> None:
        last_beat = 0.0
        while not self._halt.wait(CANCEL_POLL_S):
            try:
                if time.monotonic() - last_beat >= self.period:
                    if self.store.record_heartbeat(self.run_id):
                        self.cancel.set()
                    last_beat = time.monotonic()
                elif self.store.get_run(self.run_id).cancel_requested:
                    self.cancel.set()
            except StoreUnavailable as exc:  # the file's trouble (a lock held too long, a full disk): try again
                print(f"run {self.run_id}: heartbeat not written: {exc}", file=sys.stderr, flush=True)
            except StoreError:  # finished by someone else, or deleted
                self.lost.set()
                self.cancel.set()
                return
            if self.cancel.is_set():
                self._cancel_seen = self._cancel_seen or time.monotonic()
                late = time.monotonic() - self._cancel_seen > HARD_STOP_S
                if self.hard_stop and late and not self._halt.is_set():
                    self._hard_stop()

    def _hard_stop(self) -> None:
        try:
            self.if_stopped.write(self.store, self.run_id)
        except StoreError:
            pass
        print(f"run {self.run_id}: hard stop after cancel request", file=sys.stderr, flush=True)
        dispatch_next(self.store)  # os._exit skips main(), which would otherwise do it
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m get_core.runs.worker RUN_ID", file=sys.stderr)
        return 2
    try:
        store = RunStore()
        status = execute(store, int(args[0]))
    except StoreError as exc:  # no usable store (a wrong GET_EXPLORER_DB) or no such run: one line, no traceback
        print(f"run {args[0]}: {exc}", file=sys.stderr)
        return 1
    dispatch_next(store)
    return 0 if status in (RunStatus.FINISHED, RunStatus.CANCELLED) else 1


def dispatch_next(store: RunStore) -> None:
    """Start the next queued run in the slot this worker frees; a failure here is only logged, since the run itself
    has already ended and must not be reported as crashed."""
    try:
        from get_core.runs import launch

        launch.dispatch(store)
    except Exception:
        traceback.print_exc()


def execute(store: RunStore, run_id: int, *, hard_stop: bool = True) -> RunStatus:
    """Train run ``run_id`` (QUEUED or already claimed RUNNING) to its end; returns its final status.

    ``hard_stop=False`` (in-process callers such as tests) never exits the process on a late cancel.
    """
    run = store.get_run(run_id)
    if run.status is RunStatus.QUEUED:
        try:
            run = store.start_run(run_id)
        except RunFinishedError:  # cancelled between the read and the start
            return store.get_run(run_id).status
    elif run.status is not RunStatus.RUNNING:
        print(f"run {run_id} is {run.status.value}; nothing to do", file=sys.stderr)
        return run.status
    try:
        store.set_worker_pid(run_id, os.getpid())
    except RunFinishedError:  # cancelled (or failed as stale) right after it started
        return store.get_run(run_id).status
    beat = Heartbeat(store, run_id, hard_stop=hard_stop)
    previous = _on_sigterm(beat.request_cancel)
    beat.start()
    try:
        return _train(store, run, beat)
    except RunFinishedError:
        return store.get_run(run_id).status
    except Exception as exc:
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        try:
            store.put_artifact(run_id, "traceback", text)
            store.set_status(run_id, RunStatus.FAILED, error=_describe(exc))
        except StoreError:
            pass
        return store.get_run(run_id).status
    finally:
        beat.stop()
        _restore_sigterm(previous)


def _train(store: RunStore, run: Run, beat: Heartbeat) -> RunStatus:
    from get_core import model_file
    from get_core.data import from_parquet_bytes
    from get_core.encoding import DataSpec, prepare, usable_rows
    from get_core.train import MinMax, train  # torch: only the worker's training path loads it

    params = run.params
    seed = int(params.get("seed", 0))
    df, spec = from_parquet_bytes(store.get_dataset(run.run_id).data), DataSpec.from_dict(params["data"])
    n_rows = len(usable_rows(df, spec))
    train_idx, test_idx = split_rows(n_rows, float(params.get("test_fraction", 0.25)), seed)
    prepared = prepare(df, spec, fit_rows=train_idx)  # fill values and category levels from training rows only
    store.put_json(run.run_id, "encoding", prepared.encoding.to_dict())
    store.put_json(run.run_id, "split", {"seed": seed, "train": train_idx.tolist(), "test": test_idx.tolist(),
                                          "row_ids": prepared.row_ids.tolist()})
    config = GETConfig(**{**params["config"], "random_state": seed})
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    # the trainer's y scale: the loss curves show RMSE in the target's units (views.curves)
    store.put_json(run.run_id, "target_scale", {"y_scale": MinMax.fit(X_train, y_train).y_scale})
    share = _training_share(store, len(prepared.y), prepared.X.shape[1], params["config"])

    def on_progress(progress: Any) -> bool:
        metrics = [MetricPoint(progress.phase, r.start, progress.stage, progress.epoch,
                               progress.stage * progress.n_epochs + progress.epoch, r.alpha, r.soft_loss,
                               r.hard_loss) for r in progress.records]
        try:
            cancel = store.record_progress(
                run.run_id, progress=progress.fraction * share, phase=progress.phase, stage=progress.stage,
                n_stages=progress.n_stages, epoch=progress.epoch, n_epochs=progress.n_epochs,
                best_hard_r2=progress.best_hard_r2, metrics=metrics)
        except RunFinishedError:
            beat.lost.set()
            return True
        return cancel or beat.cancel.is_set()

    tree = train(X_train, y_train, config, on_progress=on_progress, feature_names=prepared.feature_names)
    if beat.lost.is_set():
        raise RunFinishedError(f"Run {run.run_id} was ended while training.")
    store.put_json(run.run_id, "model", model_file.to_dict(tree))
    beat.if_stopped = Ending(RunStatus.CANCELLED, "Cancelled by request; the best tree found so far is kept.")
    y_pred = tree.predict(X_test)
    scores = regression_scores(y_test, y_pred)
    store.put_json(run.run_id, "predictions", {"test": test_idx.tolist(), "y_true": y_test.tolist(),
                                                "y_pred": y_pred.tolist()})
    if tree.meta.get("cancelled") or beat.cancel.is_set():
        done = f"{100 * store.get_run(run.run_id).progress:.0f}%"
        return Ending(RunStatus.CANCELLED, f"Cancelled by request at {done}; the best tree found so far is kept.",
                      scores).write(store, run.run_id)
    beat.if_stopped = Ending(RunStatus.CANCELLED, BASELINES_SKIPPED, scores)
    _fit_baselines(store, run.run_id, X_train, y_train, X_test, y_test, config, prepared.feature_names, share)
    if beat.cancel.is_set():
        return Ending(RunStatus.CANCELLED, "Cancelled by request while fitting the baselines, which finished first: "
                      "the trained tree, its test scores and the baseline comparison are kept.",
                      scores).write(store, run.run_id)
    return Ending(RunStatus.FINISHED, scores=scores).write(store, run.run_id)


def _fit_baselines(store: RunStore, run_id: int, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                   y_test: np.ndarray, config: GETConfig, feature_names: list[str], share: float = 1.0) -> None:
    """CART and random forest on the same split (issue 5); a failing baseline never fails the run."""
    # Training is complete: its last stage and epoch, so the loss curves keep their stage lines (n_stages, n_epochs).
    store.record_progress(run_id, progress=share, phase="baselines", stage=config.n_alphas - 1,
                          n_stages=config.n_alphas, epoch=config.n_epochs, n_epochs=config.n_epochs)
    try:
        result = fit_baselines(X_train, y_train, X_test, y_test, config.depth, config.random_state,
                               feature_names=feature_names)
    except Exception as exc:
        traceback.print_exc()
        store.put_json(run_id, "baselines_error", {"error": _describe(exc)})
        return
    store.put_json(run_id, "baselines", result)


def fit_missing_baselines(store: RunStore, run_id: int) -> None:
    """Fit the baselines of a finished run that stopped before them (cancelled while training) on its stored split,
    as ``_fit_baselines`` would have, and store them (``RunStore.add_baselines``): called by the Compare page."""
    results = load_results(store, run_id)
    if not results.has_data:
        raise StoreError(f"Run {run_id}'s rows could not be rebuilt ({results.data_note}), so its baselines cannot "
                         "be fitted.")
    params = results.run.params
    store.add_baselines(run_id, fit_baselines(results.X_train, results.y_train, results.X_test, results.y_test,
                                              int(params["config"]["depth"]), int(params.get("seed", 0)),
                                              feature_names=results.tree.feature_names))


def _training_share(store: RunStore, n_rows: int, n_features: int, config: dict) -> float:
    """The share of the progress bar training fills, the rest left to the baselines, from this machine's run-time
    estimate (``estimate.Estimate.training_share``); the whole bar when this shape was never measured."""
    found = estimate.cached_estimate(n_rows, n_features, config, estimate.calibration_path(store.path, store.is_file))
    return 1.0 if found is None else min(1.0, max(0.05, found.training_share))


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


def _describe(exc: BaseException) -> str:
    from get_core.data import DataError

    if isinstance(exc, (DataError, StoreError)):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "Out of memory: use fewer rows, starts or a smaller depth."
    return f"The worker failed: {type(exc).__name__}: {exc}. The full traceback is kept as the run's 'traceback'."


def _on_sigterm(handler: Any) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, lambda signum, frame: handler())


def _restore_sigterm(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
