"""A wrong ``GET_EXPLORER_DB`` is refused with the store's own sentence, and the file it names is left as it was."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from get_core.runs.store import DB_ENV, RunStore, StoreReplaced, StoreUnavailable

ROOT = Path(__file__).resolve().parents[2]


def filled_store(path: Path, runs: int = 5) -> Path:
    store = RunStore(path)
    for _ in range(runs):
        store.create_run({"seed": 0}, os.urandom(20_000), "noise.bin", n_rows=1, n_features=1)
    store.close()
    return path


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    """Make a file or directory unwritable for this process, root included (``chattr +i``), undone afterwards."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o555 if path.is_dir() else 0o444)
        elif shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)],
                                                              capture_output=True).returncode != 0:
            pytest.skip("running as root, and this filesystem has no immutable flag (chattr +i): root could write")
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o755 if path.is_dir() else 0o644)


def under_a_file(tmp: Path, read_only) -> Path:
    (tmp / "notes.txt").write_text("my notes")
    return tmp / "notes.txt" / "runs.sqlite"


def a_directory(tmp: Path, read_only) -> Path:
    (tmp / "store").mkdir()
    return tmp / "store"


def an_unwritable_directory(tmp: Path, read_only) -> Path:
    (tmp / "locked").mkdir()
    read_only(tmp / "locked")
    return tmp / "locked" / "runs.sqlite"


def garbage_bytes(tmp: Path, read_only) -> Path:
    path = tmp / "runs.sqlite"
    path.write_bytes(os.urandom(5000))
    return path


def a_truncated_database(tmp: Path, read_only) -> Path:
    path = filled_store(tmp / "runs.sqlite")
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size // 2)
    return path


def a_read_only_database(tmp: Path, read_only) -> Path:
    path = filled_store(tmp / "runs.sqlite")
    read_only(path)
    return path


def another_programs_database(tmp: Path, read_only) -> Path:
    path = tmp / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ada')")
    return path


CASES = {  # how to build the bad path, and the words the message must hold
    "under a file": (under_a_file, "is a file, not a directory"),
    "a directory": (a_directory, "which is a directory: set GET_EXPLORER_DB to a file path such as"),
    "an unwritable directory": (an_unwritable_directory, "cannot be written"),
    "garbage bytes": (garbage_bytes, "which is not a SQLite database; it is left untouched"),
    "a truncated database": (a_truncated_database, "which is damaged"),
    "a read-only database": (a_read_only_database, "which is read-only: make it writable"),
    "another program's database": (another_programs_database, "a SQLite database of another program (tables: users)"),
}


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` with its bytes (None for directories): what 'nothing is lost' compares."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_database_path_is_refused_with_a_sentence_and_nothing_is_changed(case, tmp_path, monkeypatch, read_only):
    build, words = CASES[case]
    path = build(tmp_path, read_only)
    monkeypatch.setenv(DB_ENV, str(path))
    before = snapshot(tmp_path)
    with pytest.raises(StoreUnavailable) as refused:
        RunStore()
    message = str(refused.value)
    assert message.startswith(f"GET_EXPLORER_DB points to '{path}', ") and words in message
    assert message.endswith(".") and "\n" not in message and "Errno" not in message
    assert snapshot(tmp_path) == before


def test_a_damage_found_after_opening_is_the_stores_error_too(tmp_path):
    path = filled_store(tmp_path / "runs.sqlite", runs=40)
    store = RunStore(path)
    run_id = store.list_runs()[0].run_id
    with open(path, "r+b") as file:  # truncated under an open store: only the next read of a lost page sees it
        file.truncate(8192)
    with pytest.raises(StoreUnavailable, match="which is damaged"):
        store.get_dataset(run_id)
    store.close()


def test_a_worker_with_a_bad_database_exits_with_one_line_and_no_traceback(tmp_path):
    env = {**os.environ, DB_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "get_core.runs.worker", "1"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"run 1: GET_EXPLORER_DB points to '{tmp_path}', which is a "
                                                f"directory: set GET_EXPLORER_DB to a file path such as "
                                                f"{tmp_path / 'runs.sqlite'}."]


def test_the_pages_show_the_stores_sentence_for_a_bad_database(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(DB_ENV, str(tmp_path))
    for page in ("runs", "train"):
        at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=60).run()
        assert not at.exception, [e.message for e in at.exception]
        shown = [e.value.replace("\\", "") for e in at.error]  # without the escapes that keep Markdown literal
        assert shown == [f"GET_EXPLORER_DB points to '{tmp_path}', which is a directory: set GET_EXPLORER_DB to a "
                         f"file path such as {tmp_path / 'runs.sqlite'}."], page
        assert not at.warning


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_a_database_deleted_under_an_open_store_is_said_and_never_started_afresh(tmp_path):
    path = filled_store(tmp_path / "runs.sqlite")
    store = RunStore(path)
    assert len(store.list_runs()) == 5
    _remove_database(path)
    with pytest.raises(StoreReplaced, match="which was deleted while GET Explorer had it open"):
        store.list_runs()
    with pytest.raises(StoreReplaced):
        store.create_run({"seed": 0}, b"x", "t.bin", n_rows=1, n_features=1)
    assert not path.exists()  # nothing was written where the runs were
    store.close()


def test_a_database_replaced_under_an_open_store_is_said(tmp_path):
    path = filled_store(tmp_path / "runs.sqlite")
    store = RunStore(path)
    _remove_database(path)
    filled_store(path, runs=1)  # another, empty-ish store at the same path
    with pytest.raises(StoreReplaced, match="replaced by another file"):
        store.list_runs()
    store.close()


@pytest.mark.slow
def test_a_running_workers_database_deleted_ends_the_worker_with_a_sentence_in_its_log(tmp_path, monkeypatch):
    from get_core.runs import launch
    from tests.runs.test_worker import LONG, submit, wait_for

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv(DB_ENV, str(path))
    store = RunStore(path, heartbeat_grace=3.0)
    run_id = submit(store, LONG)
    store.start_run(run_id)
    worker = launch.spawn_worker(store, run_id)
    wait_for(lambda: store.get_run(run_id).progress > 0, 90)
    _remove_database(path)
    worker.wait(timeout=60)
    log = launch.log_path(store, f"run-{run_id}").read_text()
    assert "which was deleted while GET Explorer had it open" in log, log[-2000:]
    assert not path.exists()
    with pytest.raises(StoreReplaced):
        store.get_run(run_id)
    store.close()


def test_a_stale_run_on_a_full_disk_names_the_full_disk(tmp_path, monkeypatch):
    from get_core.runs import dbfile
    from get_core.runs.records import RunStatus

    store = RunStore(filled_store(tmp_path / "runs.sqlite", runs=1), heartbeat_grace=1.0)
    run_id = store.list_runs()[0].run_id
    store.start_run(run_id)
    monkeypatch.setattr(dbfile, "LOW_DISK_BYTES", 1 << 62)  # every real disk has less free space than this
    assert store.fail_stale_runs(now=store.get_run(run_id).heartbeat_at + 10) == [run_id]
    run = store.get_run(run_id)
    assert run.status is RunStatus.FAILED and "stopped sending heartbeats" in run.error
    assert f"The disk holding '{tmp_path.resolve()}' is full" in run.error
    store.close()


def test_a_worker_failure_on_a_full_disk_names_the_disk():
    import errno

    from get_core.runs.training import describe

    assert describe(OSError(errno.ENOSPC, "No space left on device")).startswith("The disk is full")


def test_a_run_whose_heartbeats_the_store_refused_fails_naming_that_cause_not_a_crash(tmp_path):
    """Issue 50: a store made unwritable under a running run ended it as "the worker stopped sending heartbeats",
    which reads as a crash; the worker logs each refused heartbeat with the store's sentence, and the run's error
    names the last one once the store takes writes again."""
    from get_core.runs import launch

    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.create_run({"config": {}}, b"data", "t.csv", n_rows=1, n_features=1)
    store.start_run(run_id)
    log = launch.log_path(store, f"run-{run_id}")
    log.parent.mkdir(parents=True, exist_ok=True)
    refusal = "The run store runs.sqlite cannot be written (attempt to write a readonly database)."
    log.write_text("x" * (2 * launch.LOG_TAIL_BYTES) + "\n"  # an old, long log: only its end is read
                   + f"run {run_id}{launch.HEARTBEAT_REFUSED}first trouble\n"
                   + f"run {run_id}{launch.HEARTBEAT_REFUSED}{refusal}\n")
    assert launch.store_trouble(log) == refusal
    assert launch.store_trouble(tmp_path / "no-such.log") is None
    later = time.time() + 10 * store.heartbeat_grace
    assert store.fail_stale_runs(now=later, cause=lambda rid: launch.store_trouble(launch.log_path(store, f"run-{rid}")))
    error = store.get_run(run_id).error
    assert refusal in error and "could not be written" in error and "crashed" not in error
    other = store.create_run({"config": {}}, b"data", "t.csv", n_rows=1, n_features=1)
    store.start_run(other)  # no log at all: the plain sentence
    store.fail_stale_runs(now=later + 1, cause=lambda rid: launch.store_trouble(launch.log_path(store, f"run-{rid}")))
    assert "stopped sending heartbeats" in store.get_run(other).error
