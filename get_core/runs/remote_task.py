"""The Dask task of a run on a cluster (``remote`` holds the supervisor's relay and the protocol): ``train_remote``
runs the local worker's body (``training.train_run``) on a Dask worker, through a ``RemoteChannel`` that sends
progress into the run's ``distributed.Queue``, polls its cancel ``distributed.Variable`` and keeps the artifacts for
the task's result. The worker side of runs/: it imports the estimators (torch) at the top.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from dataclasses import astuple
from typing import Any

from get_core.runs.channel import Ending
from get_core.runs.records import RunStatus
from get_core.runs.training import describe, train_run

BEAT_PERIOD_S = 1.0  # the task's beat into its Queue: the run's heartbeat while a long epoch reports nothing
CANCEL_POLL_S = 0.2  # with the relay's poll and the trainer's report interval, Cancel acts within ~1 s
FLAG_TIMEOUT_S = 5  # a read of the cancel flag that takes longer means the scheduler or the flag is gone


class RemoteChannel:
    """The task's channel: messages into the run's Queue, cancel flag from its Variable, artifacts kept for the
    result."""

    def __init__(self, queue: Any, flag: Any) -> None:
        self.queue, self.flag = queue, flag
        self.attempt = uuid.uuid4().hex  # a task Dask starts again elsewhere sends a new one
        self.artifacts: dict[str, str] = {}  # name -> JSON text
        self._cancel, self._lost, self._halt = threading.Event(), threading.Event(), threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="get-explorer-cancel-watch", daemon=True)

    def __enter__(self) -> RemoteChannel:
        self._send("beat")
        self._watcher.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._halt.set()
        self._watcher.join(timeout=5)

    def report(self, *, metrics: Any = (), **fields: Any) -> bool:
        self._send("progress", fields=fields, metrics=[astuple(m) for m in metrics])
        return self._cancel.is_set() or self._lost.is_set()

    def put_json(self, name: str, value: Any) -> None:
        self.artifacts[name] = json.dumps(value, allow_nan=False)

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def ended_elsewhere(self) -> bool:
        return self._lost.is_set()

    def on_stop(self, ending: Ending) -> None:
        pass  # the relay enforces the stop (CANCEL_GRACE_S)

    def _send(self, kind: str, **body: Any) -> None:
        self.queue.put(json.dumps({"attempt": self.attempt, "kind": kind, **body}, default=_plain))

    def _watch(self) -> None:
        last_beat = time.monotonic()
        while not self._halt.wait(CANCEL_POLL_S):
            try:
                cancel = self.flag.get(timeout=FLAG_TIMEOUT_S)
            except Exception:  # the relay deleted the flag (it let the run go) or the scheduler is gone: stop
                self._lost.set()
                return
            if cancel:
                self._cancel.set()
            try:
                if time.monotonic() - last_beat >= BEAT_PERIOD_S:
                    self._send("beat")
                    last_beat = time.monotonic()
            except Exception as exc:  # the scheduler is busy or gone: the relay's heartbeat rule decides
                print(f"get-explorer task: {type(exc).__name__}: {exc}", flush=True)


def train_remote(dataset: bytes, params_json: str, queue_name: str, flag_name: str) -> dict[str, Any]:
    """The Dask task: train one run; returns its ending and artifacts as plain values (JSON text for artifacts)."""
    from distributed import Queue, Variable, get_client

    client = get_client()  # bound here: the channel's watch thread is not a task thread and cannot look it up
    with RemoteChannel(Queue(queue_name, client=client), Variable(flag_name, client=client)) as channel:
        try:
            ending, failure = train_run(dataset, json.loads(params_json), channel), None
        except Exception as exc:
            ending, failure = Ending(RunStatus.FAILED, describe(exc)), traceback.format_exc()
    r2, rmse = ending.scores
    return {"status": ending.status.value, "error": ending.error, "scores": [r2, rmse],
            "artifacts": channel.artifacts, "traceback": failure}


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, for JSON."""
    return value.item()
