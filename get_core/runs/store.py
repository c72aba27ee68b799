"""The run store: one SQLite database that outlives browsers, app restarts and worker crashes.

Contract
--------
Tables: ``runs`` (one row per run, with its ``owner``), ``metrics`` (per run, phase, start, stage and epoch: alpha,
soft and hard loss), ``artifacts`` (per run, named blobs: model JSON, split, predictions, encoding, baselines, ...),
``datasets`` (the training table as Parquet bytes, keyed by its SHA-256 fingerprint, shared by the runs that use it;
the app also keeps a session's chosen table there with ``put_dataset``, so that a reloaded page finds it again),
``dataset_owners`` (whose tables they are) and ``review_links`` (a token's digest, its run, expiry and revocation).

Who sees what (``get_core.runs.access``): a store opened here reaches every run (workers, the queue, tests);
``scoped(scope)`` gives a session's view over the same connection, which reaches one owner's runs and tables only
(another owner's run raises RunNotFound exactly as a missing one), or through a review link one run read-only (its
writes raise AccessDenied, a revoked or expired link ReviewLinkInvalid). Every per-run call checks the scope in its
own transaction (``_status_of``); ``list_runs`` and ``find_dataset`` filter in SQL. The queue's calls
(``claim_next_run``, ``fail_stale_runs``, the counts) serve every owner whoever calls them.

Who writes what:
  * the app (pages, through ``launch``), in the session's scope: ``create_run`` (a QUEUED run with its parameters
    and dataset), ``rename_run``, ``request_cancel``, ``delete_run``, the review links, and ``add_baselines`` (a
    finished run that kept a model but no baselines, typically one cancelled while training, gets them once, fitted
    later on its stored split);
  * the launcher (run by the app, by a worker that ends, or by the queue's supervisor): ``claim_next_run``
    (QUEUED -> RUNNING in the fair order, counted against the concurrency limits in the same transaction),
    ``set_worker_pid``, ``fail_stale_runs``, and ``set_status`` FAILED for a worker it could not start;
  * the worker of a run, and only while the run is RUNNING: ``record_heartbeat``, ``record_progress`` (progress
    fields and metrics), ``put_artifact``, and ``set_status`` to FINISHED / FAILED / CANCELLED with its results.

Invariants:
  * the lifecycle is ``RunStatus``: QUEUED -> RUNNING -> FINISHED | FAILED | CANCELLED, or QUEUED -> CANCELLED |
    FAILED; any other transition raises ``InvalidTransition``;
  * a finished run is immutable: every write to it raises ``RunFinishedError``, except ``rename_run`` (its label),
    ``add_baselines`` (a missing comparison, written once, nothing else changed) and ``delete_run`` (which removes
    it whole). Only a finished run can be deleted;
  * a RUNNING run whose heartbeat is older than ``heartbeat_grace`` seconds is stale: ``fail_stale_runs`` marks it
    FAILED with the reason; a late write from its worker then raises ``RunFinishedError`` and the worker stops;
  * reads return frozen dataclasses (``Run``, ``MetricPoint``, ``Artifact``, defined with the lifecycle and the
    errors in ``get_core.runs.records``), never rows or live objects;
  * every call is one transaction through ``_transaction`` (``BEGIN IMMEDIATE`` for writes, so a read-check-write
    such as claiming a queue slot is atomic across processes). Times are wall-clock seconds (``time.time()``).

The database path comes from the ``GET_EXPLORER_DB`` environment variable, else ``.get_explorer/runs.sqlite`` in
the repository. A file database uses WAL mode (the worker writes while pages read); ``":memory:"`` serves tests.
A path that is not, or cannot become, a store raises ``StoreUnavailable`` with a sentence, and so does a problem of
the file found later (``get_core.runs.dbfile``); nothing is written to such a file.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from get_core.runs import access, dbfile
from get_core.runs.access import LOCAL_OWNER, AccessDenied, ReviewLink, ReviewLinkInvalid, Scope
from get_core.runs.dbfile import DB_ENV
from get_core.runs.records import (Artifact, InvalidTransition, MetricPoint, Run, RunFinishedError, RunNotFound,
                                   RunStatus, StoreError, StoreReplaced, StoreUnavailable)

GRACE_ENV = "GET_EXPLORER_HEARTBEAT_GRACE"
DEFAULT_DB = Path(__file__).resolve().parents[2] / ".get_explorer" / "runs.sqlite"
KEEP_UNUSED_DATASET_S = 7 * 24 * 3600.0  # a table no run uses is kept this long after a session last put it
HEARTBEAT_GRACE_S = 30.0  # workers beat every second; 30 s tolerates a loaded machine without hiding a dead worker
SCHEMA_VERSION = 1
PARQUET = "application/vnd.apache.parquet"
JSON = "application/json"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY, name TEXT NOT NULL, media_type TEXT NOT NULL, data BLOB NOT NULL,
    created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, status TEXT NOT NULL, params TEXT NOT NULL,
    dataset_name TEXT NOT NULL, dataset_fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint),
    n_rows INTEGER NOT NULL, n_features INTEGER NOT NULL,
    created_at REAL NOT NULL, started_at REAL, finished_at REAL, heartbeat_at REAL, worker_pid INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0, progress REAL NOT NULL DEFAULT 0, phase TEXT, stage INTEGER,
    n_stages INTEGER, epoch INTEGER, n_epochs INTEGER, best_hard_r2 REAL, test_r2 REAL, test_rmse REAL,
    error TEXT, owner TEXT NOT NULL DEFAULT 'local');
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);
CREATE TABLE IF NOT EXISTS dataset_owners (
    fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint) ON DELETE CASCADE, owner TEXT NOT NULL,
    PRIMARY KEY (fingerprint, owner));
CREATE TABLE IF NOT EXISTS review_links (
    digest TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    created_at REAL NOT NULL, expires_at REAL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, phase TEXT NOT NULL, start INTEGER NOT NULL,
    stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL, alpha REAL, soft_loss REAL,
    hard_loss REAL, hard_accuracy REAL, PRIMARY KEY (run_id, phase, start, stage, epoch));
CREATE TABLE IF NOT EXISTS artifacts (
    run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, name TEXT NOT NULL,
    media_type TEXT NOT NULL, data BLOB NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, name));
"""

_RUN_COLUMNS = ("run_id", "name", "status", "params", "dataset_name", "dataset_fingerprint", "n_rows", "n_features",
                "created_at", "started_at", "finished_at", "heartbeat_at", "worker_pid", "cancel_requested",
                "progress", "phase", "stage", "n_stages", "epoch", "n_epochs", "best_hard_r2", "test_r2",
                "test_rmse", "error", "owner")


#: Columns added to a table after stores were first written: (table, column, SQL type). A store from before gains them
#: when opened (SQLite's ALTER TABLE ADD COLUMN; the old rows read NULL there).
_ADDED_COLUMNS = (("metrics", "hard_accuracy", "REAL"),)


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    for table, column, kind in _ADDED_COLUMNS:
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it between the check and here
                if "duplicate column" not in str(exc):
                    raise


def _add_owners(conn: sqlite3.Connection) -> None:
    """A store from before owners gains the ``owner`` column with every run, and every kept table, the local
    user's: the single-user app's runs stay where they were."""
    if "owner" not in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '{LOCAL_OWNER}'")
            conn.execute("INSERT OR IGNORE INTO dataset_owners SELECT fingerprint, ? FROM datasets", (LOCAL_OWNER,))
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:  # another process migrated it between the check and here
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "duplicate column" not in str(exc):
                raise
    conn.execute("CREATE INDEX IF NOT EXISTS runs_by_owner ON runs(owner, status)")


def default_db_path() -> str:
    return os.environ.get(DB_ENV) or str(DEFAULT_DB)


class RunStore:
    """All access to the run database (see the module docstring for the contract).

    One instance holds one connection guarded by a lock, so it may be shared by the threads of a process (the
    Streamlit server's sessions, a worker's heartbeat thread); separate processes open their own instances.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, heartbeat_grace: float | None = None) -> None:
        self.path = str(path) if path is not None else default_db_path()
        grace = heartbeat_grace if heartbeat_grace is not None else os.environ.get(GRACE_ENV, HEARTBEAT_GRACE_S)
        self.heartbeat_grace = float(grace)
        self._lock = threading.RLock()
        self._conn = self._open()
        self._identity = self._file_identity()  # (device, inode) of the file opened: see ``_check_identity``
        self._scope: Scope | None = None  # None: every run (workers, the queue, tests); see ``scoped``
        self._base = self

    def scoped(self, scope: Scope) -> RunStore:
        """This store as one session may use it: ``scope``'s own runs and tables only (another owner's run reads as
        one that does not exist), or one run read-only through a review link. It shares this store's connection."""
        view = copy.copy(self)
        view._scope = scope
        return view

    @property
    def unscoped(self) -> RunStore:
        """The store every run is reached through: the queue's work (claiming, starting, failing stale runs)
        serves all owners, whichever session's render calls it."""
        return self._base

    def _open(self) -> sqlite3.Connection:
        """Connect and create the schema, refusing (``StoreUnavailable``) a path that is not, or cannot become, a
        store; another program's file is never written to (see ``get_core.runs.dbfile``)."""
        if self.is_file:
            dbfile.check_path(self.path)
        conn = None
        try:
            if self.is_file:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            dbfile.check_tables(self.path, {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")})
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA busy_timeout = 30000")
            if self.is_file:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)  # executescript commits on its own; the DDL is idempotent
            _add_missing_columns(conn)
            _add_owners(conn)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, (OSError, sqlite3.Error)):
                raise dbfile.cannot_open(self.path, exc) from exc
            raise
        return conn

    def _file_identity(self) -> tuple[int, int] | None:
        """The opened file's (device, inode); None for ``:memory:`` or a file no longer at the path."""
        if not self.is_file:
            return None
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def _check_identity(self) -> None:
        """Refuse (``StoreReplaced``) once the file this store opened was deleted or replaced: SQLite would go on
        writing to the unlinked file, and a new process would start an empty store at the path, both in silence."""
        if self.is_file and self._identity is not None:
            now = self._file_identity()
            if now != self._identity:
                raise dbfile.replaced(self.path, gone=now is None)

    @property
    def is_file(self) -> bool:
        return self.path != ":memory:"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------------------------------ plumbing
    @contextmanager
    def _transaction(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The one way in: a transaction (IMMEDIATE for writes) committed on success, rolled back on error; a
        problem with the file itself (damaged, read-only, full disk, locked too long) raises ``StoreUnavailable``."""
        with self._lock:
            self._check_identity()
            try:
                self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                unavailable = dbfile.explain(self.path, exc)
                if unavailable is None:  # a query's own error (a constraint, a bug): not the file's
                    raise
                raise unavailable from exc

    def _exists(self, where: str, args: tuple) -> bool:
        with self._transaction() as db:
            return db.execute(f"SELECT 1 FROM runs WHERE {where} LIMIT 1", args).fetchone() is not None

    def _status_of(self, db: sqlite3.Connection, run_id: int, *, write: bool = False) -> RunStatus:
        """The run's status, when this store's scope reaches it: another owner's run is RunNotFound, as a missing
        one; a review link reaches its one run, and ``write`` not at all (AccessDenied)."""
        row = db.execute("SELECT status, owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        scope = self._scope
        if scope is not None and scope.read_only:
            if self._review_run(db) != run_id:
                row = None
            elif write:
                raise AccessDenied("A review link shows its run read-only: training, renaming, cancelling, "
                                   "deleting and sharing are for the run's owner.")
        elif scope is not None and row is not None and row[1] != scope.owner:
            row = None
        if row is None:
            raise RunNotFound(f"Run {run_id} does not exist (it may have been deleted).")
        return RunStatus(row[0])

    def _review_run(self, db: sqlite3.Connection) -> int:
        """The run this store's review link opens; ReviewLinkInvalid once it is revoked or expired."""
        row = db.execute("SELECT run_id FROM review_links WHERE digest = ? AND revoked_at IS NULL AND "
                         "(expires_at IS NULL OR expires_at > ?)",
                         (access.token_digest(self._scope.review_token), time.time())).fetchone()
        if row is None:
            raise ReviewLinkInvalid()
        return int(row[0])

    def _owner(self, owner: str | None = None) -> str:
        """Whose a new run or table is: the scope's owner (a review link owns nothing), else ``owner`` (tests,
        scripts), else the local user."""
        if self._scope is None:
            return owner or LOCAL_OWNER
        if self._scope.read_only:
            raise AccessDenied("A review link shows one run read-only: sign in to train or keep tables of your own.")
        if owner is not None and owner != self._scope.owner:
            raise AccessDenied("A session keeps runs and tables in its own workspace only.")
        return self._scope.owner

    def _visible(self, db: sqlite3.Connection) -> tuple[str, tuple]:
        """A WHERE clause (and its arguments) for the runs this store's scope reaches."""
        if self._scope is None:
            return "1", ()
        if self._scope.read_only:
            return "run_id = ?", (self._review_run(db),)
        return "owner = ?", (self._scope.owner,)

    def _require_running(self, db: sqlite3.Connection, run_id: int) -> None:
        """A worker's write: RunFinishedError on a finished run (the worker stops), InvalidTransition on one that
        has not started."""
        status = self._status_of(db, run_id, write=True)
        if status.is_finished():
            raise RunFinishedError(f"Run {run_id} is {status.value}; finished runs are immutable.")
        if status is not RunStatus.RUNNING:
            raise InvalidTransition(f"Run {run_id} is {status.value}; only a RUNNING run's worker writes to it.")

    # ------------------------------------------------------------------------------------------ app writes
    def create_run(self, params: Mapping[str, Any], dataset: bytes, dataset_name: str, *, n_rows: int,
                   n_features: int, name: str | None = None, media_type: str = PARQUET, owner: str | None = None,
                   max_queued: int | None = None) -> int:
        """Queue a new run of this store's owner (``owner`` for an unscoped store; else the local user's);
        ``dataset`` (the training table) is stored once per fingerprint. A ``name`` another of the owner's runs has
        gets a suffix (" (2)", " (3)"...), so that the Runs page's pickers tell the runs apart. StoreError when the
        owner already has ``max_queued`` runs waiting."""
        owner = self._owner(owner)
        digest = hashlib.sha256(dataset).hexdigest()  # equals get_core.data.columns.fingerprint
        now = time.time()
        with self._transaction(write=True) as db:
            waiting = db.execute("SELECT COUNT(*) FROM runs WHERE owner = ? AND status = ?",
                                 (owner, RunStatus.QUEUED.value)).fetchone()[0]
            if max_queued is not None and waiting >= max_queued:
                raise StoreError(f"You already have {waiting} runs waiting (at most {max_queued} per user on this "
                                 "server): wait for one to start, or cancel one on the Runs page.")
            db.execute("INSERT OR IGNORE INTO datasets VALUES (?, ?, ?, ?, ?)",
                       (digest, dataset_name, media_type, dataset, now))
            db.execute("INSERT OR IGNORE INTO dataset_owners VALUES (?, ?)", (digest, owner))
            cursor = db.execute(
                "INSERT INTO runs (name, status, params, dataset_name, dataset_fingerprint, n_rows, n_features, "
                "created_at, owner) VALUES ('', ?, ?, ?, ?, ?, ?, ?, ?)",
                (RunStatus.QUEUED.value, json.dumps(dict(params), sort_keys=True), dataset_name, digest,
                 int(n_rows), int(n_features), now, owner))
            run_id = int(cursor.lastrowid)
            taken = {row[0] for row in db.execute("SELECT name FROM runs WHERE run_id != ? AND owner = ?",
                                                  (run_id, owner))}
            db.execute("UPDATE runs SET name = ? WHERE run_id = ?",
                       (unique_name(name or f"run {run_id}", taken), run_id))
        return run_id

    def rename_run(self, run_id: int, name: str) -> None:
        name = name.strip()
        if not name:
            raise StoreError("A run name cannot be empty: type a name.")
        with self._transaction(write=True) as db:
            self._status_of(db, run_id, write=True)
            db.execute("UPDATE runs SET name = ? WHERE run_id = ?", (name[:200], run_id))

    def add_baselines(self, run_id: int, baselines: Mapping[str, Any]) -> None:
        """Store the ``baselines`` artifact of a finished run that has a model and none yet (the worker stopped
        before fitting them); StoreError for a run still going, without a model, or with baselines already."""
        blob = json.dumps(baselines, allow_nan=False).encode("utf-8")
        with self._transaction(write=True) as db:
            status = self._status_of(db, run_id, write=True)
            names = {r[0] for r in db.execute("SELECT name FROM artifacts WHERE run_id = ?", (run_id,))}
            if not status.is_finished() or "model" not in names or "baselines" in names:
                raise StoreError(f"Run {run_id} cannot take baselines now: only a finished run with a model and no "
                                 "baselines can.")
            db.execute("INSERT INTO artifacts VALUES (?, ?, ?, ?, ?)", (run_id, "baselines", JSON, blob, time.time()))

    def request_cancel(self, run_id: int) -> RunStatus:
        """Cancel a QUEUED run at once; ask a RUNNING run's worker to stop (it keeps its best model so far)."""
        with self._transaction(write=True) as db:
            status = self._status_of(db, run_id, write=True)
            if status is RunStatus.QUEUED:
                db.execute("UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?",
                           (RunStatus.CANCELLED.value, time.time(), "Cancelled before it started.", run_id))
                return RunStatus.CANCELLED
            if status is RunStatus.RUNNING:
                db.execute("UPDATE runs SET cancel_requested = 1 WHERE run_id = ?", (run_id,))
            return status

    def delete_run(self, run_id: int) -> None:
        """Remove a finished run with its metrics and artifacts (and its dataset if no other run uses it)."""
        with self._transaction(write=True) as db:
            status = self._status_of(db, run_id, write=True)
            if not status.is_finished():
                raise StoreError(f"Run {run_id} is {status.value}: cancel it first, then delete it.")
            fingerprint = db.execute("SELECT dataset_fingerprint FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM datasets WHERE fingerprint = ? AND fingerprint NOT IN "
                       "(SELECT dataset_fingerprint FROM runs)", (fingerprint,))
            _drop_old_unused_datasets(db, time.time())

    def put_dataset(self, dataset: bytes, name: str, media_type: str = PARQUET) -> str:
        """Keep a table no run may use yet (a session's chosen data, found again after a reload by
        ``find_dataset``); returns its fingerprint. Tables no run uses go ``KEEP_UNUSED_DATASET_S`` after their
        last put. The table is this store's owner's: ``find_dataset`` finds it for that owner only."""
        owner = self._owner()
        digest = hashlib.sha256(dataset).hexdigest()
        now = time.time()
        with self._transaction(write=True) as db:
            _drop_old_unused_datasets(db, now)
            db.execute("INSERT INTO datasets VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET "
                       "created_at = excluded.created_at", (digest, name, media_type, dataset, now))
            db.execute("INSERT OR IGNORE INTO dataset_owners VALUES (?, ?)", (digest, owner))
        return digest

    def find_dataset(self, prefix: str) -> Artifact:
        """The stored table of this store's owner whose fingerprint starts with ``prefix`` (at least 8 hex digits);
        StoreError in words when there is none, or more than one (another owner's table is none)."""
        prefix = str(prefix).strip().lower()
        if not 8 <= len(prefix) <= 64 or any(c not in "0123456789abcdef" for c in prefix):
            raise StoreError(f"'{prefix[:70]}' is not a dataset fingerprint (8 to 64 hex digits).")
        mine, args = ("", ()) if self._scope is None else (
            " AND fingerprint IN (SELECT fingerprint FROM dataset_owners WHERE owner = ?)", (self._owner(),))
        with self._transaction() as db:
            rows = db.execute("SELECT name, media_type, data, created_at FROM datasets WHERE fingerprint >= ? AND "
                              f"fingerprint < ?{mine} LIMIT 2", (prefix, prefix + "g", *args)).fetchall()
        if len(rows) != 1:
            raise StoreError(f"No single stored dataset has the fingerprint {prefix}: "
                             + ("it may have been deleted with its runs." if not rows else "it is ambiguous."))
        return Artifact(rows[0][0], rows[0][1], bytes(rows[0][2]), rows[0][3])

    # ------------------------------------------------------------------------------------------ review links
    def create_review_link(self, run_id: int, expires_in: float | None = None) -> str:
        """A new read-only link to one of the owner's runs (``expires_in`` seconds, or until revoked); returns the
        token, which is stored only as its digest: the owner sees it this once."""
        if expires_in is not None and not expires_in > 0:
            raise StoreError("A review link's lifetime must be a positive number of seconds (or none).")
        token, now = access.new_token(), time.time()
        with self._transaction(write=True) as db:
            self._status_of(db, run_id, write=True)
            db.execute("INSERT INTO review_links VALUES (?, ?, ?, ?, NULL)",
                       (access.token_digest(token), run_id, now, None if expires_in is None else now + expires_in))
        return token

    def list_review_links(self, run_id: int) -> list[ReviewLink]:
        """The run's review links, newest first (revoked and expired ones too, so the owner sees what happened)."""
        with self._transaction() as db:
            self._status_of(db, run_id, write=True)
            rows = db.execute("SELECT digest, run_id, created_at, expires_at, revoked_at FROM review_links "
                              "WHERE run_id = ? ORDER BY created_at DESC", (run_id,)).fetchall()
        return [ReviewLink(row[0][:12], *row[1:]) for row in rows]

    def revoke_review_link(self, run_id: int, link_id: str) -> None:
        """Stop a review link of the run (``link_id`` from ``list_review_links``) from working, at once."""
        with self._transaction(write=True) as db:
            self._status_of(db, run_id, write=True)
            db.execute("UPDATE review_links SET revoked_at = COALESCE(revoked_at, ?) WHERE run_id = ? AND "
                       "substr(digest, 1, 12) = ?", (time.time(), run_id, str(link_id)))

    def review_run_id(self, token: str) -> int:
        """The run a review link opens; ReviewLinkInvalid (one sentence) when revoked, expired or unknown."""
        with self._transaction() as db:
            return self.scoped(Scope(review_token=str(token)))._review_run(db)

    # ------------------------------------------------------------------------------------------ launcher writes
    def claim_next_run(self, max_running: int, max_running_per_owner: int | None = None) -> Run | None:
        """Move the next QUEUED run in the fair order (``access.fair_next``: every owner's first run before
        anyone's second) to RUNNING if fewer than ``max_running`` runs are RUNNING, and fewer than
        ``max_running_per_owner`` of its owner's; else None. Every owner's: the queue serves them all."""
        now = time.time()
        if not self._exists("status = ?", (RunStatus.QUEUED.value,)):  # the common case: skip the write lock
            return None
        with self._transaction(write=True) as db:
            running = dict(db.execute("SELECT owner, COUNT(*) FROM runs WHERE status = ? GROUP BY owner",
                                      (RunStatus.RUNNING.value,)).fetchall())
            if sum(running.values()) >= max_running:
                return None
            queued = db.execute("SELECT run_id, owner, created_at FROM runs WHERE status = ? ORDER BY run_id",
                                (RunStatus.QUEUED.value,)).fetchall()
            if not queued:
                return None
            waited_since = min(row[2] for row in queued)
            served = dict(db.execute(
                "SELECT owner, COUNT(*) FROM runs WHERE started_at IS NOT NULL AND (finished_at IS NULL OR "
                "finished_at >= ?) GROUP BY owner", (waited_since,)).fetchall())
            run_id = access.fair_next([row[:2] for row in queued], served, running, max_running_per_owner)
            if run_id is None:
                return None
            self._start(db, run_id, now)
            return self._get(db, run_id)

    def start_run(self, run_id: int) -> Run:
        """QUEUED -> RUNNING for this run regardless of the queue (a worker started by hand, tests)."""
        with self._transaction(write=True) as db:
            status = self._status_of(db, run_id, write=True)
            if status.is_finished():
                raise RunFinishedError(f"Run {run_id} is already {status.value}; finished runs are immutable.")
            if status is not RunStatus.QUEUED:
                raise InvalidTransition(f"Run {run_id} is {status.value}, not QUEUED: it cannot be started.")
            self._start(db, run_id, time.time())
            return self._get(db, run_id)

    @staticmethod
    def _start(db: sqlite3.Connection, run_id: int, now: float) -> None:
        db.execute("UPDATE runs SET status = ?, started_at = ?, heartbeat_at = ? WHERE run_id = ?",
                   (RunStatus.RUNNING.value, now, now, run_id))

    def set_worker_pid(self, run_id: int, pid: int) -> None:
        with self._transaction(write=True) as db:
            self._require_running(db, run_id)
            db.execute("UPDATE runs SET worker_pid = ? WHERE run_id = ?", (int(pid), run_id))

    def fail_stale_runs(self, now: float | None = None,
                        cause: Callable[[int], str | None] | None = None) -> list[int]:
        """Mark FAILED every RUNNING run whose heartbeat is older than the grace period; returns their ids.
        ``cause(run_id)``, when given, says why a run's worker fell silent where it knows (its heartbeats could not
        be written: the store was unwritable); the run's error then names it instead of a crash."""
        now = time.time() if now is None else now
        stale = (RunStatus.RUNNING.value, now - self.heartbeat_grace)
        if not self._exists("status = ? AND heartbeat_at < ?", stale):  # the common case: skip the write lock
            return []
        disk = dbfile.disk_note(self.path) if self.is_file else ""
        with self._transaction(write=True) as db:
            rows = db.execute("SELECT run_id, heartbeat_at FROM runs WHERE status = ? AND heartbeat_at < ?",
                              stale).fetchall()
            for run_id, beat in rows:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(beat))
                known = cause(run_id) if cause is not None else None
                reason = (f"Interrupted: the worker's heartbeats could not be written after {stamp}: {known} "
                          "Make the run store writable again, then start the run again." if known else
                          f"Interrupted: the worker stopped sending heartbeats at {stamp} (silent for more than "
                          f"{self.heartbeat_grace:g} s). It was killed, crashed, or the machine restarted; "
                          "start the run again.") + disk
                db.execute("UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?",
                           (RunStatus.FAILED.value, now, reason, run_id))
        return [row[0] for row in rows]

    # ------------------------------------------------------------------------------------------ worker writes
    def record_heartbeat(self, run_id: int) -> bool:
        """Note that the worker is alive; returns True when cancellation was requested."""
        with self._transaction(write=True) as db:
            self._require_running(db, run_id)
            db.execute("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?", (time.time(), run_id))
            return bool(db.execute("SELECT cancel_requested FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])

    def record_progress(self, run_id: int, *, progress: float, phase: str | None = None, stage: int | None = None,
                        n_stages: int | None = None, epoch: int | None = None, n_epochs: int | None = None,
                        best_hard_r2: float | None = None, metrics: Iterable[MetricPoint] = ()) -> bool:
        """Progress fields plus new metric points, and a heartbeat; returns True when cancellation was requested."""
        rows = [(run_id, m.phase, m.start, m.stage, m.epoch, m.step, _finite(m.alpha), _finite(m.soft_loss),
                 _finite(m.hard_loss), _finite(m.hard_accuracy)) for m in metrics]
        with self._transaction(write=True) as db:
            self._require_running(db, run_id)
            db.execute("UPDATE runs SET progress = ?, phase = ?, stage = ?, n_stages = ?, epoch = ?, n_epochs = ?, "
                       "best_hard_r2 = COALESCE(?, best_hard_r2), heartbeat_at = ? WHERE run_id = ?",
                       (min(1.0, max(0.0, float(progress))), phase, stage, n_stages, epoch, n_epochs,
                        _finite(best_hard_r2), time.time(), run_id))
            db.executemany("INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            return bool(db.execute("SELECT cancel_requested FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])

    def put_artifact(self, run_id: int, name: str, data: bytes | str, media_type: str = "text/plain") -> None:
        """Store (or replace) a named artifact of a RUNNING run (its worker's results)."""
        blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        with self._transaction(write=True) as db:
            self._require_running(db, run_id)
            db.execute("INSERT OR REPLACE INTO artifacts VALUES (?, ?, ?, ?, ?)",
                       (run_id, name, media_type, blob, time.time()))

    def put_json(self, run_id: int, name: str, value: Any) -> None:
        self.put_artifact(run_id, name, json.dumps(value, allow_nan=False), JSON)

    def set_status(self, run_id: int, status: RunStatus, *, error: str | None = None, test_r2: float | None = None,
                   test_rmse: float | None = None) -> Run:
        """Move a run along its lifecycle; a finishing status records the end time and the given results."""
        status = RunStatus(status)
        now = time.time()
        with self._transaction(write=True) as db:
            current = self._status_of(db, run_id, write=True)
            if current.is_finished():
                raise RunFinishedError(f"Run {run_id} is already {current.value}; finished runs are immutable.")
            if not current.can_become(status):
                raise InvalidTransition(f"Run {run_id} cannot go from {current.value} to {status.value}.")
            if status is RunStatus.RUNNING:
                self._start(db, run_id, now)
            else:
                db.execute("UPDATE runs SET status = ?, finished_at = ?, error = ?, test_r2 = ?, test_rmse = ?, "
                           "progress = CASE WHEN ? THEN 1.0 ELSE progress END WHERE run_id = ?",
                           (status.value, now, error, _finite(test_r2), _finite(test_rmse),
                            status is RunStatus.FINISHED, run_id))
            return self._get(db, run_id)

    # ------------------------------------------------------------------------------------------ reads
    def get_run(self, run_id: int) -> Run:
        with self._transaction() as db:
            self._status_of(db, run_id)
            return self._get(db, run_id)

    def list_runs(self, statuses: Sequence[RunStatus] | None = None) -> list[Run]:
        """The runs this store's scope reaches, newest first, optionally only those with the given statuses."""
        query = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE "
        with self._transaction() as db:
            where, args = self._visible(db)
            if statuses:
                where += f" AND status IN ({', '.join('?' * len(statuses))})"
                args += tuple(RunStatus(s).value for s in statuses)
            return [_to_run(row) for row in db.execute(query + where + " ORDER BY run_id DESC", args)]

    def has_active_runs(self) -> bool:
        """Whether any run is QUEUED or RUNNING (the queue has work, or a worker to watch)."""
        return self._exists("status IN (?, ?)", (RunStatus.QUEUED.value, RunStatus.RUNNING.value))

    def count_running(self) -> int:
        with self._transaction() as db:
            return db.execute("SELECT COUNT(*) FROM runs WHERE status = ?", (RunStatus.RUNNING.value,)).fetchone()[0]

    def list_metrics(self, run_id: int, phase: str | None = None) -> list[MetricPoint]:
        """Metric points of a run ordered by phase, step and start."""
        query = ("SELECT phase, start, stage, epoch, step, alpha, soft_loss, hard_loss, hard_accuracy FROM metrics "
                 "WHERE run_id = ?")
        args: tuple = (run_id,)
        if phase is not None:
            query, args = query + " AND phase = ?", (run_id, phase)
        with self._transaction() as db:
            self._status_of(db, run_id)
            rows = db.execute(query + " ORDER BY phase DESC, step, start", args).fetchall()
        return [MetricPoint(*row) for row in rows]

    def get_artifact(self, run_id: int, name: str) -> Artifact | None:
        with self._transaction() as db:
            self._status_of(db, run_id)
            row = db.execute("SELECT name, media_type, data, created_at FROM artifacts WHERE run_id = ? AND name = ?",
                             (run_id, name)).fetchone()
        return Artifact(row[0], row[1], bytes(row[2]), row[3]) if row else None

    def get_json(self, run_id: int, name: str) -> Any:
        artifact = self.get_artifact(run_id, name)
        return artifact.json() if artifact else None

    def list_artifacts(self, run_id: int) -> list[str]:
        with self._transaction() as db:
            self._status_of(db, run_id)
            return [r[0] for r in db.execute("SELECT name FROM artifacts WHERE run_id = ? ORDER BY name", (run_id,))]

    def get_dataset(self, run_id: int) -> Artifact:
        """The run's training table (bytes, media type) as stored at creation."""
        with self._transaction() as db:
            self._status_of(db, run_id)
            row = db.execute("SELECT d.name, d.media_type, d.data, d.created_at FROM datasets d JOIN runs r "
                             "ON r.dataset_fingerprint = d.fingerprint WHERE r.run_id = ?", (run_id,)).fetchone()
        return Artifact(row[0], row[1], bytes(row[2]), row[3])

    def _get(self, db: sqlite3.Connection, run_id: int) -> Run:
        row = db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"Run {run_id} does not exist (it may have been deleted).")
        return _to_run(row)


def _drop_old_unused_datasets(db: sqlite3.Connection, now: float) -> None:
    db.execute("DELETE FROM datasets WHERE created_at < ? AND fingerprint NOT IN "
               "(SELECT dataset_fingerprint FROM runs)", (now - KEEP_UNUSED_DATASET_S,))


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name (2)``, ``name (3)``... : the first not in ``taken``."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    return candidate


def _to_run(row: Sequence[Any]) -> Run:
    values = dict(zip(_RUN_COLUMNS, row))
    values["status"] = RunStatus(values["status"])
    values["params"] = MappingProxyType(json.loads(values["params"]))
    values["cancel_requested"] = bool(values["cancel_requested"])
    return Run(**values)


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
