"""Validation and test R2 of GET / GET-Linear at every depth: what the depth search sees and what it would pick.

Why: `GETRegressorCV` stops after `patience` depths without a better validation R2 and the linear-leaf rule changes
how noisy that validation curve is. This tool fits, for each depth d, exactly what the search fits at d (the 2:1
split of the training part, same seed) and the refit on the whole training part, so any patience can be replayed
offline: `--report` gives the depth each patience picks and that tree's test R2, beside the forest-free oracle.

Usage: python -m bench.studies.depth_curves --datasets airfoil_self_noise abalone --rules gcv ols --seeds 0 1
       python -m bench.studies.depth_curves --report            # Markdown table from the finished cells
Cells (dataset, seed, leaf, rule, budget, depth) go to a JSON-lines file and are skipped on a rerun.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
from sklearn.metrics import r2_score

from bench.common import RESULTS_DIR, Budget, int_in
from bench.studies.study import run_study, study_parser
from get_core import ENGINE_VERSION
from get_core.estimator import DepthSearch, GETRegressorCV
from get_core.model.tree import LINEAR_LEAF_RULES, MAX_DEPTH

RESULTS = RESULTS_DIR / "depth-curves.jsonl"
PATIENCES = (1, 2, 3, 4, None)  # None: every depth fitted


def cell_key(dataset: str, seed: int, leaf: str, rule: str, budget: str, depth: int, max_rows: int | None) -> str:
    rows = "" if max_rows is None else f"|rows{max_rows}"
    return f"{dataset}|{seed}|{leaf}|{rule}|{budget}|{depth}|v{ENGINE_VERSION}{rows}"


def fit_depth(X_tr, y_tr, X_te, y_te, depth: int, leaf: str, rule: str, seed: int, budget: Budget) -> dict:
    """The search's fit at ``depth`` (validation R2 on its 2:1 split) and the refit on all training rows (test R2)."""
    t0 = time.perf_counter()
    model = GETRegressorCV(depths=[depth], leaf=leaf, linear_leaves=rule, n_starts=budget.n_starts,
                           n_epochs=budget.n_epochs, random_state=seed).fit(X_tr, y_tr)
    return {"val": 100 * model.cv_results_[0]["validation_r2"], "test": 100 * r2_score(y_te, model.predict(X_te)),
            "train": 100 * r2_score(y_tr, model.predict(X_tr)), "sec": time.perf_counter() - t0}


def choose(val_by_depth: dict[int, float], patience: int | None, tol: float = 1e-2) -> int:
    """The depth GETRegressorCV keeps from these validation R2s (%; its tol 1e-4 in R2 is 1e-2 here)."""
    depths = sorted(val_by_depth)
    search = DepthSearch(depths[0], patience, tol)
    for depth in depths:
        if search.add(depth, val_by_depth[depth]):
            break
    return search.best_depth


def report(records: list[dict]) -> str:
    """Markdown: per (rule, dataset, seed), the depth and test R2 each patience picks; averages per rule."""
    curves: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for r in records:
        curves[(r["leaf"], r["rule"], r["budget"], r["dataset"], r["seed"])][r["depth"]] = r
    heads = [f"patience {p}" if p else "all depths" for p in PATIENCES]
    lines = ["| leaf / rule / budget | dataset | seed | " + " | ".join(heads) + " | best test (depth) |",
             "|---|---|---:|" + "---:|" * (len(PATIENCES) + 1)]
    totals: dict[tuple, list] = defaultdict(list)
    for (leaf, rule, budget, dataset, seed), curve in sorted(curves.items()):
        vals = {d: r["val"] for d, r in curve.items()}
        picks = [choose(vals, p) for p in PATIENCES]
        totals[(leaf, rule, budget, seed)].append([curve[d]["test"] for d in picks])
        best = max(curve.values(), key=lambda r: r["test"])
        cells = " | ".join(f"{curve[d]['test']:.2f} (d{d})" for d in picks)
        lines.append(f"| {leaf} / {rule} / {budget} | {dataset} | {seed} | {cells} | {best['test']:.2f} "
                     f"(d{best['depth']}) |")
    for (leaf, rule, budget, seed), rows in sorted(totals.items()):
        means = np.mean(rows, axis=0)
        lines.append(f"| **{leaf} / {rule} / {budget}: average** | {len(rows)} datasets | {seed} | "
                     + " | ".join(f"**{m:.2f}**" for m in means) + " | |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = study_parser(__doc__, "bench.studies.depth_curves", RESULTS)
    parser.add_argument("--leaf", choices=["constant", "linear"], default="linear", help="leaf type (default: linear)")
    parser.add_argument("--rules", nargs="+", choices=LINEAR_LEAF_RULES, default=list(LINEAR_LEAF_RULES),
                        help="linear_leaves rules (ignored for constant leaves)")
    parser.add_argument("--max-depth", type=int_in(1, MAX_DEPTH), default=9,
                        help="fit depths 1 to this (default: 9)")
    return parser.parse_args(argv)


def cells(args: argparse.Namespace, budget: Budget, name: str, seed: int, split: tuple):
    """One cell per rule and depth: (key, fit, describe) for ``study.run_study``."""
    for rule in args.rules if args.leaf == "linear" else ["-"]:
        for depth in range(1, args.max_depth + 1):
            yield (cell_key(name, seed, args.leaf, rule, args.budget, depth, args.max_rows),
                   lambda rule=rule, depth=depth: {
                       "leaf": args.leaf, "rule": rule, "depth": depth,
                       **fit_depth(*split, depth, args.leaf, rule if rule != "-" else "gcv", seed, budget)},
                   lambda r: f"{name} seed {seed} {r['rule']} depth {r['depth']}: validation {r['val']:.2f}, "
                             f"test {r['test']:.2f} ({r['sec']:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    run_study(parse_args(argv), report, cells)


if __name__ == "__main__":
    main()
