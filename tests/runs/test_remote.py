"""Runs on a Dask cluster: the queue hands them to a real ``LocalCluster`` through the supervisor's relay, and
their progress, cancel and results travel over Dask into a real SQLite store."""

from __future__ import annotations

import time

import pytest

from get_core.runs import launch
from get_core.runs.store import RunStatus, RunStore
from tests.runs.test_worker import LONG, TINY, stop_everything, submit, wait_for


@pytest.fixture
def cluster():
    """Two single-thread workers in this process, reached over TCP like a remote cluster (the supervisor, a
    separate process, connects to it)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as local:
        yield local


@pytest.fixture
def store(tmp_path):
    runs = RunStore(tmp_path / "runs.sqlite")
    yield runs
    stop_everything(runs)
    runs.close()


@pytest.mark.slow
def test_two_runs_on_a_dask_cluster_stream_progress_and_the_cancelled_one_ends_cancelled(store, cluster,
                                                                                            monkeypatch):
    monkeypatch.setenv(launch.DASK_ENV, cluster.scheduler_address)
    short, long = submit(store, TINY), submit(store, LONG)
    launch.dispatch(store)
    wait_for(lambda: store.list_metrics(long), 90)  # progress rows stored while it runs
    assert store.get_run(long).status is RunStatus.RUNNING and store.get_run(long).worker_pid is None
    asked = time.monotonic()
    launch.cancel_run(store, long)
    wait_for(lambda: store.get_run(long).status.is_finished(), 10)
    took = time.monotonic() - asked
    wait_for(lambda: store.get_run(short).status.is_finished(), 60)

    done, cancelled = store.get_run(short), store.get_run(long)
    assert done.status is RunStatus.FINISHED, done.error
    assert done.test_r2 is not None and done.progress == 1.0
    assert {"encoding", "split", "model", "predictions", "baselines"} <= set(store.list_artifacts(short))
    assert store.list_metrics(short, "optimize")
    assert cancelled.status is RunStatus.CANCELLED, cancelled.error
    assert cancelled.error.startswith("Cancelled by request") and 0 < cancelled.progress < 1
    assert "model" in store.list_artifacts(long) and took < 3, f"Cancel took {took:.1f} s"


def test_an_unreachable_scheduler_fails_the_queued_run_with_one_sentence(store, monkeypatch):
    monkeypatch.setenv(launch.DASK_ENV, "tcp://127.0.0.1:9")  # the discard port: nothing listens there
    run_id = submit(store, TINY, dispatch=True)
    run = wait_for(lambda: (r := store.get_run(run_id)).status.is_finished() and r, 30)
    assert run.status is RunStatus.FAILED
    assert run.error.startswith("Could not reach the Dask scheduler at 'tcp://127.0.0.1:9'")
    assert "\n" not in run.error and "Traceback" not in run.error
