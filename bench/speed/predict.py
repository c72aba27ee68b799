"""Prediction speed (issue 37): rows per second of ``predict`` on one thread, GET beside CART, random forests,
HistGradientBoosting and GET's ONNX graph in onnxruntime, measured in the same run on the same rows.

Rows: ``--rows`` (default 50,000) standard normal rows of 10 and 200 features. GET: a random dense oblique tree of
each depth (4, 8, 12; weights N(0, 1), each threshold the median projection of the rows reaching its node, so rows
spread over the leaves as a fitted tree's do): routing cost does not depend on how the tree was trained. The others
are fitted on ``--fit-rows`` (default 5,000) of the rows against a smooth target: CART at the GET tree's depth,
forests of 100 and 500 trees of depth 12, HistGradientBoosting with its defaults (100 iterations); their prediction
cost depends on their size, not on the rows they saw. "GET, numpy routing" is the routing ``predict`` used before
(``routing`` with ``backend="numpy"``, still the fallback without a compiler), timed at depths 4 and 8 only.

One thread everywhere: threadpoolctl limits the BLAS and OpenMP pools, scikit-learn runs with ``n_jobs=1``, and
onnxruntime with one intra- and one inter-op thread. Each figure is the median of ``--repeats`` timed calls after a
warm-up call; wall and CPU (``time.process_time``) seconds are both kept: on a shared machine the CPU seconds are the
steadier figure. ``--accuracy`` instead fits small GET-Linear trees on the 12 shared datasets and reports ONNX
(float64 and float32) against ``predict``.

Usage: python -m bench.speed.predict [--rows 50000] [--repeats 5] [--features 10 200] [--depths 4 8 12]
       python -m bench.speed.predict --accuracy [--data-dir ../shared/datasets]
Writes ``bench/results/predict-speed.json`` (or ``predict-accuracy.json``; ``--out`` elsewhere) and prints a Markdown
table.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from bench.common import DEFAULT_DATA_DIR, RESULTS_DIR, command_parser, int_in
from get_core.model import routing
from get_core.model.onnx_graph import to_onnx
from get_core.model.tree import ObliqueTree

FOREST_DEPTH = 12
NUMPY_DEPTHS = (4, 8)  # the old routing is slow: timed where it finishes in seconds
READ_FLOOR = "one read of the rows (X.sum(): no model can score them faster)"  # the memory floor, timed beside them

def random_tree(X: np.ndarray, depth: int, seed: int) -> ObliqueTree:
    """A dense oblique tree whose every split cuts the rows reaching it at their median projection."""
    rng = np.random.default_rng(seed)
    n_branch, p = 2 ** depth - 1, X.shape[1]
    x_min, x_scale = X.min(axis=0), np.ptp(X, axis=0)
    xs = (X - x_min) / x_scale
    weights, thresholds = rng.normal(size=(n_branch, p)), np.zeros(n_branch)
    node = np.ones(len(X), dtype=np.int64)
    for level in range(depth):
        margin = np.einsum("ij,ij->i", xs, weights[node - 1])
        for t in range(2 ** level, 2 ** (level + 1)):
            at = node == t
            thresholds[t - 1] = np.median(margin[at]) if at.any() else 0.0
        node = 2 * node + (margin > thresholds[node - 1])
    leaves = 2 ** depth
    return ObliqueTree(weights, thresholds, rng.normal(size=leaves), np.zeros((leaves, p)),
                       np.zeros(2 * leaves - 1, dtype=np.int64), np.zeros(2 * leaves - 1), x_min, x_scale)


def timed(call: Callable[[], object], repeats: int) -> dict:
    call()  # warm-up: builds or loads the native router, touches the memory
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}


def models(X: np.ndarray, p: int, depth: int, fit_rows: int) -> dict[str, Callable[[np.ndarray], object]]:
    """name -> predict function, fitted for this (p, depth)."""
    import onnxruntime as ort
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    tree = random_tree(X, depth, seed=depth)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(to_onnx(tree), options, providers=["CPUExecutionProvider"])
    Xf, yf = X[:fit_rows], np.sin(X[:fit_rows, 0]) + X[:fit_rows, 1 % p] ** 2
    out = {"GET (compiled routing)": tree.predict,
           "GET, ONNX in onnxruntime": lambda Z: session.run(None, {"X": Z})}
    if depth in NUMPY_DEPTHS:
        out["GET, numpy routing (before)"] = lambda Z: routing.predict_scaled(tree, Z, backend="numpy")
    out[f"CART, depth {depth}"] = DecisionTreeRegressor(max_depth=depth, random_state=0).fit(Xf, yf).predict
    if depth == 8:  # the ensembles do not depend on the GET depth: timed once per feature count
        out[READ_FLOOR] = np.sum
        for trees in (100, 500):
            forest = RandomForestRegressor(trees, max_depth=FOREST_DEPTH, max_features=0.3, n_jobs=1,
                                           random_state=0).fit(Xf, yf)
            out[f"random forest, {trees} trees of depth {FOREST_DEPTH}"] = forest.predict
        out["HistGradientBoosting (100 iterations)"] = HistGradientBoostingRegressor(random_state=0).fit(Xf, yf).predict
    return out


def speed(args) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for p in args.features:
        X = rng.normal(size=(args.rows, p))
        for depth in args.depths:
            for name, predict in models(X, p, depth, args.fit_rows).items():
                figures = timed(lambda: predict(X), args.repeats if "numpy" not in name else 1)
                records.append({"model": name, "features": p, "depth": depth, "rows": args.rows, **figures,
                                "rows_per_s_cpu": args.rows / figures["cpu_s"]})
                print(json.dumps(records[-1]), flush=True)
    return records


def accuracy(args) -> list[dict]:
    """Small GET-Linear fits (depth 5, 2,000 rows, 1 start x 20 epochs) of each shared dataset; ONNX on every row."""
    import onnxruntime as ort
    import pandas as pd

    from get_core import GETRegressor

    records = []
    for path in sorted(args.data_dir.glob("*.csv")):
        frame = pd.read_csv(path)
        X = frame.drop(columns="target").select_dtypes("number").to_numpy(dtype=float)
        y = frame["target"].to_numpy(dtype=float)
        rows = np.random.default_rng(0).permutation(len(y))[:2000]
        tree = GETRegressor(depth=5, leaf="linear", n_starts=1, n_epochs=20, random_state=0).fit(X[rows], y[rows]).tree_
        expected, leaf = tree.predict(X), tree.apply(X)
        record = {"dataset": path.stem, "rows": len(y)}
        for dtype in ("float64", "float32"):
            session = ort.InferenceSession(to_onnx(tree, dtype), providers=["CPUExecutionProvider"])
            got, got_leaf = session.run(None, {"X": X.astype(dtype)})
            error = np.abs(got.astype(float) - expected)
            record[dtype] = {"max_rel": float(np.max(error / np.maximum(np.abs(expected), 1e-300))),
                             "max_abs_over_range": float(np.max(error) / np.ptp(y)),
                             "median_abs_over_range": float(np.median(error) / np.ptp(y)),
                             "rows_other_leaf": int(np.sum(got_leaf != leaf))}
        records.append(record)
        print(json.dumps(record), flush=True)
    return records


def markdown(records: list[dict]) -> str:
    lines = ["| features | depth | model | ms per call (CPU) | ms (wall) | rows/s (CPU) | x GET |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for p in sorted({r["features"] for r in records}):
        for depth in sorted({r["depth"] for r in records}):
            group = [r for r in records if r["features"] == p and r["depth"] == depth]
            get = next((r for r in group if r["model"].startswith("GET (")), None)
            for r in group:
                ratio = f"{r['cpu_s'] / get['cpu_s']:.1f}" if get else ""
                lines.append(f"| {p} | {depth} | {r['model']} | {1000 * r['cpu_s']:.1f} | {1000 * r['wall_s']:.1f} | "
                             f"{r['rows_per_s_cpu']:,.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.speed.predict")
    parser.add_argument("--rows", type=int_in(100), default=50_000, help="rows per predict call (default 50000)")
    parser.add_argument("--fit-rows", type=int_in(100), default=5_000, help="rows the baselines fit (default 5000)")
    parser.add_argument("--repeats", type=int_in(1), default=5, help="timed calls per figure (default 5)")
    parser.add_argument("--features", type=int_in(1), nargs="+", default=[10, 200])
    parser.add_argument("--depths", type=int_in(1, 12), nargs="+", default=[4, 8, 12])
    parser.add_argument("--accuracy", action="store_true", help="ONNX against predict on the shared datasets")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, help="JSON file (default bench/results/predict-speed.json, or "
                        "predict-accuracy.json with --accuracy)")
    args = parser.parse_args(argv)
    machine = {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(),
               "load_before": os.getloadavg()}
    with threadpool_limits(1):
        records = accuracy(args) if args.accuracy else speed(args)
    machine["load_after"] = os.getloadavg()
    out = args.out or RESULTS_DIR / ("predict-accuracy.json" if args.accuracy else "predict-speed.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "records": records}, indent=1) + "\n")
    print(machine)
    if not args.accuracy:
        print(markdown(records))


if __name__ == "__main__":
    main()
