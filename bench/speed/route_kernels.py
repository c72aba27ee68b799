"""Two versions of the compiled router side by side (issue 37): the routing call alone on 50,000 x 200 rows, each
source compiled with the router's own flags and loaded in one process, calls interleaved so that both see the same
load; also checks that both route and predict every row alike.

Usage: python -m bench.speed.route_kernels OLD.cpp NEW.cpp [--rows 50000] [--features 200] [--repeats 25]
       (an older route.cpp: ``git show COMMIT:get_core/model/native_route/route.cpp > /tmp/old.cpp``)
Prints one line per (depth, leaf type): the median and fastest CPU ms of each source.
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
    lib.get_route_tree.restype = ctypes.c_int
    lib.get_route_tree.argtypes = routing.library().get_route_tree.argtypes
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
    figures = ", ".join(f"{name} {1000 * statistics.median(t[1:]):.2f} ms (fastest {1000 * min(t[1:]):.2f})"
                        for name, t in times.items())
    return f"depth {depth}, {leaf} leaves: {figures}; identical: {alike}"


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.speed.route_kernels")
    parser.add_argument("sources", type=Path, nargs=2, help="the two route.cpp versions")
    parser.add_argument("--rows", type=int_in(100), default=50_000)
    parser.add_argument("--features", type=int_in(1), default=200)
    parser.add_argument("--repeats", type=int_in(1), default=25)
    args = parser.parse_args(argv)
    X = np.random.default_rng(0).normal(size=(args.rows, args.features))
    with tempfile.TemporaryDirectory() as tmp:
        libs = {f"{i}:{src.name}": load(src, Path(tmp)) for i, src in enumerate(args.sources)}
        for depth in (1, 8):
            for leaf in ("constant", "linear"):
                print(compare(libs, X, depth, leaf, args.repeats), flush=True)


if __name__ == "__main__":
    main()
