"""The run database's file: checked before SQLite touches it, and SQLite's file errors told as sentences.

``GET_EXPLORER_DB`` is typed by hand, so it may name a directory, a path under a file, a folder nobody can write, a
file that is not a database, a damaged (truncated) database or a read-only one. SQLite reports these as
``unable to open database file`` or ``file is not a database``, which say neither which file nor what to do; worse,
a wrong file could be written to. So ``check_path`` refuses every path whose problem can be seen without opening it
(never creating, changing or deleting anything there), ``check_tables`` refuses another program's SQLite database
before the store adds its tables, and ``explain`` turns the errors only SQLite can see (damage, a read-only file, a
full disk, a lock held too long) into a ``StoreUnavailable`` naming the file and the fix.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from get_core.runs.records import StoreReplaced, StoreUnavailable

DB_ENV = "GET_EXPLORER_DB"
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 database file
EXAMPLE = ".get_explorer/runs.sqlite"
LEFT_UNTOUCHED = "it is left untouched"
NEW_PATH = f"set {DB_ENV} to a new file path, such as {EXAMPLE}"
STORE_TABLES = {"meta", "datasets", "runs", "metrics", "artifacts"}

# SQLite's words for a problem with the file (not with a query), and what to tell the user for each.
_SQLITE_PROBLEMS = (
    ("not a database", "which is not a SQLite database; {untouched}: {new}, or move that file away"),
    ("malformed", "which is damaged (SQLite: {error}), perhaps truncated by a full disk or an interrupted copy; "
                  "{untouched}: restore it from a backup, or start an empty store: {new}"),
    ("corrupt", "which is damaged (SQLite: {error}); {untouched}: restore it from a backup, or start an empty "
                "store: {new}"),
    ("readonly", "which is read-only: make it writable (and its folder), or {new}"),
    ("disk is full", "which cannot grow: the disk is full. Free some space, then try again"),
    ("locked", "which another process has kept locked for too long: try again in a minute; if it lasts, stop the "
               "other GET Explorer servers and workers using it"),
    ("disk i/o", "which cannot be read or written (SQLite: {error}): check the disk, or {new}"),
    ("unable to open", "which cannot be opened (SQLite: {error}): {new}"),
)


def subject(path: str) -> str:
    """How a message names the file: by the variable when the user set it, else as the default store."""
    return f"{DB_ENV} points to '{path}'" if os.environ.get(DB_ENV) == path else f"The run database is '{path}'"


def check_path(path: str) -> None:
    """Refuse a database path whose problem shows without opening it; reads at most the file's first 16 bytes."""
    problem = _path_problem(Path(path))
    if problem:
        raise StoreUnavailable(f"{subject(path)}, {problem}.")


def _path_problem(path: Path) -> str | None:
    folder = _nearest_existing(path.parent)
    if not folder.is_dir():
        return f"but '{folder}' is a file, not a directory: set {DB_ENV} to a file path in a directory, such as " \
               f"{EXAMPLE}"
    if path.is_dir():
        return f"which is a directory: set {DB_ENV} to a file path such as {path / 'runs.sqlite'}"
    if path.exists() and not path.is_file():
        return f"which is not a regular file: {NEW_PATH}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return (f"but the directory '{folder}' cannot be written (the store keeps its journal files beside the "
                f"database): make it writable, or set {DB_ENV} to a file path in a directory you can write")
    if not path.exists():
        return None
    if not os.access(path, os.R_OK):
        return f"which cannot be read (permission denied): make it readable, or {NEW_PATH}"
    with open(path, "rb") as file:
        head = file.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC[:len(head)]:
        return f"which is not a SQLite database; {LEFT_UNTOUCHED}: {NEW_PATH}, or move that file away"
    if not os.access(path, os.W_OK):
        return f"which is read-only: make it writable, or {NEW_PATH}"
    return None


def _nearest_existing(folder: Path) -> Path:
    """``folder`` or its nearest existing ancestor (under a file, ``exists`` is False up to that file)."""
    return next(ancestor for ancestor in [folder, *folder.parents] if ancestor.exists())


def check_tables(path: str, tables: set[str]) -> None:
    """Refuse a SQLite database holding tables of another program, before the store adds its own to it."""
    foreign = sorted(tables - STORE_TABLES)
    if tables and "meta" not in tables:
        raise StoreUnavailable(f"{subject(path)}, which is a SQLite database of another program (tables: "
                               f"{', '.join(foreign[:5])}); {LEFT_UNTOUCHED}: {NEW_PATH}.")


def explain(path: str, error: BaseException) -> StoreUnavailable | None:
    """The store's error for a file problem SQLite (or the OS) reported, or None for an error of another kind."""
    if isinstance(error, OSError):
        return StoreUnavailable(f"{subject(path)}, which cannot be opened ({error.strerror or error}): {NEW_PATH}.")
    if type(error) not in (sqlite3.OperationalError, sqlite3.DatabaseError):  # integrity, programming: not the file
        return None
    text = str(error)
    for words, advice in _SQLITE_PROBLEMS:
        if words in text.lower():
            sentence = advice.format(error=text, untouched=LEFT_UNTOUCHED, new=NEW_PATH)
            return StoreUnavailable(f"{subject(path)}, {sentence}.")
    return None


LOW_DISK_BYTES = 64 << 20  # below this much free space a worker's writes (SQLite pages, logs) may fail


def disk_note(path: str) -> str:
    """A sentence naming a full (or nearly full) disk under the database's folder, else "": why a worker may have
    gone silent (its heartbeats could not be written)."""
    folder = Path(path).resolve().parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    if free >= LOW_DISK_BYTES:
        return ""
    return (f" The disk holding '{folder}' is full ({free / 2**20:.1f} MB free): a full disk stops a worker's writes;"
            " free some space first.")


def replaced(path: str, gone: bool) -> StoreReplaced:
    """The sentence for a database file deleted (``gone``) or replaced by another file while a process had it open."""
    what = "deleted" if gone else "replaced by another file"
    return StoreReplaced(f"{subject(path)}, which was {what} while GET Explorer had it open: the runs it held, and any "
                         "run that was RUNNING, are no longer there. Restore the file from a backup and restart the app "
                         "and its workers; nothing was written in its place (a restart without it starts an empty "
                         "store).")


def cannot_open(path: str, error: OSError | sqlite3.Error) -> StoreUnavailable:
    """The store's error for any failure while opening: whatever SQLite says then is about the file."""
    return explain(path, error) or StoreUnavailable(
        f"{subject(path)}, which cannot be used as a run store (SQLite: {error}); {LEFT_UNTOUCHED}: {NEW_PATH}.")
