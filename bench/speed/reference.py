"""Time the authors' GET implementation (PyPI `get-oblique==0.1.1`) per start-epoch, for the speed benchmark.

What is timed: `GET.GETRegressor(treeDepth=depth, epochNum=E, startNum=1).fit(X, y)` on make_friedman1
(n_samples=n, n_features=p, noise=1.0, random_state=0), X and y min-max scaled to [0, 1], run in the authors'
virtualenv (``bench.reference_venv``) with torch limited to `threads` threads.

One start of the package runs one stage per alpha (2 stages: alpha ~ U(5, 25), then ~ U(80, 120)), each stage a
fresh AdamW + scheduler for E full-batch epochs; every epoch does forward, the per-epoch hard-tree evaluation
(leaf means + hard MSE), backward, step and scheduler step. A "start-epoch" is one such epoch of one stage: a fit
with startNum=1 costs `stages * E` start-epochs plus fixed costs (CART warm start, tensor conversion, set-up).

Headline `ms_per_start_epoch`: the package's scheduler steps exactly once per epoch, as the epoch's last call, so
a timestamp taken after each step gives the wall time of every epoch but a stage's first, fixed costs excluded.
Per repeat we take the median epoch of two fits (E1 and E2 epochs), then the median over repeats: a median of
hundreds of epochs resists the bursts of other users' load on a shared machine, which a total does not.
Under steady load (2 threads whose OpenMP regions wait for a descheduled thread) even the median inflates, so
`ms_per_start_epoch_p10` (median over repeats of each repeat's 10th-percentile epoch) estimates the idle machine.
Cross-check `ms_per_start_epoch_slope`: (t(E2) - t(E1)) / (stages * (E2 - E1)) from the fits' total wall times,
which also cancels fixed costs but is noisy under load. `stages` is counted at run time, not assumed; a warm-up
fit first pays for the TorchScript profiling runs; the 1-minute load average is recorded before and after.
E must be >= 21: the package's scheduler asserts warmup (10) < T_0 = E - 10.

Usage: python -m bench.speed.reference --depths 2 4 8 --repeats 3
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.common import command_parser
from bench.reference_venv import DEFAULT_VENV, MIN_EPOCHS, ensure_reference_venv, run_script

# Runs inside the reference venv. argv[1] is a JSON dict of parameters; prints one JSON dict on its last line.
_TIMING_SCRIPT = r'''
import json, os, sys, time
args = json.loads(sys.argv[1])
import numpy as np, torch
torch.set_num_threads(args["threads"])
from sklearn.datasets import make_friedman1
import importlib.metadata, GET, GET.GET_IterAlp as iteralp

stages = []  # per stage (one alpha of one start): perf_counter at the end of each epoch
_stage, _step = iteralp.treeOptbyGRADwithC, iteralp.ChainedScheduler.step
def _timed_stage(*a, **k):
    stages.append([])
    return _stage(*a, **k)
def _timed_step(self, *a, **k):  # the scheduler steps exactly once per epoch, last thing in the epoch
    out = _step(self, *a, **k)
    stages[-1].append(time.perf_counter())
    return out
iteralp.treeOptbyGRADwithC = _timed_stage  # looked up as a module global at call time
iteralp.ChainedScheduler.step = _timed_step

X, y = make_friedman1(n_samples=args["n"], n_features=args["p"], noise=1.0, random_state=0)
span = X.max(0) - X.min(0)
X = ((X - X.min(0)) / np.where(span > 0, span, 1.0)).astype(np.float32)
y = ((y - y.min()) / (y.max() - y.min())).astype(np.float32)

def fit(epochs):
    # -> (wall seconds, stages run, durations in ms of every epoch but each stage's first)
    torch.manual_seed(0)
    stages.clear()
    model = GET.GETRegressor(treeDepth=args["depth"], epochNum=epochs, startNum=1)
    t0 = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - t0
    assert all(len(s) == epochs for s in stages), [len(s) for s in stages]
    return seconds, len(stages), [1000.0 * d for s in stages for d in np.diff(s)]

e1, e2 = args["epochs"]
load_before = os.getloadavg()[0]
fit(e1)  # warm-up: TorchScript profiling runs, allocator, lazy imports
runs = []
for _ in range(args["repeats"]):
    (t1, n_stages, d1), (t2, _, d2) = fit(e1), fit(e2)
    epoch_ms = d1 + d2
    runs.append({"epochs": [e1, e2], "seconds": [t1, t2], "stages_per_start": n_stages,
                 "epoch_ms_median": float(np.median(epoch_ms)), "epoch_ms_p10": float(np.percentile(epoch_ms, 10)),
                 "epoch_ms_mean": float(np.mean(epoch_ms)),
                 "slope_ms": 1000.0 * (t2 - t1) / (n_stages * (e2 - e1))})
print(json.dumps({"runs": runs, "load_avg_1min": [load_before, os.getloadavg()[0]],
                  "get_oblique_version": importlib.metadata.version("get-oblique"),
                  "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
                  "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}))
'''


def default_epochs(depth: int) -> tuple[int, int]:
    """Epoch counts for the two fits: the minimum at depth >= 7 (~0.4 s per start-epoch at depth 8), more below."""
    if depth >= 7:
        return (MIN_EPOCHS, MIN_EPOCHS + 10)
    if depth >= 5:
        return (30, 90)
    return (50, 150)


def measure_reference(depth: int, n: int = 6144, p: int = 8, epochs: tuple[int, int] | None = None,
                      repeats: int = 3, threads: int = 2, venv_path: Path = DEFAULT_VENV,
                      timeout: float = 900.0) -> dict:
    """Median ms per start-epoch of get-oblique at `depth` (see the module docstring for what is timed)."""
    e1, e2 = epochs or default_epochs(depth)
    if not MIN_EPOCHS <= e1 < e2:
        raise ValueError(f"epochs must satisfy {MIN_EPOCHS} <= E1 < E2 (the package's scheduler), got {(e1, e2)}")
    params = {"depth": depth, "n": n, "p": p, "epochs": [e1, e2], "repeats": repeats, "threads": threads}
    raw = run_script(ensure_reference_venv(venv_path), _TIMING_SCRIPT, params, timeout, f"timing at depth {depth}")
    return _summarize(params, raw)


def _summarize(params: dict, raw: dict) -> dict:
    runs = raw.pop("runs")
    return {"depth": params["depth"], "n": params["n"], "p": params["p"], "threads": params["threads"],
            "epochs": params["epochs"],
            "stages_per_start": runs[0]["stages_per_start"],
            "ms_per_start_epoch": statistics.median(r["epoch_ms_median"] for r in runs),
            "ms_per_start_epoch_p10": statistics.median(r["epoch_ms_p10"] for r in runs),
            "ms_per_start_epoch_slope": statistics.median(r["slope_ms"] for r in runs),
            "measurements": runs, **raw}


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.speed.reference")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8], help="treeDepth (default: 2 4 8)")
    parser.add_argument("--repeats", type=int, default=3, help="timings per depth (default: 3)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.add_argument("--n", type=int, default=6144, help="rows of make_friedman1 (default: 6144)")
    parser.add_argument("--p", type=int, default=8, help="features of make_friedman1, at least 5 (default: 8)")
    parser.add_argument("--epochs", type=int, nargs=2, default=None, metavar=("E1", "E2"),
                        help=f"E1 E2 for every depth, {MIN_EPOCHS} <= E1 < E2 (default: by depth)")
    args = parser.parse_args(argv)
    # checked here, before the reference virtualenv is built (a pip install) for a run that cannot go on
    for name, low in (("repeats", 1), ("threads", 1), ("n", 20), ("p", 5)):
        if getattr(args, name) < low:
            parser.error(f"--{name} must be at least {low}, got {getattr(args, name)}")
    if min(args.depths) < 1:
        parser.error(f"--depths must be at least 1, got {min(args.depths)}")
    if args.epochs and not MIN_EPOCHS <= args.epochs[0] < args.epochs[1]:
        parser.error(f"--epochs E1 E2 must satisfy {MIN_EPOCHS} <= E1 < E2 (the package's scheduler warms up for 10 "
                     f"epochs), got {args.epochs[0]} {args.epochs[1]}")
    results = [measure_reference(d, n=args.n, p=args.p, epochs=tuple(args.epochs) if args.epochs else None,
                                 repeats=args.repeats, threads=args.threads) for d in args.depths]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
