"""A time budget on a large table (issue 34, finding 7; issue 50): ``GETRegressor(time_budget=20)`` on 750,000 x 19
took 42.2 s, past the docs' promise that a fit ends within twice its budget, and ``GETClassifier(time_budget=20)`` on
1,000,000 x 19 of 50 classes 44.7 s. This fits the same shape (a planted dense oblique depth-3 tree on 19 uniform
features plus noise, ``tests.planted.planted_oblique``; with ``--classes C`` its target cut into C classes of equal
size) once and prints one JSON line: wall and CPU seconds, the load before the fit, the fit's own timings (CART
rows, the race's plan, polish), the training R2 and ``phases``: the wall and fit-clock seconds (``budget.now``) of
each step of the pipeline (data preparation, scaling, probes, the CART start, the race, the leaf refit, the final
passes), timed by wrapping the trainer's calls. Run it under ``/usr/bin/time -v`` for the peak memory.

Usage: nice python -m bench.studies.large_budget --rows 750000 --features 19 --budget 20
       nice python -m bench.studies.large_budget --rows 1000000 --classes 50 --budget 20
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from typing import Iterator

import numpy as np

from bench.common import command_parser
from get_core import GETClassifier, GETRegressor, budget
from get_core.engine import optimize, train
from tests.planted import planted_oblique

#: what the fit's meta says about where its seconds went
TIMINGS = ("fit_seconds", "optimize_seconds", "polish_seconds", "cpu_share", "starved", "train_r2",
           "node_refit_passes", "polish_nodes_visited")


#: the trainer's steps timed by ``phases``: (module, attribute, name)
PHASES = ((train, "refuse_oversized_fit", "memory check"), (train.MinMax, "fit", "scaling (fit)"),
          (train.MinMax, "transform", "scaling"), (train.class_task, "one_hot", "one-hot targets"),
          (train.Problems, "from_arrays", "tensors"), (train, "fit_header", "plan header (data digest)"),
          (optimize, "_probed", "probes"), (train, "_cart_rows", "CART rows"),
          (train, "initial_params", "starts (CART start)"), (train, "_total_variance", "total variance"),
          (train, "run_stages", "race"), (train, "tree_from_params", "leaf refit"),
          (train, "refit_nodes", "node refit"),
          (train, "polish", "polish"), (train, "collapse_dead_splits", "dead splits"),
          (train.leaves, "row_losses", "training loss"), (train, "train_accuracy", "training accuracy"))


@contextlib.contextmanager
def phases() -> Iterator[list[tuple[str, float, float]]]:
    """Within it, each call of a ``PHASES`` step appends (name, wall seconds, fit-clock seconds)."""
    timed: list[tuple[str, float, float]] = []
    originals = [(owner, attribute, vars(owner)[attribute]) for owner, attribute, _ in PHASES]  # as defined

    def wrapped(step, name):
        @functools.wraps(step)
        def call(*args, **kwargs):
            wall, clock = time.monotonic(), budget.now()
            try:
                return step(*args, **kwargs)
            finally:
                timed.append((name, round(time.monotonic() - wall, 2), round(budget.now() - clock, 2)))
        return call

    for owner, attribute, name in PHASES:
        setattr(owner, attribute, wrapped(getattr(owner, attribute), name))  # bound where it is a classmethod
    try:
        yield timed
    finally:
        for owner, attribute, step in originals:
            setattr(owner, attribute, step)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.large_budget")
    parser.add_argument("--rows", type=int, default=750_000)
    parser.add_argument("--features", type=int, default=19)
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--depth", type=int, default=None, help="the estimator's default when left out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", type=int, default=0, help="a classifier of this many classes (0: regression)")
    args = parser.parse_args(argv)
    X, y, _ = planted_oblique(args.rows, 3, args.seed, p=args.features, noise=0.3)
    if args.classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, args.classes + 1)[1:-1]))
    model = (GETClassifier if args.classes else GETRegressor)(
        time_budget=args.budget, random_state=args.seed, **({} if args.depth is None else {"depth": args.depth}))
    load = os.getloadavg()[0]
    wall, cpu = time.monotonic(), time.process_time()
    with phases() as timed:
        model.fit(X, y)
    meta = model.tree_.meta
    plan = meta.get("plan", {}).get("decisions", [])
    print(json.dumps({
        "rows": args.rows, "features": args.features, "classes": args.classes, "budget": args.budget,
        "depth": model.tree_.depth,
        "wall_s": round(time.monotonic() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
        "load_before": round(load, 2), "threads": meta.get("plan", {}).get("threads"),
        **{key: meta[key] for key in TIMINGS if key in meta},
        "decisions": [d for d in plan if d[0] in ("race", "cart_rows", "polish", "stop", "polish_stop")],
        "phases": [step for step in timed if step[1] >= 0.05]}))


if __name__ == "__main__":
    main()
