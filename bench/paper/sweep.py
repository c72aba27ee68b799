"""The sweep: datasets x seeds x methods [x depths] as independent cells, run locally or on Dask, checkpointed.

A cell is the unit of work and of resumption. The driver (this process) is the only writer of the results file:
workers return records, the driver appends each finished one as a single JSON line (``common.CellStore``). The
file's name carries a hash of the settings that change a cell's result (``Settings.key``), so a rerun with the same
settings skips every finished cell and a run with other settings starts its own file.

Threads: a GET fit drives torch and the fused C++ soft pass with ``torch.get_num_threads()`` threads, sklearn and
numpy use BLAS/OpenMP pools. Every cell runs with ``threads`` threads for all of them (``threadpoolctl`` plus
``torch.set_num_threads``), 1 by default: parallelism comes from running cells side by side (``--jobs`` or Dask
workers), which never oversubscribes the cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
from dataclasses import asdict, dataclass, replace
from typing import Iterator

import numpy as np
from sklearn.metrics import r2_score

from bench.common import Budget, jsonable, split_and_scale, thread_limit
from bench.paper import methods as M
from get_core import ENGINE_VERSION
from get_core.baselines import predict_ms, timing_rows

SCHEDULER_TIMEOUT_S = 10  # how long --dask-scheduler may take to answer before the run stops with a message
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
    def budget_obj(self) -> Budget:
        return Budget(self.budget, self.n_starts, self.n_epochs, self.polish_in_cv)


@dataclass(frozen=True)
class Cell:
    dataset: str
    seed: int
    method: str
    depth: int | None = None  # fixed depth (training-optimality cells); None = tuned

    @property
    def key(self) -> str:
        return f"{self.dataset}|{self.seed}|{self.method}|{self.depth}"


# ---------------------------------------------------------------- one cell (runs in a worker)
def run_cell(cell: Cell, settings: Settings, data: tuple[np.ndarray, np.ndarray], threads: int,
             searches: str | None = None) -> dict:
    """Fit and evaluate one cell; returns its record (``error`` set instead of results when it failed).
    ``searches``: where depth searches keep their finished fits (``common.Budget.searches``)."""
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


def _evaluate(cell: Cell, budget: Budget, X_tr, y_tr, X_te, y_te) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    method = M.METHODS[cell.method]
    depth = {"depth": cell.depth} if method.depth_from else {}  # the depth its dense counterpart chose
    fitted = method.fit(X_tr, y_tr, cell.seed, budget, **depth)
    fit_seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    pred = fitted.model.predict(X_te)
    return {
        "test_r2": 100 * float(r2_score(y_te, pred)),
        "train_r2": 100 * float(r2_score(y_tr, fitted.model.predict(X_tr))),
        "depth": fitted.depth,
        "n_parameters": fitted.n_parameters,
        "features_per_split": fitted.features_per_split,
        # paper section 5.4: one predict call on 10,000 rows (drawn from the test rows), median of 3, single thread
        "predict_ms_per_10k": predict_ms(fitted.model.predict, timing_rows(X_te, cell.seed), n_repeats=3),
        "fit_seconds": fit_seconds,
        "fit_cpu_seconds": cpu_seconds,  # CPU time of the worker process: unlike wall time, not inflated by load
        "n_train": int(len(y_tr)),
        "n_test": int(len(y_te)),
        "details": jsonable(fitted.details),
    }


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
