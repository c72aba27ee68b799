"""The worker: ``python -m get_core.runs.worker RUN_ID`` trains one run in its own process.

It loads the run's parameters and dataset from the store (``GET_EXPLORER_DB``), trains it with
``get_core.runs.training.train_run`` (split, encoding, GET, baselines) through a ``StoreChannel`` that writes
everything back as it arrives: heartbeats, progress and metrics while training; artifacts ``encoding``, ``split``,
``model``, ``predictions``, ``baselines`` (and ``traceback`` on failure); finally the status with test R2 and RMSE.

Liveness and cancellation:
  * a heartbeat thread writes a heartbeat every ``HEARTBEAT_PERIOD_S`` and polls the cancel flag every
    ``CANCEL_POLL_S``, so a long epoch never looks stale and a cancel request is seen at once;
  * the trainer's progress callback (at most every 0.5 s, see ``get_core.engine.progress.REPORT_INTERVAL``) writes progress
    and metrics and returns True once cancellation is requested; ``train`` then returns its best tree so far, which
    is evaluated and kept, and the run ends CANCELLED;
  * if the trainer (or the baseline fit) has not come back ``HARD_STOP_S`` after the request, the heartbeat thread
    ends the run CANCELLED itself with what the worker has so far (``Heartbeat.if_stopped``: the tree and, once
    known, its test scores), starts the next queued run and exits the process, so Cancel always takes effect within
    two seconds;
  * SIGTERM is treated as a cancel request, and the process ends as soon as the run's ending is stored
    (``exit_now``: no interpreter teardown);
  * a write refused because the run is no longer RUNNING (marked FAILED as stale) stops the worker quietly.
When it is done the worker asks the launcher to start the next queued run in the slot it frees.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

from get_core.data.confined import limit_address_space
from get_core.runs import estimate, launch
from get_core.runs.store import (Run, RunFinishedError, RunStatus, RunStore, StoreError, StoreReplaced,
                                  StoreUnavailable)
from get_core.runs.channel import Ending

HEARTBEAT_PERIOD_S = 1.0
CANCEL_POLL_S = 0.2
HARD_STOP_S = 1.5
NO_MODEL = "Cancelled by request; the trainer had not reached a checkpoint, so no model is kept."


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
            except StoreReplaced as exc:  # the database is gone: say so in the log and stop, nothing to write to
                print(f"run {self.run_id}: stopped: {exc}", file=sys.stderr, flush=True)
                self.lost.set()
                self.cancel.set()
                return
            except StoreUnavailable as exc:  # the file's trouble (a lock held too long, a full disk): try again
                print(f"run {self.run_id}{launch.HEARTBEAT_REFUSED}{exc}", file=sys.stderr, flush=True)
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
    store.close()
    return 0 if status in (RunStatus.FINISHED, RunStatus.CANCELLED) else 1


def dispatch_next(store: RunStore) -> None:
    """Start the next queued run in the slot this worker frees; a failure here is only logged, since the run itself
    has already ended and must not be reported as crashed."""
    try:
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
    # The trainer (the estimators, torch) loads once the heartbeat beats: its imports take seconds on a busy machine,
    # and a claimed run that sends no heartbeat for the store's grace is failed as stale.
    from get_core.runs.training import describe, train_run

    try:
        if hard_stop:  # a worker process of its own (in-process callers keep their limits); with the heartbeat
            _limit_memory(run.params)  # already beating: it imports torch, seconds on a busy machine
        share = _training_share(store, run)
        return train_run(store.get_dataset(run_id).data, run.params, StoreChannel(store, run_id, beat),
                         share).write(store, run_id)
    except RunFinishedError:
        return store.get_run(run_id).status
    except Exception as exc:
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        try:
            store.put_artifact(run_id, "traceback", text)
            store.set_status(run_id, RunStatus.FAILED, error=describe(exc))
        except StoreError:
            pass
        return store.get_run(run_id).status
    finally:
        beat.stop()
        _restore_sigterm(previous)


class StoreChannel:
    """The local worker's channel: results go straight to the store; the heartbeat thread holds the cancel flag."""

    def __init__(self, store: RunStore, run_id: int, beat: Heartbeat) -> None:
        self.store, self.run_id, self.beat = store, run_id, beat

    def report(self, **fields: Any) -> bool:
        try:
            return self.store.record_progress(self.run_id, **fields)
        except RunFinishedError:
            self.beat.lost.set()
            return True

    def put_json(self, name: str, value: Any) -> None:
        self.store.put_json(self.run_id, name, value)

    def cancelled(self) -> bool:
        return self.beat.cancel.is_set()

    def ended_elsewhere(self) -> bool:
        return self.beat.lost.is_set()

    def on_stop(self, ending: Ending) -> None:
        self.beat.if_stopped = ending


def _limit_memory(params: dict) -> None:
    """Bound a CPU worker's address space by the machine's physical memory beyond what it maps at the start: a run
    that would need more fails with its own sentence (training.describe) rather than swapping the machine or being
    killed without one. Not on a GPU: CUDA reserves address space far beyond the physical memory."""
    from get_core.engine.optimize import resolve_device  # torch: after the heartbeat started (``execute``)

    try:
        device = resolve_device(str(params.get("config", {}).get("device", "auto")))
    except ValueError:
        return  # the run fails with that sentence when it trains
    if device.type == "cpu":
        limit_address_space(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _on_sigterm(handler: Any) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, lambda signum, frame: handler())


def _restore_sigterm(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)


def _training_share(store: RunStore, run: Run) -> float:
    """The share of the progress bar training fills, the rest left to the baselines, from this machine's run-time
    estimate (``estimate.Estimate.training_share``, keyed by the shape the Train page measured); the whole bar when
    this shape was never measured."""
    found = estimate.search_estimate(run.n_rows, run.n_features, run.params,
                                     estimate.calibration_path(store.path, store.is_file))
    return 1.0 if found is None else min(1.0, max(0.05, found.training_share))


def exit_now(code: int) -> None:
    """Leave the process as soon as the run's ending is written: the interpreter's own teardown of torch and its
    thread pools took 1.8 s more on a busy 2-core machine, so a cancelled (SIGTERMed) worker lingered past 2 s
    holding its memory. Everything worth keeping is committed to SQLite by then; only the output is flushed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
