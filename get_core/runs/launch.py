"""Starting and stopping workers and the queue's supervisor: the one module that spawns processes.

Each run trains in its own process, ``python -m get_core.runs.worker RUN_ID``, started in a new session
(``start_new_session``) so it is detached from the Streamlit server: closing the browser, or stopping and restarting
the app, neither blocks nor kills it. Its output goes to ``logs/run-RUN_ID.log`` beside the database.

Queue policy: at most ``max_running()`` runs are RUNNING at once (``GET_EXPLORER_MAX_RUNNING``, default the number
of cores available to this process); each worker's torch gets ``cores // max_running`` threads (at least 1).
Per owner (``get_core.runs.access``) at most ``GET_EXPLORER_USER_MAX_RUNNING`` running and
``GET_EXPLORER_USER_MAX_QUEUED`` waiting (no limit when unset, as on a local server; ``get_core.serve`` sets 1 and 3
for a shared one), and the queue takes every owner's first run before anyone's second (``access.fair_next``).
``fill_slots`` marks stale RUNNING runs FAILED, then claims QUEUED runs in that order while slots are free (the claim
and the count are one store transaction, so two callers never overfill the slots) and spawns their workers.
``dispatch`` is ``fill_slots`` plus ``supervise``. It is called
  * after ``submit_run`` queues a run and ``cancel_run`` frees a slot,
  * by every worker when it ends (the next run starts at once in the slot it frees),
  * by the pages on each render and live refresh.
None of these notices a worker that dies without a word (SIGKILL, out of memory), nor starts the run queued behind
it, when no page is open. So ``supervise`` makes sure that while the database has QUEUED or RUNNING runs, one
supervisor process (``get_core.runs.supervisor``, one per database, holding ``supervisor_lock_path``) calls
``fill_slots`` every second: a dead worker's run is FAILED, and the next run started, within the heartbeat grace
plus a second. The supervisor exits once nothing is QUEUED or RUNNING.
Cancelling goes through the store (``cancel_run``): a QUEUED run is cancelled at once, a RUNNING worker sees the
flag within a fraction of a second and stops within two (see ``worker``).
With ``GET_EXPLORER_DASK_SCHEDULER`` set, ``fill_slots`` only fails stale runs: the supervisor claims queued runs and
hands them to the Dask cluster through its relay (``get_core.runs.remote``), so no local worker is spawned.
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Mapping

from get_core.runs import access
from get_core.runs.store import DB_ENV, GRACE_ENV, RunStatus, RunStore, StoreError

MAX_RUNNING_ENV = "GET_EXPLORER_MAX_RUNNING"
DASK_ENV = "GET_EXPLORER_DASK_SCHEDULER"
ROOT = Path(__file__).resolve().parents[2]


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def max_running(default: int | None = None) -> int:
    """How many runs may be RUNNING at once: ``GET_EXPLORER_MAX_RUNNING``, else ``default`` (the Dask relay passes
    the cluster's worker count), else the cores available here."""
    value = os.environ.get(MAX_RUNNING_ENV, "")
    if value.strip().isdigit():
        return max(1, int(value))
    return max(1, available_cores() if default is None else default)


def dask_scheduler() -> str | None:
    """The Dask scheduler's address when runs go to a cluster (``get_core.runs.remote``), else None."""
    return os.environ.get(DASK_ENV, "").strip() or None


def threads_per_worker() -> int:
    return max(1, available_cores() // max_running())


def submit_run(store: RunStore, params: Mapping[str, Any], dataset: bytes, dataset_name: str, *, n_rows: int,
               n_features: int, name: str | None = None) -> int:
    """Queue a run of ``store``'s owner and start it if a slot is free; returns the run id. StoreError when the
    owner already has its most runs waiting (``GET_EXPLORER_USER_MAX_QUEUED``)."""
    run_id = store.create_run(params, dataset, dataset_name, n_rows=n_rows, n_features=n_features, name=name,
                              max_queued=access.user_limit(access.USER_MAX_QUEUED_ENV))
    dispatch(store)
    return run_id


def cancel_run(store: RunStore, run_id: int) -> RunStatus:
    """Request cancellation; returns the run's status right after the request."""
    status = store.request_cancel(run_id)
    dispatch(store)
    return status


def dispatch(store: RunStore) -> list[int]:
    """Fill the free slots, and make sure a supervisor keeps doing so while runs are queued or running; returns the
    started run ids."""
    started = fill_slots(store)
    supervise(store)
    return started


def fill_slots(store: RunStore) -> list[int]:
    """Mark stale runs FAILED, then start workers for queued runs while slots are free; returns started run ids.
    Every owner's runs, whichever session's store calls it: the queue serves them all."""
    store = store.unscoped
    if not store.is_file:  # a worker process cannot see an in-memory database
        return []
    store.fail_stale_runs(cause=lambda run_id: store_trouble(log_path(store, f"run-{run_id}")))
    if dask_scheduler():  # the supervisor's relay hands queued runs to the cluster (get_core.runs.remote)
        return []
    started = []
    per_owner = access.user_limit(access.USER_MAX_RUNNING_ENV)
    while (run := store.claim_next_run(max_running(), per_owner)) is not None:
        try:
            spawn_worker(store, run.run_id)
        except OSError as exc:
            store.set_status(run.run_id, RunStatus.FAILED, error=f"Could not start the worker process: {exc}.")
            continue
        started.append(run.run_id)
    return started


def supervise(store: RunStore) -> bool:
    """Start the database's supervisor if runs are queued or running and none holds its lock; True if started.

    Cheap enough for every page render: one indexed query and a non-blocking ``flock`` probe.
    """
    store = store.unscoped
    if not store.is_file or not store.has_active_runs():
        return False
    probe = try_lock(supervisor_lock_path(store))
    if probe is None:  # a supervisor is watching
        return False
    os.close(probe)  # free for the supervisor; should two callers start one each, the second exits at once
    spawn_module("get_core.runs.supervisor", [], log_path(store, "supervisor"), store_env(store))
    return True


def supervisor_lock_path(store: RunStore) -> Path:
    return Path(store.path).resolve().with_name(Path(store.path).name + ".supervisor.lock")


def try_lock(path: Path) -> int | None:
    """An open descriptor holding an exclusive ``flock`` on ``path``, or None if another process holds it.

    The kernel drops the lock when its holder exits, however it dies, so a killed supervisor never blocks the next.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def store_env(store: RunStore) -> dict[str, str]:
    """What a spawned process needs to open the same store with the same heartbeat grace."""
    return {DB_ENV: str(Path(store.path).resolve()), GRACE_ENV: repr(store.heartbeat_grace)}


#: What a worker's heartbeat thread logs when the store refuses a heartbeat (``worker.Heartbeat``): the store's own
#: sentence follows it.
HEARTBEAT_REFUSED = ": heartbeat not written: "
#: How much of a worker's log end ``store_trouble`` reads: its last lines, never the whole file.
LOG_TAIL_BYTES = 64 * 1024


def store_trouble(log: Path) -> str | None:
    """The store's last refusal of a heartbeat in a worker's ``log`` (the store made unwritable, a full disk), so a
    run failed as stale names that cause rather than a crash; None when its log says no such thing."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    refused = [line.split(HEARTBEAT_REFUSED, 1)[1].strip() for line in tail.splitlines() if HEARTBEAT_REFUSED in line]
    return refused[-1] if refused else None


def log_path(store: RunStore, name: str) -> Path:
    """``logs/NAME.log`` beside the database (a run's worker logs to ``run-ID``)."""
    return Path(store.path).resolve().parent / "logs" / f"{name}.log"


def spawn_worker(store: RunStore, run_id: int) -> subprocess.Popen:
    """Start the worker process of a claimed (RUNNING) run, detached from this process's session."""
    process = spawn_module("get_core.runs.worker", [str(run_id)], log_path(store, f"run-{run_id}"), store_env(store))
    try:
        store.set_worker_pid(run_id, process.pid)
    except StoreError:  # the worker already finished (or failed) on its own
        pass
    return process


def open_log(path: Path) -> int:
    """A descriptor appending to ``path``, never through a symbolic link: a link planted where a log goes (pointing
    at a file of the user's, say ~/.bashrc) would have the worker's output appended to its target. Such a link is
    removed (the link itself, never its target) and a fresh file made in its place; O_EXCL then refuses a link
    planted again in between."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    os.unlink(path)
    return os.open(path, flags | os.O_EXCL, 0o644)


def spawn_module(module: str, args: list[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """``python -m module args`` in a new session with the workers' thread count, output appended to ``log``.

    Also used by ``estimate`` for its timing subprocess, so that it measures under a worker's conditions.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    threads = str(threads_per_worker())
    full_env = {**os.environ, **(env or {}), "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with os.fdopen(open_log(log), "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=full_env,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True)
    # Reap the child when it exits so a long-lived server collects no zombies; the child never depends on us.
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    return process
