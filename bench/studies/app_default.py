"""The app's default run on the shared datasets, through the worker's own code path (``runs.training.train_run``).

Each cell trains what the Train page launches with its defaults (``app_params``: depth, leaves, budget, features per
split from ``GETConfig``; the "about 10 s" budget) on one dataset and seed, end to end: the 75/25 split, encoding,
the GET fit, the baselines at their usual settings (depth-tuned CART, a 100-tree forest, HistGradientBoosting) and
the GET counterpart the Compare page shows. It records the test score of GET and of each baseline of that run (R2, or
accuracy with ``--task classification`` on the class tables, whose default leaves are constant), the wall time from
start to ending (the time a user waits, baselines included), the progress reports' shape (did the bar ever move
backwards, how long it stood still) and the features per split. ``--set key=value`` overrides a config setting, to
try other defaults.

Examples:
  python -m bench.studies.app_default --seeds 0 --datasets airfoil_self_noise abalone
  python -m bench.studies.app_default --seeds 0 1 2
  python -m bench.studies.app_default --set depth=6 --set leaf=linear --seeds 0
  python -m bench.studies.app_default --task classification --seeds 0
  python -m bench.studies.app_default --report
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from bench.common import DEFAULT_DATA_DIR, RESULTS_DIR, CellStore, command_parser, find_datasets
from get_core.config import APP_DEFAULTS as DEFAULTS
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs.channel import Ending
from get_core.runs.training import train_run

RESULTS = RESULTS_DIR / "app-default.jsonl"
CLASS_RESULTS = RESULTS_DIR / "app-default-classes.jsonl"
APP_BUDGET_S = DEFAULTS.time_budget  # the Train page's default budget, "about 10 s" (pages/train.py BUDGETS)


def app_params(target: str, features: Sequence[str], seed: int = 0, **overrides: Any) -> dict:
    """The run parameters the Train page sends with its defaults (one tree of the default depth and features per
    split, the "about 10 s" budget, a quarter of the rows to test), with ``overrides`` of config settings."""
    config = {"depth": DEFAULTS.depth, "leaf": DEFAULTS.leaf, "linear_leaves": DEFAULTS.linear_leaves,
              "clip_leaves": DEFAULTS.clip_leaves, "n_starts": DEFAULTS.n_starts, "n_epochs": DEFAULTS.n_epochs,
              "time_budget": DEFAULTS.time_budget, "alpha_range": list(DEFAULTS.alpha_range),
              "n_alphas": DEFAULTS.n_alphas, "learning_rate": DEFAULTS.learning_rate, "l1": DEFAULTS.l1, "polish": "auto", "device": "auto",
              "scaling": DEFAULTS.scaling, "max_split_features": DEFAULTS.max_split_features, **overrides}
    return {"data": DataSpec(target=target, features=tuple(features)).to_dict(), "seed": seed,
            "test_fraction": 0.25, "config": config}


@dataclass
class MemoryChannel:
    """A run's channel kept in memory: its artifacts and each progress report with the time it came."""

    started: float = field(default_factory=time.perf_counter)
    artifacts: dict[str, Any] = field(default_factory=dict)
    reports: list[tuple[float, float, str | None]] = field(default_factory=list)  # (seconds, progress, phase)

    def report(self, *, progress: float, phase: str | None = None, **_: Any) -> bool:
        self.reports.append((time.perf_counter() - self.started, float(progress), phase))
        return False

    def put_json(self, name: str, value: Any) -> None:
        self.artifacts[name] = json.loads(json.dumps(value))

    def cancelled(self) -> bool:
        return False

    def ended_elsewhere(self) -> bool:
        return False

    def on_stop(self, ending: Ending) -> None:
        pass


def longest_still(reports: list[tuple[float, float, str | None]], wall: float) -> float:
    """The longest time the progress bar stood at one value (seconds), up to the run's end."""
    still, since, last = 0.0, 0.0, None
    for t, progress, _ in [*reports, (wall, 1.0, None)]:
        if last is None or progress > last + 1e-9:
            still, since, last = max(still, t - since), t, progress
    return still


def run_cell(path: Path, seed: int, overrides: dict, budget: float = APP_BUDGET_S, classify: bool = False) -> dict:
    """One app default run; a class table's scores are accuracies, stored under the same ``*_r2`` keys so one
    report reads both (its header says which)."""
    frame = pd.read_csv(path)
    target, features = "target", [c for c in frame.columns if c != "target"]
    params = app_params(target, features, seed, **{"time_budget": budget, **overrides})
    if classify:
        params["data"] = DataSpec(target=target, features=tuple(features), task="classification").to_dict()
        params["config"]["leaf"] = "constant"  # as the Train page sends for classes
    load_before = os.getloadavg()[0]
    channel = MemoryChannel()
    ending = train_run(to_parquet_bytes(frame), params, channel)
    wall = time.perf_counter() - channel.started
    models = channel.artifacts["baselines"]["models"]
    score = "accuracy" if classify else "r2"
    get_score = channel.artifacts["class_scores"]["accuracy"] if classify else ending.scores[0]
    widths = np.count_nonzero(np.asarray(channel.artifacts["model"]["weights"]), axis=1)
    progress = [p for _, p, _ in channel.reports]
    return {"dataset": path.stem, "seed": seed, "overrides": overrides, "budget": budget, "task": score,
            "depth": params["config"]["depth"], "leaf": params["config"]["leaf"], "status": ending.status.value,
            "get_r2": get_score, "forest_r2": models["random_forest"][score], "cart_r2": models["cart"][score],
            "cart_depth": models["cart"].get("depth"), "hgb_r2": models["hist_gradient_boosting"][score],
            "counterpart_r2": next((models[k][score] for k in ("get_sparse", "get_dense") if k in models), None),
            "forest_trees": models["random_forest"].get("n_trees", 100),
            "wall_s": wall, "features_per_split": float(widths.mean()), "max_features_per_split": int(widths.max()),
            "progress_backwards": bool(np.any(np.diff(progress) < -1e-9)),
            "longest_still_s": longest_still(channel.reports, wall), "n_rows": len(frame),
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def parse_overrides(items: Sequence[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULTS.__dataclass_fields__:
            raise SystemExit(f"--set {item}: expected SETTING=VALUE with a GETConfig setting")
        out[key] = json.loads(value) if value[:1] in "0123456789-[{tfn" else value
    return out


def report(records: list[dict]) -> str:
    score = "accuracy" if records and records[0].get("task") == "accuracy" else "R2"
    lines = [f"Test {score} in %.", "",
             "| dataset | seed | budget s | depth, leaves | GET | forest (trees) | HGB | CART (depth) | GET - forest | "
             "GET - CART | wall s | still s | features/split |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['dataset']} | {r['seed']} | {r.get('budget', APP_BUDGET_S):g} | {r['depth']}, {r['leaf']} "
                     f"| {100 * r['get_r2']:.2f} | {100 * r['forest_r2']:.2f} ({r.get('forest_trees', 100)}) | "
                     f"{100 * r['hgb_r2']:.2f} | "
                     f"{100 * r['cart_r2']:.2f} ({r.get('cart_depth', r['depth'])}) | "
                     f"{100 * (r['get_r2'] - r['forest_r2']):+.2f} | {100 * (r['get_r2'] - r['cart_r2']):+.2f} | "
                     f"{r['wall_s']:.1f} | "
                     f"{r['longest_still_s']:.1f} | {r['features_per_split']:.1f} |")
    by = {}
    for r in records:
        key = f"depth {r['depth']}, {r['leaf']} leaves, {r.get('budget', APP_BUDGET_S):g} s"
        by.setdefault(key, []).append(r)
    for key, rows in by.items():
        gap = np.mean([r["get_r2"] - r["forest_r2"] for r in rows])
        lines.append(f"\n{key}: {len(rows)} cells, mean GET - forest "
                     f"{100 * gap:+.2f} points, GET - CART "
                     f"{100 * np.mean([r['get_r2'] - r['cart_r2'] for r in rows]):+.2f}, GET - HGB "
                     f"{100 * np.mean([r['get_r2'] - r['hgb_r2'] for r in rows]):+.2f}, median wall "
                     f"{np.median([r['wall_s'] for r in rows]):.1f} s (max {max(r['wall_s'] for r in rows):.1f})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.app_default")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", nargs="*", default=None, help="names or globs (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a GETConfig setting other than the app's default (repeatable)")
    parser.add_argument("--budget", type=float, default=APP_BUDGET_S,
                        help="the run's seconds, baselines included (default: the app's %(default)s)")
    parser.add_argument("--task", choices=("regression", "classification"), default="regression",
                        help="classification: the class tables in DATA_DIR/classification, scored by accuracy")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"default: {RESULTS.name}, or {CLASS_RESULTS.name} for classification (in results/)")
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")
    args = parser.parse_args(argv)
    classify = args.task == "classification"
    store = CellStore(args.out or (CLASS_RESULTS if classify else RESULTS))
    data_dir = args.data_dir / "classification" if classify else args.data_dir
    if args.report:
        print(report(list(store.load().values())))
        return
    overrides = parse_overrides(args.set)
    done = store.load()
    for path in find_datasets(data_dir, args.datasets):
        for seed in args.seeds:
            config = app_params("target", [], seed, **{"time_budget": args.budget, **overrides})["config"]
            key = f"{path.stem}|{seed}|{json.dumps(config, sort_keys=True)}"  # the run's settings, not the flags
            if key in done:
                continue
            record = run_cell(path, seed, overrides, args.budget, classify)
            store.append({"key": key, **record})
            print(f"{path.stem} seed {seed}: GET {record['get_r2']:.4f} forest {record['forest_r2']:.4f} "
                  f"HGB {record['hgb_r2']:.4f} wall {record['wall_s']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
