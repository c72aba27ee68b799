"""The trainer's hard evaluations on many rows (issue 37): CPU seconds of a node refit and a polish, the steps whose
every routing used to go through the model's public methods on the original X (rechecked, rescaled and routed
again on each call, several times per node level) and now route the rows the trainer scaled once.

The tree: a depth-``--depth`` GET fit (1 start x 20 epochs on 8,192-row samples, seed 0) on ``--rows`` rows of
``bench.studies.large_data``'s planted problem (10 features). Then, each ``--repeats`` times on a fresh copy of it:
``refit_nodes`` with k=2 (a sparse tree's refit, 2 passes) and with k=10 (the dense refit a budgeted fit runs,
2 passes), and a ``polish`` (1 start x 5 epochs per level, so its soft epochs do not hide the hard evaluations).
Figures are medians of CPU seconds (``time.process_time``, one torch thread), steadier than wall seconds on a
shared machine. The same script runs against an older checkout (``PYTHONPATH`` and ``--label``) for a before/after
pair in one session; the fitted arrays' digests show whether both wrote the same trees.

Usage: python -m bench.speed.hard_evaluations [--rows 200000] [--depth 6] [--repeats 3] [--label after]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import statistics
import time

import numpy as np
import torch

from bench.studies.large_data import planted
from get_core.config import GETConfig
from get_core.engine.node_refit import refit_nodes
from get_core.engine.polish import polish
from get_core.engine.progress import Reporter
from get_core.engine.train import make_generator, train


def digest(tree) -> str:
    """A short hash of the fitted arrays: equal digests, the same tree bit for bit."""
    h = hashlib.sha256()
    for name in ("weights", "thresholds", "leaf_intercepts", "leaf_coefs", "n_samples", "node_values"):
        h.update(np.ascontiguousarray(getattr(tree, name)).tobytes())
    return h.hexdigest()[:12]


def timed(step, repeats: int) -> tuple[float, str]:
    """(median CPU seconds over ``repeats`` runs of ``step()``, the digest of its last tree)."""
    seconds = []
    for _ in range(repeats):
        cpu0 = time.process_time()
        tree = step()
        seconds.append(time.process_time() - cpu0)
    return statistics.median(seconds), digest(tree)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    X, y = planted(args.rows, 0)
    config = GETConfig(depth=args.depth, n_starts=1, n_epochs=20, random_state=0, batch_rows=8192, device="cpu")
    tree = train(X, y, config)
    ys = (y - tree.y_min) / tree.y_scale
    polish_config = GETConfig(depth=args.depth, n_starts=1, n_epochs=5, random_state=0, polish=True, device="cpu")
    steps = {
        "refit_nodes k=2": lambda: refit_nodes(copy.deepcopy(tree), X, ys, 2),
        "refit_nodes k=10 (dense)": lambda: refit_nodes(copy.deepcopy(tree), X, ys, X.shape[1]),
        "polish": lambda: polish(tree, X, y, polish_config, make_generator(0), Reporter(None, 1.0, "polish",
                                                                                         (0.0, 1.0))),
    }
    for name, step in steps.items():
        seconds, tree_digest = timed(step, args.repeats)
        print(f"{args.label}\t{args.rows}\t{name}\t{seconds:.2f} CPU s\t{tree_digest}", flush=True)


if __name__ == "__main__":
    main()
