"""CPU time per start-epoch of two engines timed alternately (a fair throughput check on a busy machine).

Each fit runs in its own process with the engine at ``ROOT`` first on the path (e.g. ``git archive`` of an older
commit unpacked in /tmp/old), on bench.speed's setting (make_friedman1, n=6144, p=8, min-max scaled, 10 starts,
2 stages, one thread); per start-epoch = (CPU(E2) - CPU(E1)) / (10 x 2 x (E2 - E1)) after one warm-up fit. CPU time,
not wall time: other jobs inflate wall time far more than the CPU time of the process itself.

Usage: nice python -m bench.studies.throughput_pair /tmp/old . --pairs 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

EPOCHS = {2: (100, 300), 4: (100, 300), 8: (20, 60)}
CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, torch
torch.set_num_threads(1)
from sklearn.datasets import make_friedman1
from get_core.config import GETConfig
from get_core.engine.train import train
X, y = make_friedman1(n_samples=6144, n_features=8, random_state=0)
X, y = (X - X.min(0)) / np.ptp(X, 0), (y - y.min()) / np.ptp(y)
depth, e1, e2 = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def cpu(epochs):
    clock = time.process_time()
    train(X, y, GETConfig(depth=depth, n_starts=10, n_epochs=epochs, random_state=0, device="cpu"))  # CPU work
    return time.process_time() - clock
cpu(e1)
print(1000 * (cpu(e2) - cpu(e1)) / (10 * 2 * (e2 - e1)))
"""


def per_start_epoch_ms(root: Path, depth: int) -> float:
    e1, e2 = EPOCHS[depth]
    out = subprocess.run([sys.executable, "-c", CHILD, str(root.resolve()), str(depth), str(e1), str(e2)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.throughput_pair", description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="root of the engine to compare against")
    parser.add_argument("new", type=Path, help="root of this engine")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--depths", type=int, nargs="+", default=sorted(EPOCHS), choices=sorted(EPOCHS))
    args = parser.parse_args()
    for depth in args.depths:
        for pair in range(args.pairs):
            old, new = per_start_epoch_ms(args.old, depth), per_start_epoch_ms(args.new, depth)
            print(f"depth {depth} pair {pair + 1}: old {old:.3f} ms, new {new:.3f} ms per start-epoch (CPU)", flush=True)


if __name__ == "__main__":
    main()
