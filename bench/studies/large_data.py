"""Large tables: soft epochs on row samples (``GETConfig.batch_rows``) against full-batch epochs, and a million rows.

Why: issue 21 asks for a fit equivalent to the paper's budget on 1,000,000 x 10 at depth 6 in at most 10 minutes under
4 GB, with training R2 within a point of full-batch training at the same epochs. Every fit runs in its own child
process, which reports its wall time, its peak RSS (``ru_maxrss``: the whole fit, data included) and its training R2.
The data are planted: a random dense oblique tree of depth 4 on 10 uniform features, leaf values N(0, 1), plus
Gaussian noise at a tenth of the signal's variance (noise ceiling R2 = 1/1.1 = 90.9%).

Usage: nice python -m bench.studies.large_data                     # the comparison at 20,000 to 100,000 rows
       nice python -m bench.studies.large_data --million             # and the 1,000,000-row fit at the paper budget
       python -m bench.studies.large_data --report                   # Markdown tables from the stored fits
Fits go to a JSON-lines file and are skipped on a rerun.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

import numpy as np

from bench.common import RESULTS_DIR, log

RESULTS = RESULTS_DIR / "large-data.jsonl"
FEATURES, PLANTED_DEPTH, FIT_DEPTH, NOISE_SHARE = 10, 4, 6, 0.1
#: (rows, method) compared at the same starts and epochs; "full" is batch_rows=0, a number is batch_rows, and
#: "minibatch-8192" walks a fresh permutation in consecutive slices instead of drawing every epoch afresh.
COMPARISON = [(n, m) for n in (20_000, 40_000) for m in ("full", "8192")] + [
    (100_000, m) for m in ("full", "4096", "8192", "16384", "minibatch-8192")]


def planted_signal(X: np.ndarray) -> np.ndarray:
    """The planted tree's prediction for each row of X: one fixed random tree for every size and seed."""
    tree = np.random.default_rng(1234)
    n_branch = 2 ** PLANTED_DEPTH - 1
    weights = tree.normal(size=(n_branch, FEATURES))
    thresholds = (weights * tree.random((n_branch, FEATURES))).sum(axis=1)  # through a random point of the cube
    values = tree.normal(size=2 ** PLANTED_DEPTH)
    node = np.zeros(len(X), dtype=np.int64)  # heap index from 0
    for _ in range(PLANTED_DEPTH):
        right = np.einsum("ij,ij->i", X, weights[node]) > thresholds[node]
        node = 2 * node + 1 + right
    return values[node - n_branch]


def planted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n rows of the planted problem: (X, y)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, FEATURES))
    signal = planted_signal(X)
    return X, signal + rng.normal(scale=np.sqrt(NOISE_SHARE * signal.var()), size=n)


def fit(spec: dict) -> dict:
    """One fit in this process (the child): seconds, peak RSS in MB, training R2 and the rows per soft epoch."""
    import torch

    from get_core.engine import optimize
    from get_core.config import GETConfig, soft_rows
    from get_core.engine.train import train

    torch.set_num_threads(spec["threads"])
    method = spec["method"]
    if method.startswith("minibatch-"):
        _use_minibatches(optimize)
    X, y = planted(spec["n"], spec["seed"])
    batch_rows = 0 if method == "full" else int(method.split("-")[-1])
    config = GETConfig(depth=FIT_DEPTH, n_starts=spec["starts"], n_epochs=spec["epochs"], random_state=spec["seed"],
                       batch_rows=batch_rows)
    t0, cpu0 = time.perf_counter(), time.process_time()
    tree = train(X, y, config)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {**spec, "seconds": seconds, "cpu_seconds": cpu_seconds, "rss_mb": rss_mb, "train_r2": 100 * tree.meta["train_r2"],
            "soft_rows": soft_rows(batch_rows, spec["n"])}


def _use_minibatches(optimize) -> None:
    """The alternative measured against fresh samples: each epoch takes the next slice of a permutation of the rows
    (one problem), a new permutation once the rows are used up."""
    import torch

    state = {"order": None, "at": 0}

    def sample(self, size, gen):
        n = int(self.n_rows[0])
        if state["order"] is None or state["at"] + size > n:
            state["order"], state["at"] = torch.randperm(n, generator=gen), 0
        rows = state["order"][state["at"]:state["at"] + size].view(1, -1)
        state["at"] += size
        Xa = self.Xa[:, rows[0]]
        y = self.y[:, rows[0]]
        return optimize.Problems(Xa, Xa.transpose(1, 2).contiguous(), y, torch.full_like(y, 1.0 / size),
                                 torch.full((1,), size))

    optimize.Problems.sample = sample


def reading_figures(rows: int, digits: int | None) -> dict:
    """A CSV of the planted problem (``digits`` significant digits; None: full float precision) read by the app's
    reader in-process (wall and CPU seconds) and through ``read_table_bounded``, its confined child (wall seconds)."""
    import pandas as pd

    from get_core.data import reading

    X, y = planted(rows, 0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(FEATURES)]).assign(target=y)
    data = frame.to_csv(index=False, float_format=None if digits is None else f"%.{digits}g").encode()
    t0, cpu0 = time.perf_counter(), time.process_time()
    shape = reading.read_table(data, "large.csv").shape
    direct, direct_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    t0 = time.perf_counter()
    bounded = reading.read_table_bounded(data, "large.csv").shape
    return {"rows": rows, "digits": digits, "mb": len(data) / 2 ** 20, "shape": [shape, bounded],
            "read_table_s": direct, "read_table_cpu_s": direct_cpu, "bounded_s": time.perf_counter() - t0}


def run_child(spec: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.studies.large_data", "--child", json.dumps(spec)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def key(spec: dict) -> str:
    return "|".join(str(spec[k]) for k in ("n", "method", "starts", "epochs", "seed", "threads"))


def stored(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {key(r): r for r in map(json.loads, path.read_text().splitlines()) if r}


def specs(args: argparse.Namespace) -> list[dict]:
    base = {"starts": args.starts, "threads": args.threads}
    plan = [{**base, "n": n, "method": m, "epochs": args.epochs, "seed": s}
            for s in args.seeds for n, m in COMPARISON
            if (args.methods is None or m in args.methods) and (args.rows is None or n in args.rows)]
    if args.million:  # the paper's budget: GETConfig's defaults, 10 starts x 3000 epochs per stage
        plan.append({**base, "n": 1_000_000, "method": "8192", "starts": 10, "epochs": 3000, "seed": args.seeds[0]})
    if args.paper_100k:
        plan += [{**base, "n": 100_000, "method": m, "starts": 10, "epochs": 3000, "seed": args.seeds[0]}
                 for m in ("8192", "full")]
    return plan


def report(records: list[dict]) -> str:
    """Markdown: medians over seeds per (rows, budget, method), with the CPU-time ratio to the full batch of the same
    budget and the median over seeds of the training R2 difference to it (same seed: same data and starts)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["n"], r["starts"], r["epochs"], r["method"]), []).append(r)
    lines = ["| rows | budget | soft epoch on | seeds | seconds | CPU seconds | CPU x full batch | peak RSS MB | "
             "training R2 | R2 - full batch |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (n, starts, epochs, method), rs in sorted(groups.items(), key=lambda g: (g[0][0], g[0][2], g[0][3] != "full",
                                                                                  g[0][3])):
        full = groups.get((n, starts, epochs, "full"))
        seconds, r2 = median(r["seconds"] for r in rs), median(r["train_r2"] for r in rs)
        cpu, full_cpu = _cpu(rs), _cpu(full or [])
        ratio = f"{cpu / full_cpu:.2f}" if cpu and full_cpu else ""
        paired = {r["seed"]: r["train_r2"] for r in full or []}
        gaps = [r["train_r2"] - paired[r["seed"]] for r in rs if r["seed"] in paired]
        gap = f"{median(gaps):+.2f}" if gaps and method != "full" else ""
        label = "all rows" if method == "full" else (f"{method.split('-')[-1]} rows, minibatches" if "-" in method
                                                     else f"{method} fresh rows")
        lines.append(f"| {n:,} | {starts} x {epochs} | {label} | {len(rs)} | {seconds:.1f} | "
                     f"{f'{cpu:.1f}' if cpu else ''} | {ratio} | "
                     f"{median(r['rss_mb'] for r in rs):.0f} | {r2:.2f} | {gap} |")
    return "\n".join(lines)


def _cpu(records: list[dict]) -> float | None:
    """Median CPU seconds (one thread per fit: the work, whatever else the shared machine runs); None if unknown."""
    cpu = [r["cpu_seconds"] for r in records if "cpu_seconds" in r]
    return median(cpu) if cpu else None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.large_data", description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds (default 0 1 2)")
    parser.add_argument("--starts", type=int, default=10, help="starts of the comparison fits (default 10)")
    parser.add_argument("--epochs", type=int, default=300, help="epochs per stage of the comparison (default 300)")
    parser.add_argument("--methods", nargs="+", help="compare only these (full, 4096, 8192, 16384, minibatch-8192)")
    parser.add_argument("--rows", nargs="+", type=int, help="compare only at these row counts (20000, 40000, 100000)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per fit (default 1)")
    parser.add_argument("--million", action="store_true", help="also fit 1,000,000 rows at the paper budget")
    parser.add_argument("--paper-100k", action="store_true",
                        help="also fit 100,000 rows at the paper budget, sampled and full batch (about 20 min)")
    parser.add_argument("--only-extra", action="store_true", help="skip the comparison, run only --million etc.")
    parser.add_argument("--reading", action="store_true", help="time reading a 1,000,000 x 11 CSV, then stop")
    parser.add_argument("--report", action="store_true", help="print the Markdown table and stop")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"JSON-lines file (default {RESULTS})")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(fit(json.loads(args.child))))
        return
    if args.reading:
        for digits in (6, None):
            print(json.dumps(reading_figures(1_000_000, digits)))
        return
    done = stored(args.results)
    if not args.report:
        plan = specs(args)
        if args.only_extra:
            plan = [s for s in plan if s["epochs"] != args.epochs or s["starts"] != args.starts]
        for spec in plan:
            if key(spec) in done:
                continue
            record = run_child(spec)
            log(f"{spec['n']:,} rows, {spec['method']}, {spec['starts']} x {spec['epochs']}, seed {spec['seed']}: "
                f"{record['seconds']:.1f} s, {record['rss_mb']:.0f} MB, training R2 {record['train_r2']:.2f}")
            done[key(spec)] = record
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with args.results.open("a") as out:
                out.write(json.dumps(record) + "\n")
    print(report(list(done.values())))


if __name__ == "__main__":
    main()
