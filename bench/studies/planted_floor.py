"""How close to its noise ceiling can a tree fitted on 6,000 rows of a planted dense depth-4 oblique tree come?
(issue 21's planted target: 98% of the ceiling in test R2 with ``time_budget=10``).

The study puts GET's fits beside reference trees that know more than any fit can:
  * ``planted``: the planted splits themselves, leaves refit on the training rows (what the ceiling assumes);
  * ``svm-true`` / ``logistic-true``: the planted tree's structure, each split refit from the training rows that
    reach it with their true side as label (a max-margin linear SVM, C=1e6, or a nearly unregularised logistic
    regression), leaves refit. They see every row's noise-free side; a fit sees only its noisy y;
  * ``get-10`` and ``get-120``: ``GETRegressor``'s pipeline with ``time_budget`` 10 and 120 s (defaults otherwise).
Test R2 is on 4,000 fresh rows of the same tree, as a share of the noise ceiling (``tests.planted``); the generator
is part c of ``bench.studies.time_budget`` (6 features, noise sd 0.3). ``--rows`` 12000 shows how the floor moves
with twice the rows. The reference trees also record the median angle between their and the planted split normals.

Usage: nice python -m bench.studies.planted_floor --rows 6000 --seeds 0 1 2
       python -m bench.studies.planted_floor --report
Cells go to a JSON-lines file and are skipped on a rerun; fits are single-threaded.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from statistics import median

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import r2_score
from sklearn.svm import LinearSVC

from bench.common import RESULTS_DIR, add_cell_options, command_parser, fill_cells, thread_limit
from bench.studies.time_budget import PLANTED_NOISE, PLANTED_TEST_ROWS
from get_core import ENGINE_VERSION
from get_core.config import GETConfig
from get_core.engine.train import MinMax, scaled_splits, train, tree_from_params
from get_core.model.tree import ObliqueTree
from tests.planted import noise_ceiling, planted_oblique, planted_paths, planted_tree

RESULTS = RESULTS_DIR / "planted-floor.jsonl"
DEPTH = 4
REFERENCES = ("planted", "svm-true", "logistic-true")
BUDGETS = {"get-10": 10.0, "get-120": 120.0}
METHODS = REFERENCES + tuple(BUDGETS)
NEARLY_HARD = 1e6  # C of the side classifiers: a hard margin where the sides separate, as they do by construction


def reference_splits(X: np.ndarray, seed: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """The splits (weights, thresholds; right when w . x > b) of a reference tree on rows X of planted tree
    ``seed``: the planted ones, or each refit by a side classifier on the rows that reach it."""
    weights, thresholds, _ = planted_tree(DEPTH, seed)
    if method == "planted":
        return weights, thresholds
    paths = planted_paths(X, weights, thresholds)
    fitted_w, fitted_b = np.zeros_like(weights), np.zeros_like(thresholds)
    for t in range(1, len(weights) + 1):
        level = int(np.log2(t))
        rows = paths[:, level] == t
        right = paths[rows, level + 1] == 2 * t + 1
        model = (LinearSVC(C=NEARLY_HARD, loss="hinge", dual=True, max_iter=200_000, random_state=seed)
                 if method == "svm-true" else LogisticRegression(C=NEARLY_HARD, max_iter=5000))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X[rows], right)
        fitted_w[t - 1], fitted_b[t - 1] = model.coef_[0], -model.intercept_[0]
    return fitted_w, fitted_b


def tree_with_splits(X: np.ndarray, y: np.ndarray, weights: np.ndarray, thresholds: np.ndarray) -> ObliqueTree:
    """A constant-leaf ObliqueTree with these splits (original units), leaves refit on X, y."""
    scaling = MinMax.fit(X, y)
    _, ys = scaling.transform(X, y)
    return tree_from_params(scaled_splits(weights, thresholds, scaling, torch.float64), scaling, None,
                            GETConfig(depth=DEPTH), X, ys)


def normal_angles(weights: np.ndarray, seed: int) -> np.ndarray:
    """Degrees between each split normal and the planted one."""
    planted = planted_tree(DEPTH, seed)[0]
    cos = np.einsum("ij,ij->i", weights, planted) / np.linalg.norm(weights, axis=1) / np.linalg.norm(planted, axis=1)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def cell(rows: int, seed: int, method: str) -> dict:
    X, y, _ = planted_oblique(rows, DEPTH, seed, noise=PLANTED_NOISE)
    X_te, y_te, clean_te = planted_oblique(PLANTED_TEST_ROWS, DEPTH, seed, noise=PLANTED_NOISE)
    t0 = time.perf_counter()
    extra = {}
    if method in BUDGETS:
        tree = train(X, y, GETConfig(depth=DEPTH, random_state=seed, time_budget=BUDGETS[method]))
    else:
        weights, thresholds = reference_splits(X, seed, method)
        tree = tree_with_splits(X, y, weights, thresholds)
        extra = {"median_angle": float(np.median(normal_angles(weights, seed)))}
    test_r2 = float(r2_score(y_te, tree.predict(X_te)))
    ceiling = float(noise_ceiling(clean_te, PLANTED_NOISE))
    return {"rows": rows, "seed": seed, "method": method, "wall_seconds": time.perf_counter() - t0,
            "train_r2": 100 * float(r2_score(y, tree.predict(X))), "test_r2": 100 * test_r2,
            "ceiling": 100 * ceiling, "share_of_ceiling": 100 * test_r2 / ceiling, **extra}


def report(records: list[dict]) -> str:
    """Per rows and method: the test share of every seed and its median, the median training R2 and its median gap
    to the planted tree's on the same rows (seeds with both), and the reference trees' median split angle."""
    lines = ["| training rows | method | test R2 / ceiling (%) by seed | median | train R2 (median) | "
             "train R2 minus the planted tree's (median) | split angle, degrees (median) |",
             "|---:|---|---|---:|---:|---:|---:|"]
    for rows in sorted({r["rows"] for r in records}):
        planted = {r["seed"]: r["train_r2"] for r in records if r["rows"] == rows and r["method"] == "planted"}
        for method in METHODS:
            cells = sorted((r for r in records if r["rows"] == rows and r["method"] == method), key=lambda r: r["seed"])
            if not cells:
                continue
            shares = " / ".join(f"{r['share_of_ceiling']:.1f}" for r in cells)
            gaps = [r["train_r2"] - planted[r["seed"]] for r in cells if r["seed"] in planted]
            gap = f"{median(gaps):+.2f}" if gaps and method != "planted" else ""
            angle = f"{median(r['median_angle'] for r in cells):.2f}" if "median_angle" in cells[0] else ""
            lines.append(f"| {rows:,} | {method} | {shares} | {median(r['share_of_ceiling'] for r in cells):.1f} | "
                         f"{median(r['train_r2'] for r in cells):.2f} | {gap} | {angle} |")
    return "\n".join(lines)


def main() -> None:
    parser = command_parser(__doc__, "bench.studies.planted_floor")
    parser.add_argument("--rows", nargs="+", type=int, default=[6000], help="training rows (default: 6000)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="planted trees (default: 0 1 2)")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    add_cell_options(parser, RESULTS)
    args = parser.parse_args()
    with thread_limit(1):
        fill_cells(args, report, (
            (f"{rows}|{seed}|{method}|v{ENGINE_VERSION}", partial(cell, rows, seed, method),
             lambda r: f"{r['key']}: {r['share_of_ceiling']:.1f}% of the ceiling, train R2 {r['train_r2']:.2f}")
            for rows in args.rows for seed in args.seeds for method in args.methods))


if __name__ == "__main__":
    main()
