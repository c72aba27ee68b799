"""CPU time per start-epoch of the classification engine (10 classes) beside the regression engine, same run.

bench.studies.throughput_pair's setting: make_friedman1 (n=6144, p=8, min-max scaled), 10 starts, 2 stages, one
thread; the classification target is the regression target cut at its deciles (10 classes, same X). Per start-epoch
= (CPU(E2) - CPU(E1)) / (10 x 2 x (E2 - E1)) after one warm-up fit, so the starts, CART and leaves cancel out; fits
of the two tasks alternate, ``--pairs`` times, and the median is reported. CPU time, not wall time (other jobs on a
shared machine inflate wall time, not this process's CPU time). ``--device cuda`` times wall seconds instead, the
GPU synchronized before each reading (the work is on the GPU, which a CPU clock does not see).

Usage: nice python -m bench.studies.class_throughput --pairs 3
       python -m bench.studies.class_throughput --device cuda
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.datasets import make_friedman1

from get_core.config import GETConfig
from get_core.engine.train import train

EPOCHS = {4: (50, 150), 8: (10, 30)}


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_friedman1(n_samples=6144, n_features=8, random_state=0)
    X, y = (X - X.min(0)) / np.ptp(X, 0), (y - y.min()) / np.ptp(y)
    return X, y, np.searchsorted(np.quantile(y, np.linspace(0.1, 0.9, 9)), y)


def fit_ms(task: str, depth: int, epochs: int, device: str = "cpu") -> float:
    """Milliseconds of one fit: CPU time on the CPU, wall time (GPU synchronized) on CUDA."""
    X, y, codes = data()
    config = GETConfig(depth=depth, n_starts=10, n_epochs=epochs, random_state=0, device=device)
    clock = _clock(device)
    start = clock()
    if task == "classes":
        train(X, codes, config, classes=list(range(10)))
    else:
        train(X, y, config)
    return 1000 * (clock() - start)


def _clock(device: str):
    if device == "cpu":
        return time.process_time

    def synchronized() -> float:
        torch.cuda.synchronize()
        return time.perf_counter()
    return synchronized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    unit = "CPU ms" if args.device == "cpu" else "wall ms"
    print(f"| depth | regression {unit} / start-epoch | 10 classes {unit} / start-epoch | ratio |")
    print("|---:|---:|---:|---:|")
    for depth in args.depths:
        e1, e2 = EPOCHS[depth]
        per = {"regression": [], "classes": []}
        for task in per:
            fit_ms(task, depth, e1, args.device)  # warm-up: the kernel's build, torch's first calls
        for _ in range(args.pairs):
            for task in per:
                per[task].append((fit_ms(task, depth, e2, args.device) - fit_ms(task, depth, e1, args.device))
                                 / (10 * 2 * (e2 - e1)))
        r, c = np.median(per["regression"]), np.median(per["classes"])
        print(f"| {depth} | {r:.3f} | {c:.3f} | {c / r:.2f} |", flush=True)


if __name__ == "__main__":
    main()
