"""Honest run times (issue 48): the whole-run estimate the Train page shows before Start against the real time of the
same run, from launch to its ending, in a real worker process on a real SQLite store.

Each cell takes one table and one kind of run the Train page launches with its defaults (``app_default.app_params``:
depth 5, linear leaves for a number, the "about 10 s" budget):
  * ``plain``: one tree of a number target;
  * ``search``: "choose for me", depth 1-5 and features per split chosen (``GETRegressorCV`` over k);
  * ``class``: one tree of a class target (constant leaves, as the Train page sends).
It measures this machine for the run's shape as the app does (``estimate.start_measurement``: a subprocess that writes
the calibration cache), reads the estimate (``estimate.search_estimate``), then starts ``python -m
get_core.runs.worker RUN_ID`` and times it until the run has ended. The target: real / estimated within 1.5x either
way on an idle machine.

Examples:
  python -m bench.studies.run_times --kinds plain search class
  python -m bench.studies.run_times --report
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from bench.common import DEFAULT_DATA_DIR, RESULTS_DIR, CellStore, command_parser
from bench.studies.app_default import app_params
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs import estimate
from get_core.runs.store import DB_ENV, RunStore

RESULTS = RESULTS_DIR / "run-times.jsonl"
CLASS_DIR = DEFAULT_DATA_DIR / "classification"
#: The tables each kind runs on by default: a small and a larger one of each task.
TABLES = {"plain": ("airfoil_self_noise", "abalone"), "search": ("airfoil_self_noise", "abalone"),
          "class": ("pima_diabetes", "phoneme")}
SEARCH = {"depths": [1, 2, 3, 4, 5], "split_features": "auto"}  # the Train page's "choose for me" for both
MEASURE_WAIT_S = 600.0
#: The target: real over estimated run time within this factor, either way.
WITHIN = 1.5


def run_params(kind: str, frame: pd.DataFrame, seed: int) -> dict:
    """The parameters the Train page sends for ``kind`` on ``frame`` (its last column, ``target``, the target)."""
    features = [c for c in frame.columns if c != "target"]
    params = app_params("target", features, seed)
    if kind == "search":
        params["search"] = dict(SEARCH)
    if kind == "class":
        params["data"] = DataSpec(target="target", features=tuple(features), task="classification").to_dict()
        params["config"]["leaf"] = "constant"
    return params


def measured_estimate(frame: pd.DataFrame, params: dict, cache: Path) -> estimate.Estimate:
    """The estimate of ``params`` after measuring this machine for its shape as the Train page does."""
    n_rows, n_features = len(frame), len(frame.columns) - 1
    deadline = time.monotonic() + MEASURE_WAIT_S
    while (found := estimate.search_estimate(n_rows, n_features, params, cache)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"no calibration for {n_rows} x {n_features} after {MEASURE_WAIT_S:.0f} s")
        estimate.start_measurement(n_rows, n_features, params["config"], cache)
        time.sleep(1.0)
    return found


def timed_run(frame: pd.DataFrame, params: dict, db: Path) -> tuple[float, str]:
    """Seconds from starting the worker process to the run's ending, and its status."""
    store = RunStore(db)
    run_id = store.create_run(params, to_parquet_bytes(frame), "table.csv", n_rows=len(frame),
                              n_features=len(frame.columns) - 1)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "get_core.runs.worker", str(run_id)], env={**os.environ, DB_ENV: str(db)},
                   check=False, capture_output=True)
    seconds = time.perf_counter() - start
    return seconds, store.get_run(run_id).status.value


def run_cell(kind: str, table: str, seed: int, workdir: Path) -> dict[str, Any]:
    path = (CLASS_DIR if kind == "class" else DEFAULT_DATA_DIR) / f"{table}.csv"
    frame = pd.read_csv(path)
    params = run_params(kind, frame, seed)
    cache = workdir / "calibration.json"
    found = measured_estimate(frame, params, cache)
    load_before = os.getloadavg()[0]
    db = Path(tempfile.mkdtemp(prefix="store-", dir=workdir)) / "runs.sqlite"  # a store of its own: no queue left
    real, status = timed_run(frame, params, db)  # by an earlier cell (its supervisor) can claim this run
    return {"kind": kind, "table": table, "seed": seed, "rows": len(frame), "features": len(frame.columns) - 1,
            "status": status, "estimated_s": found.seconds, "training_s": found.training,
            "baselines_s": found.baselines, "startup_s": found.startup, "real_s": real,
            "ratio": real / found.seconds, "load_before": load_before, "load_after": os.getloadavg()[0]}


def report(records: Sequence[dict]) -> str:
    lines = ["| kind | table | rows x features | estimated s | real s | real / estimated | load |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['kind']} | {r['table']} | {r['rows']:,} x {r['features']} | {r['estimated_s']:.1f} | "
                     f"{r['real_s']:.1f} | {r['ratio']:.2f} | {r['load_before']:.1f} |")
    inside = sum(1 / WITHIN <= r["ratio"] <= WITHIN for r in records)
    lines.append(f"\n{inside} of {len(records)} runs within {WITHIN}x of their estimate.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.run_times")
    parser.add_argument("--kinds", nargs="+", choices=sorted(TABLES), default=sorted(TABLES))
    parser.add_argument("--tables", nargs="*", default=None, help="table names (default: TABLES of each kind)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")
    args = parser.parse_args(argv)
    store = CellStore(args.out)
    if args.report:
        print(report(list(store.load().values())))
        return
    done = store.load()
    with tempfile.TemporaryDirectory(prefix="run-times-") as tmp:
        for kind in args.kinds:
            for table in args.tables or TABLES[kind]:
                for seed in args.seeds:
                    key = f"{kind}|{table}|{seed}"
                    if key in done:
                        continue
                    record = run_cell(kind, table, seed, Path(tmp))
                    store.append({"key": key, **record})
                    print(f"{kind} {table} seed {seed}: estimated {record['estimated_s']:.1f} s, real "
                          f"{record['real_s']:.1f} s ({record['ratio']:.2f}x), {record['status']}", flush=True)


if __name__ == "__main__":
    main()
