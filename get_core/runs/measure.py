"""The run-time estimate's measurement (``python -m get_core.runs.measure``, spawned by ``estimate.start_measurement``):
times the estimator (the one door into training) on random data of a run's shape, and once per machine the
baselines, and writes the numbers into the calibration cache that ``runs.estimate`` reads. The worker side of runs/:
it imports the estimators (torch) at the top, and pages never import it.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from get_core.baselines import fit_baselines
from get_core.budget import MIN_SEARCH_FIT_SECONDS
from get_core.estimator import GETRegressor
from get_core.runs.estimate import (BASELINE_ROWS, MARKER_BEAT_S, MAX_EXTRA_EPOCHS, MEASURE_LIMIT_S, MIN_EXTRA_EPOCHS,
                                    SHORT_EPOCHS, load_cache, save_measurement, shape_key)


def measure(depth: int, leaf: str, n_starts: int, n_features: int, n_rows: int, machine: bool) -> dict[str, Any]:
    """Time the trainer on random data of this shape; with ``machine`` also time the baselines once."""
    result: dict[str, Any] = {"startup_seconds": time.time()}  # wall clock once imports are done
    rng = np.random.default_rng(0)
    X = rng.random((n_rows, n_features))
    y = X @ rng.normal(size=n_features) + np.sin(6 * X[:, 0])

    def timed(epochs: int) -> float:
        estimator = GETRegressor(depth=depth, leaf=leaf, n_starts=n_starts, n_epochs=epochs, n_alphas=1,
                                 random_state=0)
        start = time.perf_counter()
        estimator.fit(X, y)
        return time.perf_counter() - start

    timed(2)  # warm-up: first-call allocations and lazy imports would otherwise count as epochs
    # The fastest of two tries: other processes on a shared machine only ever add time.
    short = min(timed(SHORT_EPOCHS) for _ in range(2))
    # Enough extra epochs for about one second of difference, so the slope is not lost in timer noise.
    long_epochs = SHORT_EPOCHS + int(min(MAX_EXTRA_EPOCHS, max(MIN_EXTRA_EPOCHS, SHORT_EPOCHS / max(short, 1e-3))))
    long = min(timed(long_epochs) for _ in range(2))
    per_epoch = max(0.0, (long - short) / (long_epochs - SHORT_EPOCHS))
    result["shape"] = {"per_epoch": per_epoch, "per_stage": max(0.0, short - SHORT_EPOCHS * per_epoch),
                       "overrun": _budget_overrun(X, y, depth, leaf)}
    if machine:
        result["machine"] = _measure_baselines(X, y, depth)
    return result


def _budget_overrun(X: Any, y: Any, depth: int, leaf: str) -> float:
    """The wall seconds a budgeted fit of this shape takes beyond its budget (its probes, CART start, leaf refits
    and scores: what no budget paces), measured on the least budget a search fit gets."""
    estimator = GETRegressor(depth=depth, leaf=leaf, time_budget=MIN_SEARCH_FIT_SECONDS, random_state=0)
    start = time.perf_counter()
    estimator.fit(X, y)
    return max(0.0, time.perf_counter() - start - MIN_SEARCH_FIT_SECONDS)


def _measure_baselines(X: Any, y: Any, depth: int) -> dict[str, float]:
    """Baseline fit time as ``intercept + slope * rows`` from fits on BASELINE_ROWS / 4 and BASELINE_ROWS rows."""
    times = {}
    for rows in (BASELINE_ROWS // 4, BASELINE_ROWS // 4, BASELINE_ROWS):  # the first fit warms the imports up
        rows = min(rows, len(y))
        start = time.perf_counter()
        fit_baselines(X[:rows], y[:rows], X[: rows // 3], y[: rows // 3], depth, 0)
        times[rows] = time.perf_counter() - start
    small, large = min(times), max(times)
    slope = max(0.0, (times[large] - times[small]) / (large - small)) if large > small else 0.0
    return {"baselines": max(0.0, times[small] - slope * small), "baselines_per_row": slope,
            "baselines_features": X.shape[1]}


def main(argv: list[str] | None = None) -> int:
    """``python -m get_core.runs.measure --cache PATH --marker PATH --t0 T DEPTH LEAF STARTS FEATURES ROWS``."""
    parser = argparse.ArgumentParser(prog="python -m get_core.runs.measure")
    parser.add_argument("--cache", required=True)
    parser.add_argument("--marker")
    parser.add_argument("--t0", type=float, required=True, help="time.time() when the parent spawned us")
    for name, kind in (("depth", int), ("leaf", str), ("starts", int), ("features", int), ("rows", int)):
        parser.add_argument(name, type=kind)
    args = parser.parse_args(argv)
    path = Path(args.cache)
    done = threading.Event()
    if args.marker:
        threading.Thread(target=_keep_fresh, args=(Path(args.marker), done), daemon=True).start()
    try:
        needs_machine = "machine" not in load_cache(path)
        result = measure(args.depth, args.leaf, args.starts, args.features, args.rows, needs_machine)
        machine = {**result["machine"], "startup": result["startup_seconds"] - args.t0} if needs_machine else None
        save_measurement(path, shape_key(args.depth, args.leaf, args.starts, args.features, args.rows),
                         result["shape"], machine)
    finally:
        done.set()
        if args.marker:
            Path(args.marker).unlink(missing_ok=True)
    return 0


def _keep_fresh(marker: Path, done: threading.Event, limit_s: float = MEASURE_LIMIT_S) -> None:
    """Touch ``marker`` every ``MARKER_BEAT_S`` until ``done``, so that a measurement longer than the stale bound
    (a deep tree on a busy machine) is never taken for an abandoned one and measured twice at once; but for at most
    ``limit_s``, so that a hung measurement does not block every later one."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            os.utime(marker)
        except OSError:  # removed: the measurement is over
            return
        if done.wait(MARKER_BEAT_S):
            return


if __name__ == "__main__":
    sys.exit(main())
