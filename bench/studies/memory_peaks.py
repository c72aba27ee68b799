"""A fit's memory estimate (``engine.memory``) against the peak it measures: each shape is fitted once in a fresh
child process, whose peak resident memory (Linux ``VmHWM``, reset by ``/proc/self/clear_refs`` once the table is
built and a 200-row fit of the same shape has loaded torch and the native kernel) less its resident memory then is
what the fit added; the estimate is the one ``engine.memory`` refuses or samples by. Prints one JSON line per shape
and a table; the target is every shape within ``TARGET`` of its measured peak.

The fits are short (``time_budget`` of a few seconds, one thread): a fit's peak comes in its first second or two
(the table's copies, the CART start, the first checkpoints), and the two cores are shared.

Usage: nice python -m bench.studies.memory_peaks [--shapes small|all] [--only NAME ...] [--budget S]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from bench.common import command_parser

#: The estimate's aim: within this share of the measured peak, above or below.
TARGET = 0.25


@dataclass(frozen=True)
class Shape:
    name: str
    rows: int
    features: int
    depth: int
    classes: int = 0  # 0: regression
    leaf: str = "constant"


SHAPES = (
    Shape("reg-10k-200-d8", 10_000, 200, 8),
    Shape("cls50-10k-5-d4", 10_000, 5, 4, classes=50),
    Shape("cls2-100k-10-d4", 100_000, 10, 4, classes=2),
    Shape("cls50-20k-10-d6", 20_000, 10, 6, classes=50),
    Shape("reg-lin-100k-50-d5", 100_000, 50, 5, leaf="linear"),
    Shape("cls10-100k-19-d6", 100_000, 19, 6, classes=10),
    Shape("reg-100k-200-d6", 100_000, 200, 6),
    Shape("cls5-300k-50-d5", 300_000, 50, 5, classes=5),
    Shape("reg-1m-19-d8", 1_000_000, 19, 8),
    Shape("reg-1m-192-d4", 1_000_000, 192, 4),
    Shape("cls50-1m-19-d8", 1_000_000, 19, 8, classes=50),
)
SMALL = tuple(s for s in SHAPES if s.rows * s.features <= 5_000_000)


def _data(shape: Shape, rows: int):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((rows, shape.features))
    signal = X[:, : min(5, shape.features)].sum(axis=1)
    if shape.classes:
        y = np.minimum((signal / min(5, shape.features) * shape.classes).astype(int), shape.classes - 1)
    else:
        y = signal + 0.1 * rng.standard_normal(rows)
    return X, y


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))


def measure(shape: Shape, budget: float) -> dict:
    """Fit ``shape`` in this process (a child's): the bytes the fit added at its peak, its estimate, its seconds."""
    import torch

    from get_core import GETClassifier, GETRegressor
    from get_core.engine import memory

    torch.set_num_threads(1)
    kind = GETClassifier if shape.classes else GETRegressor
    settings = dict(depth=shape.depth, time_budget=budget, random_state=0,
                    **({} if shape.classes else {"leaf": shape.leaf}))
    kind(**settings).fit(*_data(shape, 200))  # torch, the kernels and their thread pools, outside the measure
    X, y = _data(shape, shape.rows)
    model, levels = kind(**settings), []
    _record_polish_levels(levels)
    config = model._config()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # VmHWM := VmRSS
    base = _status("VmRSS")
    wall = time.monotonic()
    model.fit(X, y)
    seconds = time.monotonic() - wall
    peak = _status("VmHWM") - base
    estimate = estimated(model.tree_.meta["config"]["n_starts"], levels, shape, config)
    return {**asdict(shape), "budget": budget, "peak_mb": round(peak / 2**20), "estimate_mb": round(estimate / 2**20),
            "ratio": round(estimate / peak, 3), "fit_s": round(seconds, 1),
            "starts": [model.tree_.meta["config"]["n_starts"], *(s for _, _, s in levels)], "levels": levels}


def _record_polish_levels(levels: list) -> None:
    """Record each budgeted polish level's (level, rows in all, starts) as the fit plans it: its subtrees' rows are
    padded to the largest, which only the fit knows."""
    from get_core.engine import polish

    plan_level = polish._level_plan

    def recorded(problems, config, depth, gen, fit, level, decisions, n_rows):
        level_config, race = plan_level(problems, config, depth, gen, fit, level, decisions, n_rows)
        if race is not None:
            levels.append((level, problems.Xa.shape[0] * problems.Xa.shape[1], level_config.n_starts))
        return level_config, race

    polish._level_plan = recorded


def estimated(starts: int, levels: list, shape: Shape, config) -> int:
    """The estimate at the starts the fit's race took and each polish level's (each at least its probe's,
    ``memory.least_starts``): the largest of them."""
    from get_core.engine import memory

    least = memory.least_starts(config)
    n, p, c = shape.rows, shape.features, shape.classes
    return max([memory.config_bytes(n, p, config, c, max(starts, least))]
               + [memory.polish_bytes(n, rows, p, config, c, level, max(s, least)) for level, rows, s in levels])


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.memory_peaks")
    parser.add_argument("--shapes", choices=("small", "all"), default="small",
                        help="small: the shapes of at most 5 million cells (a few minutes); all: every shape")
    parser.add_argument("--only", nargs="+", default=None, help="shape names to run (see SHAPES)")
    parser.add_argument("--budget", type=float, default=3.0, help="each fit's time_budget in seconds")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(next(s for s in SHAPES if s.name == args.child), args.budget)), flush=True)
        return
    shapes = [s for s in (SHAPES if args.shapes == "all" or args.only else SMALL)
              if args.only is None or s.name in args.only]
    rows = []
    for shape in shapes:
        wall = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "bench.studies.memory_peaks", "--child", shape.name,
                               "--budget", str(args.budget)], capture_output=True, text=True)
        if done.returncode:
            print(json.dumps({"name": shape.name, "error": done.stderr.strip().splitlines()[-1:]}), flush=True)
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["child_s"] = round(time.monotonic() - wall, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{'shape':<22}{'peak MB':>9}{'estimate MB':>13}{'ratio':>7}{'starts':>8}{'fit s':>7}")
    for row in rows:
        flag = "" if abs(row["ratio"] - 1) <= TARGET else "  (off)"
        print(f"{row['name']:<22}{row['peak_mb']:>9,}{row['estimate_mb']:>13,}{row['ratio']:>7.2f}"
              f"{'/'.join(map(str, row['starts'])):>8}"
              f"{row['fit_s']:>7}{flag}")


if __name__ == "__main__":
    main()
