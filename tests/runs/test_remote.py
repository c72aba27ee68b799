"""Runs on a Dask cluster: the queue hands them to a real ``LocalCluster`` through the supervisor's relay, and
their progress, cancel and results travel over Dask into a real SQLite store."""

from __future__ import annotations

import os
import signal
import time

from pathlib import Path

import pytest

from get_core.runs import launch
from get_core.runs.store import RunStatus, RunStore
from tests.runs.test_class_run import class_run, three_classes
from tests.runs.test_worker import CANCEL_MARGIN_S, LONG, TINY, stop_everything, submit, wait_for

ROOT = Path(__file__).resolve().parents[2]


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


def test_two_runs_on_a_dask_cluster_stream_progress_and_the_cancelled_one_ends_cancelled(store, cluster,
                                                                                            monkeypatch):
    monkeypatch.setenv(launch.DASK_ENV, cluster.scheduler_address)
    short, long = submit(store, TINY), submit(store, LONG)
    launch.dispatch(store)
    wait_for(lambda: store.list_metrics(long), 90)  # progress rows stored while it runs
    assert store.get_run(long).status is RunStatus.RUNNING and store.get_run(long).worker_pid is None
    asked = time.monotonic()
    launch.cancel_run(store, long)
    wait_for(lambda: store.get_run(long).status.is_finished(), 30)
    took = time.monotonic() - asked
    wait_for(lambda: store.get_run(short).status.is_finished(), 60)

    done, cancelled = store.get_run(short), store.get_run(long)
    assert done.status is RunStatus.FINISHED, done.error
    assert done.test_r2 is not None and done.progress == 1.0
    assert {"encoding", "split", "model", "predictions", "baselines"} <= set(store.list_artifacts(short))
    assert store.list_metrics(short, "optimize")
    assert cancelled.status is RunStatus.CANCELLED, cancelled.error
    assert cancelled.error.startswith("Cancelled by request") and 0 < cancelled.progress < 1
    assert "model" in store.list_artifacts(long) and took < CANCEL_MARGIN_S, f"Cancel took {took:.1f} s"


def test_a_class_run_on_a_dask_cluster_ends_with_its_classification_tree_and_scores(store, cluster, monkeypatch):
    monkeypatch.setenv(launch.DASK_ENV, cluster.scheduler_address)
    run_id = class_run(store, three_classes())
    launch.dispatch(store)
    wait_for(lambda: store.get_run(run_id).status.is_finished(), 120)
    run = store.get_run(run_id)
    assert run.status is RunStatus.FINISHED and run.worker_pid is None, run.error  # ran on the cluster, not locally
    scores = store.get_json(run_id, "class_scores")
    assert 0.5 < scores["accuracy"] <= 1 and store.get_json(run_id, "baselines")["task"] == "classification"
    assert store.get_json(run_id, "predictions")["classes"] == ["high", "low", "mid"]


def test_an_unreachable_scheduler_fails_the_queued_run_with_one_sentence_the_runs_page_shows(store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(launch.DASK_ENV, "tcp://127.0.0.1:9")  # the discard port: nothing listens there
    monkeypatch.setenv("GET_EXPLORER_DB", store.path)
    run_id = submit(store, TINY, dispatch=True)
    run = wait_for(lambda: (r := store.get_run(run_id)).status.is_finished() and r, 30)
    assert run.status is RunStatus.FAILED
    assert run.error.startswith("Could not reach the Dask scheduler at 'tcp://127.0.0.1:9'")
    assert "\n" not in run.error and "Traceback" not in run.error
    page = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    assert not page.exception, [e.message for e in page.exception]
    assert any(e.value.startswith("Could not reach the Dask scheduler") for e in page.error)


@pytest.mark.slow
def test_a_run_whose_dask_worker_dies_ends_failed_with_a_sentence(store, monkeypatch):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as local, \
            Client(local) as client:
        monkeypatch.setenv(launch.DASK_ENV, local.scheduler_address)
        run_id = submit(store, LONG, dispatch=True)
        wait_for(lambda: store.list_metrics(run_id), 90)
        (pid,) = client.run(os.getpid).values()
        os.kill(pid, signal.SIGKILL)  # its nanny starts a new worker, and Dask starts the task there again
        run = wait_for(lambda: (r := store.get_run(run_id)).status.is_finished() and r, 60)
        after = submit(store, TINY, dispatch=True)  # the restarted task stops: the only worker thread is free
        wait_for(lambda: store.get_run(after).status.is_finished(), 60)
    assert run.status is RunStatus.FAILED
    assert "Dask" in run.error and "start the run again" in run.error and "\n" not in run.error
    assert store.get_run(after).status is RunStatus.FINISHED
