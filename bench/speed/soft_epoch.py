"""Where a sampled soft epoch's time goes (issue 37): the million-row paper-budget fit spends almost all of its time
in soft epochs of 10 starts x 8,192 sampled rows, so this splits one epoch into its parts.

A real fit (``train``) of ``bench.studies.large_data``'s planted problem at depth 6 on ``--rows`` rows, ``--starts``
starts x ``--epochs`` epochs per stage, 8,192 rows per soft epoch, one torch thread, with CPU-time counters
(``time.process_time``) wrapped around the engine's parts: the row sample (``Problems.sample``), the soft pass
(``optimize._soft_pass``) and inside it the compiled kernel's call itself, the Adam step and the hard-loss
checkpoints. What is left of the fit is the starts, the leaves and the epoch loop's own Python. The figures are
per soft epoch (ms of CPU); the fitted tree's digest shows whether a change kept the fit bit for bit.

Usage: python -m bench.speed.soft_epoch [--rows 200000] [--epochs 300] [--starts 10] [--repeats 3] [--label after]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from contextlib import contextmanager

import torch

from bench.speed.hard_evaluations import digest
from bench.studies.large_data import FIT_DEPTH, planted
from get_core.config import GETConfig
from get_core.engine import native, optimize
from get_core.engine.train import train

SAMPLE_ROWS = 8192


class Counters:
    """CPU seconds and calls per named part; parts nest (the kernel's call is inside the soft pass)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def part(self, name: str):
        clock = time.process_time()
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - clock
            self.calls[name] += 1

    def timed(self, name: str, function):
        def wrapper(*args, **kwargs):
            with self.part(name):
                return function(*args, **kwargs)
        return wrapper


class _TimedKernel:
    """The compiled library with its entry point timed (``native.load()``'s result, wrapped)."""

    def __init__(self, lib, counters: Counters) -> None:
        self.get_soft_pass = counters.timed("kernel call", lib.get_soft_pass)


@contextmanager
def instrumented(counters: Counters):
    """The engine's parts wrapped with counters for the duration (restored after)."""
    patches = [(optimize.Problems, "sample", counters.timed("row sample", optimize.Problems.sample)),
               (optimize, "_soft_pass", counters.timed("soft pass", optimize._soft_pass)),
               (optimize._Adam, "step", counters.timed("adam step", optimize._Adam.step)),
               (optimize._Stages, "_checkpoint", counters.timed("checkpoints", optimize._Stages._checkpoint))]
    lib = native.load()
    if lib is not None:
        patches.append((native, "load", lambda kernel=_TimedKernel(lib, counters): kernel))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def one_fit(rows: int, starts: int, epochs: int) -> tuple[float, Counters, str, float]:
    """(the fit's CPU seconds, its counters, the tree's digest, its training R2)."""
    X, y = planted(rows, 0)
    config = GETConfig(depth=FIT_DEPTH, n_starts=starts, n_epochs=epochs, random_state=0, batch_rows=SAMPLE_ROWS,
                       device="cpu")  # the CPU kernel's parts: on a CUDA machine "auto" would time torch on the GPU
    counters = Counters()
    with instrumented(counters):
        cpu0 = time.process_time()
        tree = train(X, y, config)
        total = time.process_time() - cpu0
    return total, counters, digest(tree), 100 * tree.meta["train_r2"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=300, help="epochs per stage (2 stages)")
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    runs = [one_fit(args.rows, args.starts, args.epochs) for _ in range(args.repeats)]
    epochs = runs[0][1].calls["soft pass"]

    def per_epoch(name: str) -> float:
        return statistics.median(c.seconds[name] for _, c, _, _ in runs) / epochs * 1e3

    soft, kernel = per_epoch("soft pass"), per_epoch("kernel call")
    parts = {"row sample": per_epoch("row sample"), "kernel call": kernel, "soft pass around the kernel": soft - kernel,
             "adam step": per_epoch("adam step"), "checkpoints (per epoch)": per_epoch("checkpoints")}
    total = statistics.median(t for t, _, _, _ in runs)
    parts["rest of the fit (per epoch)"] = total / epochs * 1e3 - sum(parts.values())
    print(f"{args.label}: {args.rows} rows, {args.starts} starts x {args.epochs} epochs x 2 stages ({epochs} soft "
          f"epochs), median of {args.repeats} fits: {total:.2f} CPU s, digest {runs[0][2]}, training R2 "
          f"{runs[0][3]:.6f}, digests {'equal' if len({r[2] for r in runs}) == 1 else 'DIFFER'}")
    for name, ms in parts.items():
        print(f"  {name:32s} {ms:8.3f} CPU ms per epoch")


if __name__ == "__main__":
    main()
