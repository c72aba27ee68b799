"""The queue's supervisor: ``python -m get_core.runs.supervisor`` keeps one database's queue draining by itself.

Workers start the next queued run when they end, and pages on every render; neither happens when a worker is
killed outright (SIGKILL, the out-of-memory killer) and no browser is open, so its run would stay RUNNING and hold
its slot for good. The supervisor closes that gap: every ``POLL_S`` it calls ``launch.fill_slots``, which marks
RUNNING runs with a stale heartbeat FAILED (the store's rule, ``RunStore.fail_stale_runs``) and starts queued runs
in the freed slots.

With ``GET_EXPLORER_DASK_SCHEDULER`` set it also hosts the relay that hands runs to the Dask cluster and writes
their progress and results to the store (``get_core.runs.remote``), polling every ``remote.RELAY_POLL_S``.

One per database: it holds an exclusive ``flock`` on ``launch.supervisor_lock_path`` (released by the kernel however
it dies) and exits at once if another holds it. ``launch.supervise`` starts it (from ``dispatch``: on submit, on
every page render, when a worker ends) whenever runs are QUEUED or RUNNING and the lock is free.

It lives as long as the queue has work, not as long as the app: workers outlive the app by design, and so must the
one process that notices when they die. It exits once no run is QUEUED or RUNNING (so at most the heartbeat grace
after the last worker has died), or when its database file is gone. Before exiting it releases the lock and looks
once more, so a run queued meanwhile (whose submitter saw the lock still held) is never left unwatched.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

from get_core.runs import launch, remote
from get_core.runs.store import RunStore, StoreError

POLL_S = 1.0  # the target is the heartbeat grace plus 5 s; a second's poll costs one indexed query


def watch(store: RunStore, poll: float = POLL_S) -> None:
    """Fill the queue's slots every ``poll`` seconds while it has work; returns when it has none, or when another
    supervisor holds the lock. With ``GET_EXPLORER_DASK_SCHEDULER`` set, the slots are the cluster's and each round
    is the Dask relay's (``get_core.runs.remote``); a scheduler it cannot reach fails the queued runs."""
    lock = _acquire(store)
    if lock is None:
        return
    address = launch.dask_scheduler()
    if address is None:
        _drain(store, lock, lambda: launch.fill_slots(store), poll)
        return
    try:
        relay = remote.DaskRelay.connect(store, address)
    except remote.SchedulerUnreachable as exc:
        print(f"supervisor: {exc}", file=sys.stderr, flush=True)
        remote.fail_queued(store, str(exc))
        os.close(lock)
        return
    try:
        _drain(store, lock, relay.poll, min(poll, remote.RELAY_POLL_S))
    finally:
        relay.close()


def _drain(store: RunStore, lock: int | None, step: Callable[[], Any], poll: float) -> None:
    """Call ``step`` every ``poll`` seconds while the queue has work, then release ``lock``."""
    while lock is not None:
        step()
        if _has_work(store):
            time.sleep(poll)
            continue
        os.close(lock)  # idle: let go, then look once more (see the module docstring)
        lock = _acquire(store) if _has_work(store) else None


def _acquire(store: RunStore) -> int | None:
    lock = launch.try_lock(launch.supervisor_lock_path(store))
    if lock is not None:
        os.ftruncate(lock, 0)
        os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)  # who holds it, for people and tests
    return lock


def _has_work(store: RunStore) -> bool:
    return store.has_active_runs()  # a database deleted meanwhile raises StoreReplaced: said in the log


def main() -> int:
    try:
        watch(RunStore())
    except StoreError as exc:  # the database became unusable: one line in the log, the pages will say it too
        print(f"supervisor: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
