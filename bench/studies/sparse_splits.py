"""Test R2 of k-sparse GET trees (``max_split_features=k``) against the dense tree and CART, at one depth.

Why: issue 20 asks how much accuracy splits of at most k features cost. Per (dataset, seed) this tool fits the
dense tree, one tree per k (same seed, split and budget) and sklearn's CART of the same depth, and records test and
training R2 and the most features any split uses (read from the fitted tree, so the k constraint is checked too).

Usage: python -m bench.studies.sparse_splits --datasets cpu_act electrical_grid_stability --seeds 0 1 2 --starts 4 \
           --epochs 600
       python -m bench.studies.sparse_splits --report            # Markdown table from the finished cells
Cells go to a JSON-lines file and are skipped on a rerun.
"""
from __future__ import annotations

import argparse
import time
from statistics import mean

import numpy as np
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from bench.common import RESULTS_DIR, Budget, int_in
from bench.studies.study import run_study, study_key, study_parser
from get_core.config import GETConfig
from get_core.engine.train import train

RESULTS = RESULTS_DIR / "sparse-splits.jsonl"
DENSE = "dense"


def fit_cell(X_tr, y_tr, X_te, y_te, method: str, leaf: str, depth: int, seed: int, budget: Budget) -> dict:
    """One fit: ``method`` is "cart", "dense" or k as text; test and training R2, and the widest split."""
    t0 = time.perf_counter()
    if method == "cart":
        model = DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(X_tr, y_tr)
        predict, widest = model.predict, 1
    else:
        k = None if method == DENSE else int(method)
        tree = train(X_tr, y_tr, GETConfig(depth=depth, leaf=leaf, n_starts=budget.n_starts, n_epochs=budget.n_epochs,
                                            random_state=seed, max_split_features=k))
        predict, widest = tree.predict, int(np.count_nonzero(tree.weights, axis=1).max())
    return {"test": float(r2_score(y_te, predict(X_te))), "train": float(r2_score(y_tr, predict(X_tr))),
            "widest": widest, "seconds": time.perf_counter() - t0}


def report(records: list[dict]) -> str:
    """Markdown: mean test R2 (%) per dataset and method over seeds, the widest split, and the mean over datasets."""
    methods = sorted({r["method"] for r in records}, key=lambda m: (m == "cart", m == DENSE, m))
    lines = ["| dataset | leaf | " + " | ".join(f"{m} test (widest)" for m in methods) + " | seeds |",
             "|---|---|" + "---:|" * (len(methods) + 1)]
    for name, leaf in sorted({(r["dataset"], r["leaf"]) for r in records}):
        rows = [r for r in records if r["dataset"] == name and r["leaf"] == leaf]
        cells = []
        for m in methods:
            mine = [r for r in rows if r["method"] == m]
            cells.append(f"{100 * mean(r['test'] for r in mine):.2f} ({max(r['widest'] for r in mine)})" if mine
                         else "")
        lines.append(f"| {name} | {leaf} | " + " | ".join(cells) + f" | {len({r['seed'] for r in rows})} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = study_parser(__doc__, "bench.studies.sparse_splits", RESULTS)
    parser.add_argument("--ks", nargs="+", type=int_in(1), default=[1, 2, 3], help="features per split (default 1 2 3)")
    parser.add_argument("--depth", type=int_in(1, 12), default=4, help="tree depth (default 4)")
    parser.add_argument("--leaves", nargs="+", choices=["constant", "linear"], default=["linear"],
                        help="leaf types (default: linear)")
    parser.add_argument("--starts", type=int_in(1), help="starts per fit instead of the budget's")
    parser.add_argument("--epochs", type=int_in(1), help="epochs per stage instead of the budget's")
    return parser.parse_args(argv)


def cells(args: argparse.Namespace, budget: Budget, name: str, seed: int, split: tuple):
    """One cell per (leaf, method): CART once, the dense tree, then one per k; (key, fit, describe) for run_study."""
    methods = ["cart", DENSE, *(str(k) for k in args.ks)]
    budget = Budget(budget.name, args.starts or budget.n_starts, args.epochs or budget.n_epochs)
    for leaf in args.leaves:
        for method in methods:
            yield (study_key(args, name, seed, leaf, method, f"depth{args.depth}",
                             f"{budget.n_starts}x{budget.n_epochs}"),
                   lambda leaf=leaf, method=method: {"leaf": leaf, "method": method, "depth": args.depth,
                                                     **fit_cell(*split, method, leaf, args.depth, seed, budget)},
                   lambda r: f"{name} seed {seed} {r['leaf']} {r['method']}: test {100 * r['test']:.2f}, train "
                             f"{100 * r['train']:.2f}, widest split {r['widest']}, {r['seconds']:.0f} s")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run_study(args, report, cells)


if __name__ == "__main__":
    main()
