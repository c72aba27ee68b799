"""The sweep: datasets x seeds x methods [x depths] as independent cells, run locally or on Dask, checkpointed.

A cell is the unit of work and of resumption. The driver (this process) is the only writer of the results file:
workers return records, the driver appends each finished one as a single JSON line (``CellStore``). The file's name
carries a hash of the settings that change a cell's result (``Settings.key``), so a rerun with the same settings
skips every finished cell and a run with other settings starts its own file.

Threads: a GET fit drives torch and the fused C++ soft pass with ``torch.get_num_threads()`` threads, sklearn and
numpy use BLAS/OpenMP pools. Every cell runs with ``threads`` threads for all of them (``threadpoolctl`` plus
``torch.set_num_threads``), 1 by default: parallelism comes from running cells side by side (``--jobs`` or Dask
workers), which never oversubscribes the cores.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from bench.paper import methods as M
from get_core import ENGINE_VERSION
from get_core.compare import predict_ms, timing_rows
from get_core.optimize import MinMax

TEST_SIZE = 0.25  # the paper's 75% train / 25% test
SUBSAMPLE_SEED = 12345  # --max-rows keeps the same rows for every seed and method
SCHEDULER_TIMEOUT_S = 10  # how long --dask-scheduler may take to answer before the run stops with a message
MIN_ROWS = 20  # fewest rows a dataset (or --max-rows) may have: 10 / 5 / 5 rows for search, validation and test
RECORD_VERSION = 1


@dataclass(frozen=True)
class Settings:
    """Everything besides (dataset, seed, method, depth) that changes a cell's result."""

    mode: str  # "test" (the accuracy sweep) or "train" (training optimality, Tables 3 and 4)
    budget: str
    n_starts: int
    n_epochs: int
    max_rows: int | None = None
    polish_in_cv: bool = True
    version: int = RECORD_VERSION
    engine: int = ENGINE_VERSION

    @property
    def key(self) -> str:
        return hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:10]

    @property
    def budget_obj(self) -> M.Budget:
        return M.Budget(self.budget, self.n_starts, self.n_epochs, self.polish_in_cv)


@dataclass(frozen=True)
class Cell:
    dataset: str
    seed: int
    method: str
    depth: int | None = None  # fixed depth (training-optimality cells); None = tuned

    @property
    def key(self) -> str:
        return f"{self.dataset}|{self.seed}|{self.method}|{self.depth}"


# ---------------------------------------------------------------- data
def find_datasets(data_dir: Path, patterns: Iterable[str] | None = None) -> list[Path]:
    """CSV files of ``data_dir`` whose stem matches any of ``patterns`` (names or globs; all when empty)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"--data-dir {data_dir}: no such directory")
    files = sorted(f for f in data_dir.glob("*.csv") if f.is_file())
    if not files:
        raise SystemExit(f"--data-dir {data_dir}: no .csv file in it")
    patterns = list(patterns or [])
    if not patterns:
        return files
    chosen = [f for f in files if any(fnmatch.fnmatch(f.stem, p.removesuffix(".csv")) for p in patterns)]
    missing = [p for p in patterns if not any(fnmatch.fnmatch(f.stem, p.removesuffix(".csv")) for f in files)]
    if missing:
        raise SystemExit(f"no dataset in {data_dir} matches {', '.join(missing)}")
    return chosen


def load_dataset(path: Path, max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a CSV whose last column, named ``target``, is the target; at most ``max_rows`` random rows.

    Exits with a message naming the file, column and row when the table is not complete numeric data (the paper's
    protocol has no encoding or imputation step to apply, so the benchmark refuses rather than guesses)."""
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SystemExit(f"{path}: cannot be read as a CSV table ({message}); the benchmark needs a comma-separated "
                         "UTF-8 file with a header row") from None
    problem = table_problem(frame)
    if problem:
        raise SystemExit(f"{path}: {problem}")
    X = frame.iloc[:, :-1].to_numpy(dtype=np.float64)
    y = frame["target"].to_numpy(dtype=np.float64)
    if max_rows is not None and len(y) > max_rows:
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).permutation(len(y))[:max_rows])
        X, y = X[keep], y[keep]
    return X, y


def table_problem(frame: pd.DataFrame) -> str | None:
    """Why a benchmark table cannot be used as it is, or None; rows are counted from 1 after the header."""
    if frame.columns[-1] != "target":
        return f"the last column must be the target, named 'target'; it is {frame.columns[-1]!r}: rename it or move it"
    if frame.shape[1] < 2:
        return "there is no feature column besides 'target'"
    if len(frame) < MIN_ROWS:
        return f"only {len(frame)} rows; the protocol's 50/25/25 split needs at least {MIN_ROWS}"
    for column in frame.columns:
        numbers = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        for bad, what in ((np.isnan(numbers) & frame[column].notna().to_numpy(), "is not a number"),
                          (frame[column].isna().to_numpy(), "is missing"),
                          (np.isinf(numbers), "is infinite")):
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                cell = frame[column].iloc[row]
                value = "" if what == "is missing" else f" ({getattr(cell, 'item', lambda: cell)()!r})"
                n = int(bad.sum())
                return (f"column {column!r}, row {row + 1}: the value{value} {what} ({n} row{'s' * (n > 1)} like it); "
                        "the benchmark needs complete numeric data: encode, fill or drop them first")
    if frame["target"].nunique() == 1:
        value = pd.to_numeric(frame["target"]).iloc[0].item()
        return (f"the target is {value!r} in every row: there is nothing to predict (R2 is undefined); check that "
                "the right column is named 'target'")
    return None


def split_and_scale(X: np.ndarray, y: np.ndarray, seed: int):
    """The paper's protocol: 75/25 split by ``seed``, then min-max scaling of X and y to [0, 1] with statistics of
    the training part only (test values may fall outside [0, 1]). R2 is the same in scaled and original units."""
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=TEST_SIZE, random_state=seed)
    scaling = MinMax.fit(X_tr, y_tr)
    return (*scaling.transform(X_tr, y_tr), *scaling.transform(X_te, y_te))


# ---------------------------------------------------------------- one cell (runs in a worker)
def run_cell(cell: Cell, settings: Settings, data: tuple[np.ndarray, np.ndarray], threads: int,
             searches: str | None = None) -> dict:
    """Fit and evaluate one cell; returns its record (``error`` set instead of results when it failed).
    ``searches``: where depth searches keep their finished fits (``methods.Budget.searches``)."""
    record = {"key": cell.key, **asdict(cell), "settings": settings.key, "threads": threads,
              "started_at": time.time(), "host": os.uname().nodename, "pid": os.getpid()}
    try:
        with thread_limit(threads):
            X, y = data
            Xs_tr, ys_tr, Xs_te, ys_te = split_and_scale(X, y, cell.seed)
            t0 = time.perf_counter()
            budget = replace(settings.budget_obj, searches=searches)
            if settings.mode == "train":
                record.update(M.training_r2(cell.method, Xs_tr, ys_tr, cell.depth, cell.seed, budget))
            else:
                record.update(_evaluate(cell, budget, Xs_tr, ys_tr, Xs_te, ys_te))
            record["wall_seconds"] = time.perf_counter() - t0
    except Exception as exc:  # reported by the driver and left unfinished, so a rerun retries the cell
        record["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    record["finished_at"] = time.time()
    return record


def _evaluate(cell: Cell, budget: M.Budget, X_tr, y_tr, X_te, y_te) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    fitted = M.METHODS[cell.method].fit(X_tr, y_tr, cell.seed, budget)
    fit_seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    pred = fitted.model.predict(X_te)
    return {
        "test_r2": 100 * float(r2_score(y_te, pred)),
        "train_r2": 100 * float(r2_score(y_tr, fitted.model.predict(X_tr))),
        "depth": fitted.depth,
        "n_parameters": fitted.n_parameters,
        # paper section 5.4: one predict call on 10,000 rows (drawn from the test rows), median of 3, single thread
        "predict_ms_per_10k": predict_ms(fitted.model.predict, timing_rows(X_te, cell.seed), n_repeats=3),
        "fit_seconds": fit_seconds,
        "fit_cpu_seconds": cpu_seconds,  # CPU time of the worker process: unlike wall time, not inflated by load
        "n_train": int(len(y_tr)),
        "n_test": int(len(y_te)),
        "details": _jsonable(fitted.details),
    }


class thread_limit:
    """Limit torch, BLAS and OpenMP pools to ``n`` threads inside the block, restoring them afterwards."""

    def __init__(self, n: int):
        self.n = max(1, int(n))

    def __enter__(self):
        import torch
        from threadpoolctl import threadpool_limits

        self._torch = torch.get_num_threads()
        torch.set_num_threads(self.n)
        self._pools = threadpool_limits(self.n)
        return self

    def __exit__(self, *exc):
        import torch

        self._pools.restore_original_limits()
        torch.set_num_threads(self._torch)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


# ---------------------------------------------------------------- the results file
class CellStore:
    """Append-only JSON-lines file of finished cells (one record per line, keyed by ``Cell.key``).

    Each record is written by one ``os.write`` of a whole line to a file opened with O_APPEND and then fsynced, so
    an interruption leaves at most a torn last line, which ``load`` ignores (that cell simply runs again).
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self, required: tuple[str, ...] = ()) -> dict[str, dict]:
        """{key: record} of the finished cells; a line that is not such a record (torn, garbled, an error, or
        without one of the ``required`` fields) is ignored, so that cell runs again."""
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        for line in self.path.read_bytes().splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a torn or garbled line (bad JSON or bytes that are not UTF-8): that cell reruns
                continue
            if (isinstance(record, dict) and isinstance(record.get("key"), str) and "error" not in record
                    and all(field in record for field in required)):
                done[record["key"]] = record
        return done

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record, allow_nan=False, default=_jsonable) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                line = b"\n" + line  # a torn line from an interrupted run stays a line of its own
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


# ---------------------------------------------------------------- executing cells
def execute(cells: list[Cell], settings: Settings, data: dict[str, tuple[np.ndarray, np.ndarray]], *, jobs: int = 1,
            threads: int | None = None, scheduler: str | None = None, searches: str | None = None) -> Iterator[dict]:
    """Run ``cells`` and yield each record as soon as it finishes (in completion order).

    Local: in this process when ``jobs == 1``, else joblib (loky processes). ``scheduler``: a Dask distributed
    scheduler address; every dataset is scattered once, each cell is one task. Threads per cell default to 1:
    a multi-threaded GET fit synchronizes its threads every epoch, and on a machine shared with other work one
    descheduled thread stalls the rest (measured here: a 2-thread fit 8-17x slower than a 1-thread fit under
    load); on an idle machine pass ``threads = cores / jobs``. ``searches``: see ``run_cell``.
    """
    if not cells:
        return
    threads = threads or 1
    if scheduler is not None:
        yield from _execute_dask(cells, settings, data, threads, scheduler, searches)
    elif jobs == 1:
        for cell in cells:
            yield run_cell(cell, settings, data[cell.dataset], threads, searches)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
        yield from parallel(delayed(run_cell)(cell, settings, data[cell.dataset], threads, searches)
                            for cell in cells)


def _execute_dask(cells, settings, data, threads, scheduler, searches) -> Iterator[dict]:
    from distributed import Client, as_completed

    try:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
    except (OSError, ValueError) as exc:  # unreachable, not a Dask scheduler or not an address: say so, not a traceback
        raise SystemExit(f"cannot use the Dask scheduler at {scheduler}: {exc}. Start one (`dask scheduler`, "
                         "then `dask worker ADDRESS` from the repo root) or leave out --dask-scheduler.") from None
    with client:
        scattered = {name: client.scatter(data[name]) for name in {c.dataset for c in cells}}
        futures = [client.submit(run_cell, cell, settings, scattered[cell.dataset], threads, searches, pure=False,
                                 key=f"paper-cell-{settings.key}-{cell.key}-{time.time_ns()}") for cell in cells]
        for future in as_completed(futures):
            yield future.result()


def order_cells(cells: list[Cell], sizes: dict[str, int]) -> list[Cell]:
    """Smallest dataset first and, within a dataset and seed, the longest cells first.

    A run stopped part-way then leaves whole datasets finished (complete rows of the table) rather than a few cells
    of every dataset, and the parallel workers still start each dataset on its longest cells.
    """
    cost = {"get-linear-polish": 4, "get-linear-l1": 4, "get-polish": 3, "get-linear": 2, "get": 1, "rf": 0.5}
    return sorted(cells, key=lambda c: (sizes.get(c.dataset, 0), c.dataset, c.seed,
                                        -cost.get(c.method, 0.1) * 2 ** (c.depth or 0)))
