"""Two versions of the compiled router side by side (issue 37): the routing call alone on 50,000 x 200 rows, each
source compiled with the router's own flags and loaded in one process, calls interleaved so that both see the same
load; also checks that both route and predict every row alike. ``--models``: the trainer's checkpoint routing
instead (``get_route_models``, float32, every start's tree on every row), by default at the million-row fit's shape
(1,000,000 x 10, 10 starts, depth 6).

Usage: python -m bench.speed.route_kernels OLD.cpp NEW.cpp [--rows 50000] [--features 200] [--repeats 25]
       python -m bench.speed.route_kernels OLD.cpp NEW.cpp --models [--rows 1000000] [--features 10] [--repeats 9]
       (an older route.cpp: ``git show COMMIT:get_core/model/native_route/route.cpp > /tmp/old.cpp``)
Prints one line per (depth, leaf type), or per depth with ``--models``: the median and fastest CPU ms of each source.
"""

from __future__ import annotations

import ctypes
import dataclasses
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import command_parser, int_in
from bench.speed.predict import random_tree
from get_core.model import routing


def load(source: Path, out_dir: Path) -> ctypes.CDLL:
    """``source`` compiled as the router is (same flags), with the installed router's signature."""
    built = out_dir / f"{source.stem}-{len(list(out_dir.iterdir()))}.so"
    subprocess.run(["g++", *routing.FLAGS, "-shared", "-o", str(built), str(source)], check=True)
    lib = ctypes.CDLL(str(built))
    for entry in ("get_route_tree", "get_route_models"):
        getattr(lib, entry).restype = ctypes.c_int
        getattr(lib, entry).argtypes = getattr(routing.library(), entry).argtypes
    return lib


def compare(libs: dict[str, ctypes.CDLL], X: np.ndarray, depth: int, leaf: str, repeats: int) -> str:
    """One line: each library's median and fastest CPU ms of ``predict_scaled`` on a random tree, and whether all
    gave the same leaves and predictions."""
    tree = random_tree(X, depth, seed=depth)
    if leaf == "linear":
        coefs = np.random.default_rng(depth).normal(size=tree.leaf_coefs.shape)
        tree = dataclasses.replace(tree, leaf_type="linear", leaf_coefs=coefs)
    times: dict[str, list[float]] = {name: [] for name in libs}
    outputs = {}
    built = routing.library
    try:
        for _ in range(repeats + 1):  # the first round warms up
            for name, lib in libs.items():
                routing.library = lambda lib=lib: lib
                start = time.process_time()
                outputs[name] = routing.predict_scaled(tree, X)
                times[name].append(time.process_time() - start)
    finally:
        routing.library = built
    first = next(iter(outputs.values()))
    alike = all(np.array_equal(a, b) for out in outputs.values() for a, b in zip(out, first))
    return f"depth {depth}, {leaf} leaves: {_figures(times)}; identical: {alike}"


def compare_models(libs: dict[str, ctypes.CDLL], X: np.ndarray, depth: int, starts: int, repeats: int) -> str:
    """One line: each library's median and fastest CPU ms of ``get_route_models`` on ``starts`` random float32
    trees (each split through the rows' centre), and whether all gave the same leaves."""
    rng = np.random.default_rng(depth)
    n, p = X.shape
    Xa = np.concatenate([X, np.ones((n, 1))], axis=1).astype(np.float32)[None]
    split = rng.normal(size=(starts, 2 ** depth - 1, p + 1)).astype(np.float32)
    split[:, :, p] = -(split[:, :, :p] * X.mean(axis=0)).sum(axis=2)
    times: dict[str, list[float]] = {name: [] for name in libs}
    outputs = {}
    for _ in range(repeats + 1):  # the first round warms up
        for name, lib in libs.items():
            leaf = np.empty((starts, n), dtype=np.int64)
            start = time.process_time()
            lib.get_route_models(1, starts, n, p + 1, depth, split.ctypes.data, Xa.ctypes.data, leaf.ctypes.data, 1)
            times[name].append(time.process_time() - start)
            outputs[name] = leaf
    first = next(iter(outputs.values()))
    alike = all(np.array_equal(out, first) for out in outputs.values())
    return f"depth {depth}, {starts} starts, checkpoint routing: {_figures(times)}; identical: {alike}"


def _figures(times: dict[str, list[float]]) -> str:
    return ", ".join(f"{name} {1000 * statistics.median(t[1:]):.2f} ms (fastest {1000 * min(t[1:]):.2f})"
                     for name, t in times.items())


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.speed.route_kernels")
    parser.add_argument("sources", type=Path, nargs=2, help="the two route.cpp versions")
    parser.add_argument("--models", action="store_true", help="time the checkpoints' routing (get_route_models)")
    parser.add_argument("--rows", type=int_in(100), default=None, help="default 50,000; 1,000,000 with --models")
    parser.add_argument("--features", type=int_in(1), default=None, help="default 200; 10 with --models")
    parser.add_argument("--starts", type=int_in(1), default=10, help="with --models: trees routed per call")
    parser.add_argument("--repeats", type=int_in(1), default=None, help="default 25; 9 with --models")
    args = parser.parse_args(argv)
    rows, features, repeats = ((args.rows or 1_000_000, args.features or 10, args.repeats or 9) if args.models
                               else (args.rows or 50_000, args.features or 200, args.repeats or 25))
    X = np.random.default_rng(0).normal(size=(rows, features))
    with tempfile.TemporaryDirectory() as tmp:
        libs = {f"{i}:{src.name}": load(src, Path(tmp)) for i, src in enumerate(args.sources)}
        if args.models:
            for depth in (4, 6, 8):
                print(compare_models(libs, X, depth, args.starts, repeats), flush=True)
            return
        for depth in (1, 8):
            for leaf in ("constant", "linear"):
                print(compare(libs, X, depth, leaf, repeats), flush=True)


if __name__ == "__main__":
    main()
