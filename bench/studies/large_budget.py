"""A time budget on a large table (issue 34, finding 7): ``GETRegressor(time_budget=20)`` on 750,000 x 19 took 42.2 s,
past the docs' promise that a fit ends within twice its budget. This fits the same shape (a planted dense oblique
depth-3 tree on 19 uniform features plus noise, ``tests.planted.planted_oblique``) once and prints one JSON line:
wall and CPU seconds, the load before the fit, the fit's own timings (CART rows, the race's plan, polish) and the
training R2. Run it under ``/usr/bin/time -v`` for the peak memory.

Usage: nice python -m bench.studies.large_budget --rows 750000 --features 19 --budget 20
"""

from __future__ import annotations

import json
import os
import time

from bench.common import command_parser
from get_core import GETRegressor
from tests.planted import planted_oblique

#: what the fit's meta says about where its seconds went
TIMINGS = ("fit_seconds", "optimize_seconds", "polish_seconds", "cpu_share", "starved", "train_r2",
           "node_refit_passes", "polish_nodes_visited")


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.large_budget")
    parser.add_argument("--rows", type=int, default=750_000)
    parser.add_argument("--features", type=int, default=19)
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--depth", type=int, default=None, help="the estimator's default when left out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    X, y, _ = planted_oblique(args.rows, 3, args.seed, p=args.features, noise=0.3)
    model = GETRegressor(time_budget=args.budget, random_state=args.seed,
                         **({} if args.depth is None else {"depth": args.depth}))
    load = os.getloadavg()[0]
    wall, cpu = time.monotonic(), time.process_time()
    model.fit(X, y)
    meta = model.tree_.meta
    plan = meta.get("plan", {}).get("decisions", [])
    print(json.dumps({
        "rows": args.rows, "features": args.features, "budget": args.budget, "depth": model.tree_.depth,
        "wall_s": round(time.monotonic() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
        "load_before": round(load, 2), "threads": meta.get("plan", {}).get("threads"),
        **{key: meta[key] for key in TIMINGS if key in meta},
        "decisions": [d for d in plan if d[0] in ("race", "cart_rows", "polish", "stop", "polish_stop")]}))


if __name__ == "__main__":
    main()
