"""A time budget on a busy machine (issue 34): ``time_budget=10`` on a planted depth-3 oblique tree (6,000 x 6, noise
sd 0.3, ``bench.studies.time_budget`` part c), fitted as it is and with three CPU-bound loops beside it (``python -c
"while True: pass"``, started and killed here), back to back, under two clocks:
  * ``fit``: the budget's clock (``get_core.budget``): seconds the fit's thread was not kept waiting for a core,
    at least 1 / ``STRETCH`` of the wall clock;
  * ``wall``: the wall clock (what budgets counted before issue 34; also the fit's clock where the machine does not
    report a thread's waits).
Each record: test R2 as a share of the noise ceiling (4,000 fresh rows), wall seconds, the fit's ``cpu_share`` and
``starved``, the race's starts x epochs, and the 1-minute load average before the fit. The target: with the loops,
at least 90% of the same clock's share without them, within twice the budget. The fit uses torch's default threads
(as ``GETRegressor`` does).

Usage: python -m bench.studies.under_load --seeds 0 1 2
       python -m bench.studies.under_load --report
Cells go to a JSON-lines file and are skipped on a rerun.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from functools import partial
from statistics import median
from typing import Iterator

from sklearn.metrics import r2_score

from bench.common import RESULTS_DIR, add_cell_options, command_parser, fill_cells
from bench.studies.time_budget import PLANTED_NOISE, PLANTED_ROWS, PLANTED_TEST_ROWS
from get_core import ENGINE_VERSION, budget
from get_core.config import GETConfig
from get_core.engine.train import train
from tests.planted import noise_ceiling, planted_oblique

RESULTS = RESULTS_DIR / "under-load.jsonl"
DEPTH, BUDGET, LOOPS = 3, 10.0, 3
CLOCKS, CONDITIONS = ("fit", "wall"), ("free", "loaded")


@contextlib.contextmanager
def busy(loops: int) -> Iterator[None]:
    """``loops`` CPU-bound processes beside this one while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(loops)]
    try:
        time.sleep(0.5)  # let them reach the run queue
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@contextlib.contextmanager
def clock(name: str) -> Iterator[None]:
    """The budgets' clock for the block: the fit's own (as shipped) or the wall clock (no thread waits read)."""
    if name == "fit":
        yield
        return
    opened = budget.ThreadWaits.open
    budget.ThreadWaits.open = classmethod(lambda cls: None)
    try:
        yield
    finally:
        budget.ThreadWaits.open = opened


def cell(seed: int, clock_name: str, condition: str) -> dict:
    X, y, _ = planted_oblique(PLANTED_ROWS, DEPTH, seed, noise=PLANTED_NOISE)
    X_te, y_te, clean_te = planted_oblique(PLANTED_TEST_ROWS, DEPTH, seed, noise=PLANTED_NOISE)
    with contextlib.ExitStack() as stack:
        stack.enter_context(clock(clock_name))
        if condition == "loaded":
            stack.enter_context(busy(LOOPS))
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        tree = train(X, y, GETConfig(depth=DEPTH, random_state=seed, time_budget=BUDGET))
        seconds = time.monotonic() - t0
    share = 100 * float(r2_score(y_te, tree.predict(X_te))) / float(noise_ceiling(clean_te, PLANTED_NOISE))
    ran = tree.meta["config"]
    return {"seed": seed, "clock": clock_name, "condition": condition, "share_of_ceiling": share,
            "wall_seconds": seconds, "cpu_share": tree.meta["cpu_share"], "starved": tree.meta["starved"],
            "n_starts": ran["n_starts"], "n_epochs": ran["n_epochs"], "load_before": load}


def report(records: list[dict]) -> str:
    """Per clock and condition: each seed's share of the ceiling and wall seconds, their medians, and the loaded
    median as a share of the free one."""
    lines = ["| clock | condition | share of the noise ceiling (%) by seed | median | wall s by seed (max) | "
             "cpu_share (median) | starved | load before (median) |", "|---|---|---|---:|---|---:|---:|---:|"]
    for clock_name in CLOCKS:
        medians = {}
        for condition in CONDITIONS:
            cells = sorted((r for r in records if r["clock"] == clock_name and r["condition"] == condition),
                           key=lambda r: r["seed"])
            if not cells:
                continue
            medians[condition] = median(r["share_of_ceiling"] for r in cells)
            shares = " / ".join(f"{r['share_of_ceiling']:.1f}" for r in cells)
            walls = " / ".join(f"{r['wall_seconds']:.1f}" for r in cells)
            lines.append(
                f"| {clock_name} | {condition} | {shares} | {medians[condition]:.1f} | {walls} "
                f"({max(r['wall_seconds'] for r in cells):.1f}) | {median(r['cpu_share'] for r in cells):.2f} | "
                f"{sum(r['starved'] for r in cells)} of {len(cells)} | {median(r['load_before'] for r in cells):.1f} |")
        if len(medians) == 2:
            lines.append(f"| {clock_name} | loaded / free | | {100 * medians['loaded'] / medians['free']:.1f}% | | | | |")
    return "\n".join(lines)


def main() -> None:
    parser = command_parser(__doc__, "bench.studies.under_load")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="planted trees (default: 0 1 2)")
    parser.add_argument("--clocks", nargs="+", choices=CLOCKS, default=list(CLOCKS))
    add_cell_options(parser, RESULTS)
    args = parser.parse_args()
    fill_cells(args, report, (
        (f"{seed}|{clock_name}|{condition}|v{ENGINE_VERSION}", partial(cell, seed, clock_name, condition),
         lambda r: f"{r['key']}: {r['share_of_ceiling']:.1f}% of the ceiling in {r['wall_seconds']:.1f} s "
                   f"(cpu_share {r['cpu_share']:.2f})")
        for seed in args.seeds for clock_name in args.clocks
        for condition in CONDITIONS))  # back to back: the same machine but for the loops


if __name__ == "__main__":
    main()
