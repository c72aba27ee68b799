"""Runs on an existing Dask cluster: ``GET_EXPLORER_DASK_SCHEDULER=tcp://host:port``.

A Dask worker may run on another machine and cannot see the SQLite file, so nothing on it touches the store. The
task ``train_remote`` runs the same body as the local worker (``training.train_run``) on the run's inputs (the table
as Parquet bytes, the parameters as JSON text); everything travels over Dask itself:
  * progress and metric points, and a beat every ``remote_task.BEAT_PERIOD_S``, go as JSON text into a ``distributed.Queue``
    named for the run; every message carries the task's attempt token;
  * the cancel flag is a ``distributed.Variable`` the task polls every ``remote_task.CANCEL_POLL_S``; the relay deletes it when
    it lets the run go, and a task that finds it gone stops (a future cannot interrupt a running task);
  * the artifacts and the ending come back as the future's result: JSON text and plain values only.
On the app side the ``DaskRelay`` lives in the queue's supervisor (``get_core.runs.supervisor``), which already outlives
page renders and lives as long as the queue has work. Every ``RELAY_POLL_S`` it claims queued runs while the cluster has
room (``GET_EXPLORER_MAX_RUNNING``, default one run per Dask worker thread) and submits them, writes each run's messages
to the store (a beat or progress message is the run's heartbeat), turns a cancel request into the run's Variable, and
stores a finished future's result with the run's ending. So the store's contract is unchanged: the relay is the run's
only writer while it is RUNNING, as the local worker would be.

Failures end FAILED with a sentence: a task error or a worker lost for good (``KilledWorker``) through the future; a
task Dask started again after its worker died (a second attempt token: its first attempt's progress is not to be
mixed with the second's); a worker that dies silently through the store's heartbeat rule. A task that has not
stopped ``CANCEL_GRACE_S`` after the cancel flag was set is ended CANCELLED by the relay and its future cancelled.
A scheduler that cannot be reached fails the queued runs with one sentence naming the address.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

from get_core.errors import GETExplorerError
from get_core.runs import access, launch
from get_core.runs.records import MetricPoint, RunFinishedError, RunNotFound, RunStatus, StoreError
from get_core.runs.store import JSON, RunStore
from get_core.runs.channel import Ending

CONNECT_TIMEOUT_S = 5
RELAY_POLL_S = 0.25  # with the task's cancel poll and the trainer's report interval, Cancel acts within ~1 s
CANCEL_GRACE_S = 5.0  # a remote trainer that ignores its flag longer than this is cut off (no model kept)
NOT_STOPPED = "Cancelled by request; the Dask task had not stopped, so it was cancelled and no model is kept."


class SchedulerUnreachable(GETExplorerError):
    """The Dask scheduler could not be reached; the message is one sentence for the run's page."""


# ------------------------------------------------------------------------------------------ in the supervisor
@dataclass
class RemoteRun:
    """A run handed to the cluster: its future and Dask objects, and what the relay has seen of it."""

    future: Any
    queue: Any
    flag: Any
    attempt: str | None = None
    cancel_sent: float | None = None  # time.monotonic() when the cancel flag was set


class DaskRelay:
    """Hands claimed runs to the cluster and relays their messages and results into the store."""

    def __init__(self, store: RunStore, client: Any) -> None:
        self.store, self.client = store, client
        self.runs: dict[int, RemoteRun] = {}

    @classmethod
    def connect(cls, store: RunStore, address: str) -> DaskRelay:
        from distributed import Client

        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise SchedulerUnreachable(
                f"Could not reach the Dask scheduler at {address!r} ({launch.DASK_ENV}): {reason}. Start the cluster, "
                f"correct the address, or unset {launch.DASK_ENV} to train on this machine.") from None
        return cls(store, client)

    def close(self) -> None:
        for run_id in list(self.runs):
            self._drop(run_id)
        self.client.close()

    def capacity(self) -> int:
        """Runs at once: ``GET_EXPLORER_MAX_RUNNING``, else one per Dask worker thread (a task holds one thread)."""
        return launch.max_running(default=sum(self.client.nthreads().values()))

    def poll(self) -> None:
        """One round: stale runs FAILED, every remote run's news relayed, queued runs submitted while there is room.

        The cluster's trouble (a lost connection) is logged and tried again next round; if it lasts, the runs' beats
        stop and the heartbeat rule fails them."""
        self.store.fail_stale_runs()
        for run_id in list(self.runs):
            try:
                self._relay(run_id, self.runs[run_id])
            except (RunFinishedError, RunNotFound):  # ended in the store meanwhile (stale, forced stop, deleted)
                self._drop(run_id)
            except Exception as exc:
                print(f"relay: run {run_id}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        try:
            room = self.capacity()
        except Exception as exc:
            print(f"relay: cannot ask the cluster its size: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return
        while (run := self.store.claim_next_run(room, access.user_limit(access.USER_MAX_RUNNING_ENV))) is not None:
            self._submit(run.run_id, dict(run.params))

    def _submit(self, run_id: int, params: dict[str, Any]) -> None:
        from distributed import Queue, Variable

        # The task's module is the worker side (the estimators, torch): the supervisor loads it only when a cluster
        # takes runs, and Dask sends the task by reference to it.
        from get_core.runs.remote_task import train_remote

        name = f"get-explorer-run-{run_id}-{uuid.uuid4().hex}"
        try:
            flag = Variable(f"{name}-cancel", client=self.client)
            flag.set(False)
            queue = Queue(f"{name}-progress", client=self.client)
            future = self.client.submit(train_remote, self.store.get_dataset(run_id).data, json.dumps(params),
                                        queue.name, flag.name, key=name, pure=False)
        except Exception as exc:
            Ending(RunStatus.FAILED, f"Could not hand the run to the Dask cluster: {type(exc).__name__}: {exc}."
                   ).write(self.store, run_id)
            return
        self.runs[run_id] = RemoteRun(future, queue, flag)

    def _relay(self, run_id: int, remote: RemoteRun) -> None:
        done = remote.future.done()  # before draining: a done task has put all its messages
        for text in remote.queue.get(batch=True):
            if not self._apply(run_id, remote, json.loads(text)):
                return
        if done:
            self._finish(run_id, remote)
            return
        run = self.store.get_run(run_id)
        if run.status.is_finished():
            self._drop(run_id)
        elif run.cancel_requested and remote.cancel_sent is None:
            remote.flag.set(True)
            remote.cancel_sent = time.monotonic()
        elif remote.cancel_sent is not None and time.monotonic() - remote.cancel_sent > CANCEL_GRACE_S:
            self._end(run_id, Ending(RunStatus.CANCELLED, NOT_STOPPED))

    def _apply(self, run_id: int, remote: RemoteRun, message: dict[str, Any]) -> bool:
        """Write one message to the store; False when it ended the run (a task started again)."""
        if remote.attempt not in (None, message["attempt"]):
            self._end(run_id, Ending(RunStatus.FAILED, "The Dask worker training this run died and Dask started "
                                     "the task again elsewhere; start the run again."))
            return False
        remote.attempt = message["attempt"]
        if message["kind"] == "progress":
            metrics = [MetricPoint(*point) for point in message["metrics"]]
            self.store.record_progress(run_id, **message["fields"], metrics=metrics)
        else:
            self.store.record_heartbeat(run_id)
        return True

    def _finish(self, run_id: int, remote: RemoteRun) -> None:
        if remote.future.status != "finished":
            exc = remote.future.exception() if remote.future.status == "error" else None
            what = f"{type(exc).__name__}: {exc}" if exc is not None else f"the task was {remote.future.status}"
            self._end(run_id, Ending(RunStatus.FAILED, f"The Dask cluster could not train this run ({what}); "
                                     "a worker may have died: start the run again."))
            return
        result = remote.future.result()
        for name, text in result["artifacts"].items():
            self.store.put_artifact(run_id, name, text, JSON)
        if result["traceback"]:
            self.store.put_artifact(run_id, "traceback", result["traceback"])
        self._end(run_id, Ending(RunStatus(result["status"]), result["error"], tuple(result["scores"])))

    def _end(self, run_id: int, ending: Ending) -> None:
        try:
            ending.write(self.store, run_id)
        finally:
            self._drop(run_id)

    def _drop(self, run_id: int) -> None:
        """Let a run go: a task still running (a restarted attempt, an overdue one) stops when its flag is gone."""
        remote = self.runs.pop(run_id, None)
        if remote is None:
            return
        try:
            remote.future.cancel()
            remote.flag.delete()
        except Exception:  # the scheduler is gone: nothing left to release
            traceback.print_exc()


def fail_queued(store: RunStore, reason: str) -> None:
    """End every QUEUED run FAILED with ``reason`` (the cluster cannot take them)."""
    for run in store.list_runs([RunStatus.QUEUED]):
        try:
            store.set_status(run.run_id, RunStatus.FAILED, error=reason)
        except StoreError:  # cancelled meanwhile
            pass
