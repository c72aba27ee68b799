"""The run store's contract, run once per backend: an in-memory database and a WAL file."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
import time

import pytest

from get_core.runs.store import (KEEP_UNUSED_DATASET_S, InvalidTransition, MetricPoint, RunFinishedError, RunNotFound,
                                 RunStatus, RunStore, StoreError)

PARAMS = {"config": {"depth": 3, "leaf": "constant"}, "seed": 7}
DATASET = b"x,y\n1,2\n3,4\n"


@pytest.fixture(params=["memory", "wal-file"])
def store(request, tmp_path):
    path = ":memory:" if request.param == "memory" else tmp_path / "runs.sqlite"
    store = RunStore(path, heartbeat_grace=5.0)
    yield store
    store.close()


def new_run(store: RunStore, dataset: bytes = DATASET, **kwargs) -> int:
    return store.create_run(PARAMS, dataset, "toy.csv", n_rows=2, n_features=1, **kwargs)


def running_run(store: RunStore) -> int:
    run_id = new_run(store)
    store.start_run(run_id)
    return run_id


def finished_run(store: RunStore, status: RunStatus = RunStatus.FINISHED) -> int:
    run_id = running_run(store)
    store.set_status(run_id, status)
    return run_id


def test_a_new_run_is_queued_with_its_parameters_and_dataset_fingerprint(store):
    run = store.get_run(new_run(store))
    assert run.status is RunStatus.QUEUED and not run.status.is_finished()
    assert dict(run.params) == PARAMS
    assert run.dataset_fingerprint == hashlib.sha256(DATASET).hexdigest()
    assert run.name == f"run {run.run_id}" and run.started_at is None and run.progress == 0.0
    assert store.get_dataset(run.run_id).data == DATASET


def test_reads_are_frozen_records(store):
    run = store.get_run(new_run(store, name="mine"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = RunStatus.RUNNING  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.params["seed"] = 1  # type: ignore[index]
    assert store.get_run(run.run_id).name == "mine"


def test_is_finished_covers_exactly_the_final_states():
    assert {s for s in RunStatus if s.is_finished()} == {RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED}


def test_the_lifecycle_records_times_results_and_full_progress(store):
    run_id = new_run(store)
    claimed = store.claim_next_run(max_running=1)
    assert claimed.run_id == run_id and claimed.status is RunStatus.RUNNING
    assert claimed.started_at is not None and claimed.heartbeat_at is not None
    done = store.set_status(run_id, RunStatus.FINISHED, test_r2=0.9, test_rmse=1.5)
    assert done.status is RunStatus.FINISHED and done.finished_at >= done.started_at
    assert (done.test_r2, done.test_rmse, done.progress) == (0.9, 1.5, 1.0)
    assert done.duration() == pytest.approx(done.finished_at - done.started_at)


def test_transitions_outside_the_lifecycle_are_refused(store):
    run_id = new_run(store)
    with pytest.raises(InvalidTransition):
        store.set_status(run_id, RunStatus.FINISHED)
    for write in (lambda: store.record_heartbeat(run_id), lambda: store.record_progress(run_id, progress=0.1),
                  lambda: store.put_artifact(run_id, "model", b"{}")):
        with pytest.raises(InvalidTransition, match="only a RUNNING run's worker writes"):
            write()  # a QUEUED run has no worker yet
    store.start_run(run_id)
    with pytest.raises(InvalidTransition):
        store.start_run(run_id)


@pytest.mark.parametrize("final", [RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED])
def test_finished_runs_are_immutable_except_their_name(store, final):
    run_id = finished_run(store, final)
    writes = [
        lambda: store.set_status(run_id, RunStatus.FAILED),
        lambda: store.record_heartbeat(run_id),
        lambda: store.record_progress(run_id, progress=0.5),
        lambda: store.put_artifact(run_id, "model", b"{}"),
        lambda: store.set_worker_pid(run_id, 123),
        lambda: store.start_run(run_id),
    ]
    for write in writes:
        with pytest.raises(RunFinishedError):
            write()
    store.rename_run(run_id, "  kept  ")
    assert store.get_run(run_id).name == "kept" and store.get_run(run_id).status is final


def test_a_finished_run_with_a_model_takes_missing_baselines_once_and_nothing_else_changes(store):
    run_id = running_run(store)
    store.put_json(run_id, "model", {"m": 1})
    with pytest.raises(StoreError, match="cannot take baselines now"):
        store.add_baselines(run_id, {"models": {}})  # still running: the worker writes them
    store.set_status(run_id, RunStatus.CANCELLED, error="Cancelled by request.")
    before = store.get_run(run_id)
    store.add_baselines(run_id, {"models": {"cart": {}}})
    assert store.get_json(run_id, "baselines") == {"models": {"cart": {}}} and store.get_run(run_id) == before
    with pytest.raises(StoreError, match="cannot take baselines now"):
        store.add_baselines(run_id, {"models": {}})  # once only
    without_model = finished_run(store, RunStatus.CANCELLED)
    with pytest.raises(StoreError, match="cannot take baselines now"):
        store.add_baselines(without_model, {"models": {}})


def test_claims_take_the_oldest_queued_run_and_respect_the_limit(store):
    first, second, third = new_run(store), new_run(store), new_run(store)
    assert store.claim_next_run(2).run_id == first
    assert store.claim_next_run(2).run_id == second
    assert store.claim_next_run(2) is None
    assert store.get_run(third).status is RunStatus.QUEUED
    store.set_status(first, RunStatus.FINISHED)
    assert store.claim_next_run(2).run_id == third
    assert store.count_running() == 2


def test_cancelling_a_queued_run_ends_it_and_a_running_run_is_asked(store):
    queued = new_run(store)
    assert store.request_cancel(queued) is RunStatus.CANCELLED
    assert "before it started" in store.get_run(queued).error
    running = running_run(store)
    assert store.record_heartbeat(running) is False
    assert store.request_cancel(running) is RunStatus.RUNNING
    assert store.get_run(running).cancel_requested
    assert store.record_heartbeat(running) is True
    assert store.record_progress(running, progress=0.3) is True


def test_a_running_run_with_a_stale_heartbeat_is_failed_with_a_reason(store):
    stale, fresh = running_run(store), running_run(store)
    assert store.fail_stale_runs() == []
    time.sleep(0.3)
    store.record_heartbeat(fresh)
    fresh_beat = store.get_run(fresh).heartbeat_at
    assert store.fail_stale_runs(now=fresh_beat + store.heartbeat_grace - 0.1) == [stale]
    run = store.get_run(stale)
    assert run.status is RunStatus.FAILED and "heartbeat" in run.error and run.finished_at is not None
    assert store.get_run(fresh).status is RunStatus.RUNNING
    with pytest.raises(RunFinishedError):  # the late worker learns it has been written off
        store.record_heartbeat(stale)


def test_progress_and_metrics_round_trip_in_step_order(store):
    run_id = running_run(store)
    points = [MetricPoint("optimize", start, 0, epoch, epoch, 5.0, 0.1 / (epoch + 1), 0.2)
              for epoch in (3, 1, 2) for start in (1, 0)]
    points.append(MetricPoint("optimize", 0, 0, 0, 0, 5.0, math.nan, 0.3))
    store.record_progress(run_id, progress=0.25, phase="optimize", stage=0, n_stages=2, epoch=3, n_epochs=10,
                          best_hard_r2=0.8, metrics=points)
    run = store.get_run(run_id)
    assert (run.progress, run.stage, run.n_stages, run.epoch, run.best_hard_r2) == (0.25, 0, 2, 3, 0.8)
    stored = store.list_metrics(run_id)
    assert [(m.step, m.start) for m in stored] == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]
    assert stored[0].soft_loss is None  # NaN is stored as unknown
    store.record_progress(run_id, progress=0.3, best_hard_r2=None)
    assert store.get_run(run_id).best_hard_r2 == 0.8  # not forgotten by a report without it


def test_artifacts_are_named_blobs_replaced_by_name(store):
    run_id = running_run(store)
    store.put_json(run_id, "model", {"depth": 2})
    store.put_artifact(run_id, "split", b"\x00\x01", "application/octet-stream")
    store.put_json(run_id, "model", {"depth": 3})
    assert store.list_artifacts(run_id) == ["model", "split"]
    assert store.get_json(run_id, "model") == {"depth": 3}
    assert store.get_artifact(run_id, "split").data == b"\x00\x01"
    assert store.get_artifact(run_id, "missing") is None


def test_deleting_removes_a_finished_run_whole_and_refuses_an_active_one(store):
    active = running_run(store)
    with pytest.raises(StoreError, match="cancel it first"):
        store.delete_run(active)
    done = finished_run(store)
    store.delete_run(done)
    with pytest.raises(RunNotFound):
        store.get_run(done)
    assert [r.run_id for r in store.list_runs()] == [active]
    assert store.get_dataset(active).data == DATASET  # the shared dataset stays while a run uses it


def test_runs_sharing_a_dataset_store_it_once(store):
    first, second = new_run(store), new_run(store)
    assert store.get_run(first).dataset_fingerprint == store.get_run(second).dataset_fingerprint
    other = new_run(store, dataset=b"a,b\n1,2\n")
    assert store.get_dataset(other).data == b"a,b\n1,2\n"


def test_list_runs_is_newest_first_and_filters_by_status(store):
    a, b, c = new_run(store), new_run(store), new_run(store)
    store.start_run(b)
    assert [r.run_id for r in store.list_runs()] == [c, b, a]
    assert [r.run_id for r in store.list_runs([RunStatus.RUNNING])] == [b]


def test_unknown_runs_and_empty_names_are_refused_with_a_message(store):
    with pytest.raises(RunNotFound, match="does not exist"):
        store.get_run(999)
    with pytest.raises(StoreError, match="cannot be empty"):
        store.rename_run(new_run(store), "   ")


def test_eta_extrapolates_from_progress(store):
    run = store.get_run(running_run(store))
    half = dataclasses.replace(run, progress=0.5)
    assert half.eta_seconds(now=run.started_at + 10) == pytest.approx(10)
    assert run.eta_seconds() is None  # no progress yet


def test_a_file_store_uses_wal_and_is_shared_by_separate_connections(tmp_path):
    path = tmp_path / "shared.sqlite"
    writer, reader = RunStore(path), RunStore(path)
    assert writer._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    run_id = new_run(writer)
    assert reader.get_run(run_id).status is RunStatus.QUEUED


def test_concurrent_claims_never_exceed_the_limit(tmp_path):
    path = tmp_path / "race.sqlite"
    setup = RunStore(path)
    for _ in range(12):
        new_run(setup)
    claimed: list[int] = []

    def claim() -> None:
        store = RunStore(path)  # one connection per thread, like separate processes
        while (run := store.claim_next_run(max_running=3)) is not None:
            claimed.append(run.run_id)

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == 3 and len(set(claimed)) == 3


def test_a_sessions_table_is_found_by_its_fingerprint_and_outlives_the_deletion_of_other_runs(store):
    fingerprint = store.put_dataset(b"a,b\n1,2\n", "chosen.csv")
    assert fingerprint == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    store.delete_run(finished_run(store))  # that run's own table goes; the session's stays
    found = store.find_dataset(fingerprint[:16].upper())
    assert (found.name, found.data) == ("chosen.csv", b"a,b\n1,2\n")
    with pytest.raises(StoreError, match="may have been deleted"):
        store.find_dataset(hashlib.sha256(DATASET).hexdigest()[:16])
    with pytest.raises(StoreError, match="not a dataset fingerprint"):
        store.find_dataset("abc")


def test_a_table_no_run_uses_is_dropped_a_week_after_its_last_put(store, monkeypatch):
    old = store.put_dataset(b"old", "old.csv")
    kept = store.put_dataset(DATASET, "kept.csv")
    used = new_run(store)  # uses DATASET
    later = time.time() + KEEP_UNUSED_DATASET_S + 60
    monkeypatch.setattr(time, "time", lambda: later)
    store.put_dataset(b"new", "new.csv")
    with pytest.raises(StoreError):
        store.find_dataset(old)
    assert store.find_dataset(kept).data == DATASET and store.get_dataset(used).data == DATASET


def test_a_store_written_before_metric_points_had_an_accuracy_gains_the_column_and_keeps_its_points(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    store = RunStore(path)
    run_id = running_run(store)
    store.record_progress(run_id, progress=0.5, metrics=[MetricPoint("optimize", 0, 0, 1, 1, 5.0, 0.2, 0.1, 0.75)])
    store.close()
    with sqlite3.connect(path) as conn:  # the metrics table as stores wrote it before the accuracy column
        conn.executescript("""
            CREATE TABLE old_metrics AS SELECT run_id, phase, start, stage, epoch, step, alpha, soft_loss, hard_loss
                FROM metrics;
            DROP TABLE metrics;
            ALTER TABLE old_metrics RENAME TO metrics;""")
    reopened = RunStore(path)
    assert reopened.list_metrics(run_id) == [MetricPoint("optimize", 0, 0, 1, 1, 5.0, 0.2, 0.1, None)]
    reopened.record_progress(run_id, progress=0.6, metrics=[MetricPoint("optimize", 0, 0, 2, 2, 5.0, 0.2, 0.1, 0.8)])
    assert [p.hard_accuracy for p in reopened.list_metrics(run_id)] == [None, 0.8]
    reopened.close()
    assert RunStore(path).list_metrics(run_id)[-1].hard_accuracy == 0.8  # opening again adds nothing twice
