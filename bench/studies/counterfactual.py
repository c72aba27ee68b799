"""Time per exact counterfactual (``get_core.counterfactual``) on oblique trees of depth 4, 8 and 12.

Trees: dense random hyperplanes whose thresholds are the median of the training rows reaching each node (so every
leaf holds rows, as in a fitted tree), constant leaves holding the mean target of their rows (a linear target
plus a sine). Queries: training rows predicted below the 90th percentile, goal "at least the 90th percentile" (the
upper tenth of the tree's predictions), L1 in the default units, no grid (``resolution=0``: the exact nearest
row, as the baseline finds it); uncapped and with at most ``--cap`` changes. The
baseline solves the same program in every leaf that meets the goal, no pruning (``--baseline-depth`` and below).
Medians over ``--queries`` rows per cell, same process.

    python -m bench.studies.counterfactual                       # print the table
    python -m bench.studies.counterfactual --doc                 # and write it into docs/BENCHMARKS.md
    python -m bench.studies.counterfactual --depths 8 --features 50 --queries 10
"""
from __future__ import annotations

import platform
import statistics
import time

import numpy as np
import scipy

from bench.common import DEFAULT_DOC, command_parser, int_in, write_section
from get_core.model import counterfactual as cf
from get_core.model import counterfactual_programs as programs
from get_core.model.tree import ObliqueTree

SECTION = "counterfactual"
TITLE = "## Counterfactuals (python -m bench.studies.counterfactual)"


def routed_tree(depth: int, p: int, seed: int, whole: int = 0) -> tuple[ObliqueTree, np.ndarray]:
    """A depth-``depth`` tree over ``p`` Gaussian features and its training rows: each split a random direction
    through the median of its rows' projections, each leaf the mean scaled target of its rows. The first ``whole``
    features are whole numbers (ten times a Gaussian, rounded)."""
    rng = np.random.default_rng(seed)
    n = max(2000, 16 * 2 ** depth)
    X = rng.normal(size=(n, p))
    X[:, :whole] = np.round(10 * X[:, :whole])
    y = X @ rng.normal(size=p) + 3 * np.sin(2 * X[:, 0])
    x_min, x_scale = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
    xs, ys = (X - x_min) / x_scale, (y - y.min()) / np.ptp(y)
    weights, thresholds = rng.normal(size=(2 ** depth - 1, p)), np.zeros(2 ** depth - 1)
    node = np.ones(n, dtype=np.int64)
    for _ in range(depth):
        for t in np.unique(node):
            at = node == t
            thresholds[t - 1] = np.median(xs[at] @ weights[t - 1])
        node = 2 * node + (np.einsum("ij,ij->i", xs, weights[node - 1]) > thresholds[node - 1])
    leaves = np.arange(2 ** depth, 2 ** (depth + 1))
    values = np.array([ys[node == t].mean() if np.any(node == t) else 0.5 for t in leaves])
    tree = ObliqueTree(weights=weights, thresholds=thresholds, leaf_intercepts=values,
                       leaf_coefs=np.zeros((len(leaves), p)), n_samples=np.zeros(2 * len(leaves) - 1),
                       node_values=np.zeros(2 * len(leaves) - 1), x_min=x_min, x_scale=x_scale,
                       y_min=float(y.min()), y_scale=float(np.ptp(y)))
    return tree, X


def every_leaf(tree: ObliqueTree, x: np.ndarray, goal, max_changes: int | None) -> float:
    """The baseline: the same exact program in every leaf that meets the goal, the nearest answer kept."""
    space = cf._space(tree, x, None, set(), {}, 1.0 / tree.x_scale, "l1", max_changes)
    wanted = cf._goal(tree, goal, None)
    best = np.inf
    for i in np.flatnonzero(wanted.meets):
        leaf = tree.n_leaves + int(i)
        path = tuple((node // 2, node % 2 == 1) for node in reversed(_ancestors(leaf)))
        found = programs.solve_leaf(space, path, leaf, wanted)
        if found is not None:
            best = min(best, found[1])
    return best


def _ancestors(leaf: int) -> list[int]:
    """The nodes from ``leaf`` up to the root's child (each paired with its parent in the path)."""
    nodes = []
    while leaf > 1:
        nodes.append(leaf)
        leaf //= 2
    return nodes


def cell(depth: int, p: int, cap: int | None, queries: int, baseline: bool, seed: int = 0) -> dict:
    tree, X = routed_tree(depth, p, seed)
    predictions = tree.predict(X)
    goal = (float(np.quantile(predictions, 0.9)), None)
    rows = X[predictions < goal[0]][:queries]
    seconds, programs, base_seconds, changed = [], [], [], []
    for x in rows:
        start = time.perf_counter()
        result = cf.counterfactual(tree, x, goal, max_changes=cap, resolution=0)  # exact, as the baseline
        seconds.append(time.perf_counter() - start)
        programs.append(result.programs)
        changed.append(len(result.changes))
        if not tree.predict(result.x[None])[0] >= goal[0]:
            raise SystemExit(f"an answer missed the goal (depth {depth}, {p} features): a bug")
        if baseline:
            start = time.perf_counter()
            nearest = every_leaf(tree, x, goal, cap)
            base_seconds.append(time.perf_counter() - start)
            if result.distance > nearest * (1 + 1e-6) + 1e-9:
                raise SystemExit(f"the search missed the nearest answer (depth {depth}, {p} features): a bug")
    return {"depth": depth, "p": p, "cap": cap, "median": statistics.median(seconds), "max": max(seconds),
            "programs": statistics.median(programs), "changes": statistics.median(changed),
            "baseline": statistics.median(base_seconds) if base_seconds else None, "queries": len(rows)}


#: Issue 36's targets: (depth, features, cap) -> seconds per counterfactual, on the project's machine.
TARGETS = {(8, 50, None): 0.5, (12, None, None): 5.0}


def targets(cells: list[dict]) -> list[str]:
    """A line per target of the cells measured: the slowest matching cell's median against the target."""
    lines = []
    for (depth, p, cap), limit in TARGETS.items():
        mine = [c for c in cells if c["depth"] == depth and (p is None or c["p"] == p) and c["cap"] == cap]
        if mine:
            worst = max(mine, key=lambda c: c["median"])
            lines.append(f"- depth {depth}{f', {p} features' if p else ''}, uncapped: under {limit:g} s per "
                         f"counterfactual: {'met' if worst['median'] < limit else 'NOT met'} (slowest median "
                         f"{worst['median']:.3f} s, {worst['p']} features; slowest single query {worst['max']:.3f} s)")
    return lines


def table(cells: list[dict], queries: int, cap: int, note: str = "") -> str:
    lines = [f"Trees as the module docstring says; {queries} rows per cell, goal: the upper tenth of the tree's "
             f"predictions; capped: at most {cap} changed features (a mixed-integer program per leaf). "
             f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             f"scipy {scipy.__version__} (HiGHS). {note}".rstrip(), "",
             "| depth | features | cap | median s | max s | programs solved (median) | features changed "
             "(median) | every leaf, no pruning: median s | ratio |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        base = "" if c["baseline"] is None else f"{c['baseline']:.3f}"
        ratio = "" if c["baseline"] is None else f"{c['baseline'] / c['median']:.1f}x"
        lines.append(f"| {c['depth']} | {c['p']} | {'none' if c['cap'] is None else c['cap']} | {c['median']:.3f} | "
                     f"{c['max']:.3f} | {c['programs']:g} | {c['changes']:g} | {base} | {ratio} |")
    return "\n".join([*lines, "", *targets(cells)])


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.counterfactual")
    parser.add_argument("--depths", type=int_in(1, 12), nargs="+", default=[4, 8, 12])
    parser.add_argument("--features", type=int_in(1), nargs="+", default=[10, 50, 100])
    parser.add_argument("--queries", type=int_in(1), default=5, help="rows per cell (default 5)")
    parser.add_argument("--cap", type=int_in(1), default=3, help="max_changes of the capped cells (default 3)")
    parser.add_argument("--baseline-depth", type=int_in(0, 12), default=8,
                        help="time the every-leaf baseline up to this depth (default 8; 0: never)")
    parser.add_argument("--note", default="", help="a sentence about the machine's load, printed with the table")
    parser.add_argument("--doc", action="store_true", help="write the table into docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    cells = []
    for depth in args.depths:
        for p in args.features:
            for cap in (None, args.cap):
                cells.append(cell(depth, p, cap, args.queries, depth <= args.baseline_depth))
                c = cells[-1]
                print(f"depth {depth:2d}, {p:3d} features, cap {cap}: median {c['median']:.3f} s, max "
                      f"{c['max']:.3f} s, {c['programs']:g} programs", flush=True)
    markdown = table(cells, args.queries, args.cap, args.note)
    print(markdown)
    if args.doc:
        write_section(DEFAULT_DOC, SECTION, markdown, TITLE)


if __name__ == "__main__":
    main()
