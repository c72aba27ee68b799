"""The linear leaves' per-leaf sums (``engine.leaves._leaf_sums``) two ways on the same rows: blocks of one row
(each row's outer product scattered to its leaf, the way before blocks) and blocks of up to ``_BLOCK_ROWS`` rows
of one leaf summed by one batched matmul (the engine's). CPU seconds of one thread, median of ``--repeats``,
alternated so that both see the same load; the ratio is scatter / blocks.

Usage: nice python -m bench.studies.leaf_sums --features 5 12 21 40 --repeats 5
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from bench.common import command_parser
from get_core.engine import leaves


def timed(features: int, rows: int, depth: int, models: int, scatter: bool) -> float:
    """CPU seconds of one ``_leaf_sums`` call on random rows and routings (the same for both ways)."""
    gen = torch.Generator().manual_seed(features)
    Xa = torch.cat([torch.rand(1, rows, features, generator=gen, dtype=torch.float64),
                    torch.ones(1, rows, 1, dtype=torch.float64)], dim=2)
    y, w = torch.rand(1, rows, generator=gen, dtype=torch.float64), torch.full((1, rows), 1.0 / rows)
    leaf = torch.randint(0, 2 ** depth, (models, rows), generator=gen)
    block = leaves._BLOCK_ROWS
    leaves._BLOCK_ROWS = 1 if scatter else block
    try:
        clock = time.process_time()
        leaves._leaf_sums(leaf, Xa, w, y, 2 ** depth, models)
        return time.process_time() - clock
    finally:
        leaves._BLOCK_ROWS = block


def main(argv: Sequence[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.leaf_sums")
    parser.add_argument("--features", type=int, nargs="+", default=[5, 12, 21, 40])
    parser.add_argument("--rows", type=int, default=10_312)  # ailerons' training rows
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print("| features | scatter ms | blocks ms | scatter / blocks |\n|---|---|---|---|")
    for p in args.features:
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for scatter in (True, False):
                times[scatter].append(timed(p, args.rows, args.depth, args.models, scatter))
        a, b = (1000 * float(np.median(times[s])) for s in (True, False))
        print(f"| {p} | {a:.1f} | {b:.1f} | {a / b:.2f} |", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)  # one thread: CPU seconds that compare on a shared machine
    main()
