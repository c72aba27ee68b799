"""Test R2 of the depth search's refit from fresh starts (the paper) and from the validated tree (`refit_from_search`).

Why: `GETRegressorCV` picks a depth on a 2:1 split and refits that depth on the whole training part from fresh
starts; the refit sometimes lands in a worse optimum than the tree that was validated (training R2 of the refit
below the search fit's). `GETRegressorCV(refit_from_search=True)` makes the validated tree the refit's first start.
Per (dataset, seed, leaf) this tool runs the search once, then refits both ways: exactly what the two settings of
`refit_from_search` fit (same split, seed and configuration), for the price of one search.

Usage: python -m bench.studies.refit_start --datasets abalone airfoil_self_noise --seeds 0 1 2 --leaves linear constant
       python -m bench.studies.refit_start --report            # Markdown table from the finished cells
Cells go to a JSON-lines file and are skipped on a rerun.
"""
from __future__ import annotations

import argparse
import time
from statistics import mean, median

from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from bench.common import RESULTS_DIR, Budget
from bench.studies.study import run_study, study_key, study_parser
from get_core.estimator import GETRegressorCV
from get_core.config import GETConfig
from get_core.engine.train import train

RESULTS = RESULTS_DIR / "refit-start.jsonl"


def refit_both_ways(X_tr, y_tr, X_te, y_te, leaf: str, seed: int, budget: Budget) -> dict:
    """The search, its fresh refit (``test_a``) and the refit warm-started from the validated tree (``test_b``)."""
    t0 = time.perf_counter()
    settings = dict(leaf=leaf, n_starts=budget.n_starts, n_epochs=budget.n_epochs, random_state=seed)
    search = GETRegressorCV(**settings, refit_from_search=False).fit(X_tr, y_tr)
    # the search's own fit at the chosen depth, fitted again (deterministic for a seed): the estimator's other
    # parameters are at their defaults, which are GETConfig's
    config = GETConfig(**settings, depth=search.best_depth_)
    X_fit, _, y_fit, _ = train_test_split(X_tr, y_tr, test_size=search.validation_fraction, random_state=seed)
    validated = train(X_fit, y_fit, config)
    warm = train(X_tr, y_tr, config, warm_start=validated)
    def test_r2(tree) -> float:
        return float(r2_score(y_te, tree.predict(X_te)))

    return {"depth": search.best_depth_, "val": search.best_validation_r2_, "test_a": test_r2(search.tree_),
            "test_b": test_r2(warm), "train_a": search.tree_.meta["train_r2"], "train_b": warm.meta["train_r2"],
            "test_search": test_r2(validated), "seconds": time.perf_counter() - t0}


def report(records: list[dict]) -> str:
    """Markdown: per leaf, test and training R2 (%) of both refits per (dataset, seed), then the summary."""
    lines = ["| leaf | dataset | seed | depth | test: fresh refit | test: from search | train: fresh | "
             "train: from search |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    summary = []
    for leaf in sorted({r["leaf"] for r in records}, reverse=True):
        rows = sorted((r for r in records if r["leaf"] == leaf), key=lambda r: (r["dataset"], r["seed"]))
        for r in rows:
            lines.append(f"| {leaf} | {r['dataset']} | {r['seed']} | {r['depth']} | {100 * r['test_a']:.2f} | "
                         f"{100 * r['test_b']:.2f} | {100 * r['train_a']:.2f} | {100 * r['train_b']:.2f} |")
        diff = [100 * (r["test_b"] - r["test_a"]) for r in rows]
        summary.append(f"* {leaf} leaves, {len(rows)} (dataset, seed) pairs: test R2 from search minus fresh: mean "
                       f"{mean(diff):+.2f}, median {median(diff):+.2f}, better on {sum(d > 0.005 for d in diff)}, "
                       f"worse on {sum(d < -0.005 for d in diff)}; training R2 mean "
                       f"{mean(100 * (r['train_b'] - r['train_a']) for r in rows):+.2f}.")
    return "\n".join(lines + [""] + summary)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = study_parser(__doc__, "bench.studies.refit_start", RESULTS)
    parser.add_argument("--leaves", nargs="+", choices=["constant", "linear"], default=["linear", "constant"],
                        help="leaf types (default: linear constant)")
    return parser.parse_args(argv)


def cells(args: argparse.Namespace, budget: Budget, name: str, seed: int, split: tuple):
    """One cell per leaf type: (key, fit, describe) for ``study.run_study``."""
    for leaf in args.leaves:
        yield (study_key(args, name, seed, leaf),
               lambda leaf=leaf: {"leaf": leaf, **refit_both_ways(*split, leaf, seed, budget)},
               lambda r: f"{name} seed {seed} {r['leaf']}: depth {r['depth']}, test {100 * r['test_a']:.2f} "
                         f"fresh, {100 * r['test_b']:.2f} from search ({r['seconds']:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    run_study(parse_args(argv), report, cells)


if __name__ == "__main__":
    main()
