"""Training R2 of the authors' GET implementation (PyPI `get-oblique==0.1.1`) on our benchmark splits.

Why: the paper's Tables 3 and 4 average training R2 over its own 16 datasets, 4 of which are not shared here, so
our `python -m bench.paper --tables` figures cannot be compared with the paper's row directly. Running the authors' code
on exactly the same training part (same CSV, split seed, min-max scaling, depth) separates "our engine finds
worse trees" from "these datasets allow less gain over CART".

What runs: `GET.GETRegressor(treeDepth=D, epochNum=E, startNum=S)` (no polish) or `GET.GETSubPolRegressor` (with
the authors' subtree polish), in the reference virtualenv of `bench.reference_venv`, with `torch.manual_seed(seed)`,
on the scaled training part of `bench.common.split_and_scale`; training R2 (%) from its hard-split `predict`.
Finished cells go to a JSON-lines file and are skipped on a rerun.

Usage: python -m bench.paper.reference_r2 --datasets abalone airfoil_self_noise --depths 2 4 [--polish] [--epochs 3000]
       python -m bench.paper.reference_r2 --report results/tables-paper.cells-<key>.jsonl   # Markdown beside ours

The comparison is fair only at equal budgets: `--report` keeps the fits of `--starts` x `--epochs` and should be given
the cells file of a `python -m bench.paper --tables` run with the same starts and epochs.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np

from bench.common import (MAX_SEED, RESULTS_DIR, CellStore, add_data_options, check_cells_file, check_writable,
                          command_parser, find_datasets, int_in, load_dataset, split_and_scale)
from bench.reference_venv import MIN_EPOCHS, ensure_reference_venv, run_script

RESULTS = RESULTS_DIR / "reference-train-r2.jsonl"

# Runs inside the reference venv: argv[1] = JSON parameters, argv[2] = .npz with the scaled training part.
_FIT_SCRIPT = r'''
import json, sys, time
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
import GET
from sklearn.metrics import r2_score
data = np.load(sys.argv[2])
X, y = data["X"].astype(np.float32), data["y"].astype(np.float32)
torch.manual_seed(args["seed"])
cls = GET.GETSubPolRegressor if args["polish"] else GET.GETRegressor
model = cls(treeDepth=args["depth"], epochNum=args["epochs"], startNum=args["starts"])
t0 = time.perf_counter()
model.fit(X, y)
seconds = time.perf_counter() - t0
print(json.dumps({"train_r2": 100 * float(r2_score(y, model.predict(X).cpu().numpy())), "fit_seconds": seconds}))
'''


def fit_reference(X: np.ndarray, y: np.ndarray, params: dict, timeout: float) -> dict:
    """Fit the authors' tree on (X, y) in the reference venv; returns its training R2 (%) and fit seconds."""
    return run_script(ensure_reference_venv(), _FIT_SCRIPT, params, timeout, f"fit at depth {params['depth']}",
                      arrays={"X": X, "y": y})


def _key(params: dict) -> str:
    return "|".join(str(params[k]) for k in ("dataset", "seed", "depth", "polish", "starts", "epochs"))


def report(reference: list[dict], ours: list[dict]) -> str:
    """Markdown: the authors' training R2 beside ours (``python -m bench.paper --tables`` cells) per dataset and
    depth."""
    mine = {(r["dataset"], r["seed"], r["method"], r["depth"]): r["train_r2"] for r in ours}
    theirs = {(r["dataset"], r["seed"], "get-polish" if r["polish"] else "get", r["depth"]): r for r in reference}
    rows = sorted({(d, s, k) for d, s, _, k in theirs})
    lines = ["| dataset | seed | depth | CART | GET: authors' | GET: ours | GET+polish: authors' | GET+polish: ours |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for d, s, k in rows:
        cells = [mine.get((d, s, "cart", k))]
        for m in ("get", "get-polish"):
            cells += [theirs[(d, s, m, k)]["train_r2"] if (d, s, m, k) in theirs else None, mine.get((d, s, m, k))]
        lines.append(f"| {d} | {s} | {k} | " + " | ".join("–" if c is None else f"{c:.2f}" for c in cells) + " |")
    budgets = sorted({(r["starts"], r["epochs"]) for r in reference})
    lines.append("\nAuthors' budget (startNum x epochNum per stage): " + ", ".join(f"{a} x {b}" for a, b in budgets))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.paper.reference_r2")
    add_data_options(parser, seeds=False)
    parser.add_argument("--depths", type=int_in(1), nargs="+", default=[2, 4],
                        help="treeDepth of each fit (default: 2 4)")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                        help="split seed, also the torch seed (default: 0)")
    parser.add_argument("--starts", type=int_in(1), default=10, help="startNum (default: 10, the paper's)")
    parser.add_argument("--epochs", type=int, default=3000, help="epochNum per alpha stage (default: 3000)")
    parser.add_argument("--polish", action="store_true", help="GETSubPolRegressor (the authors' subtree polish)")
    parser.add_argument("--threads", type=int_in(1), default=1, help="torch threads per fit (default: 1)")
    parser.add_argument("--timeout", type=float, default=6 * 3600.0, help="seconds per fit (default: 6 hours)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="JSON-lines file of the finished fits, appended to (default: %(default)s)")
    parser.add_argument("--report", type=Path, metavar="OUR_CELLS", default=None,
                        help="fit nothing: print the finished fits of --starts x --epochs beside this "
                        "python -m bench.paper --tables cells file (run with the same budget)")
    args = parser.parse_args(argv)
    if args.epochs < MIN_EPOCHS:
        parser.error(f"--epochs must be >= {MIN_EPOCHS}: the package's scheduler warms up for 10 epochs first")
    if not args.timeout > 0:
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    for option, path in (("--out", args.out), ("--report", args.report)):
        if path is not None and path.is_dir():
            parser.error(f"{option} {path} is a directory; give a .jsonl file")
    if args.report is not None:
        if not args.report.exists():
            parser.error(f"--report {args.report}: no such file (give the cells file of a python -m bench.paper "
                         "--tables run)")
        fits = CellStore(args.out).load().values()
        same_budget = [r for r in fits if (r["starts"], r["epochs"]) == (args.starts, args.epochs)]
        print(report(same_budget, list(CellStore(args.report).load().values())))
        return
    check_writable("--out", args.out)  # before any fit: a fit that cannot be stored is hours lost
    check_cells_file("--out", args.out)
    store = CellStore(args.out)
    done = store.load()
    # every table is read (and checked) before the first fit
    tables = [(path, load_dataset(path)) for path in find_datasets(args.data_dir, args.datasets)]
    for path, (X, y) in tables:
        X_tr, y_tr, _, _ = split_and_scale(X, y, args.seed)
        for depth in args.depths:
            params = {"dataset": path.stem, "seed": args.seed, "depth": depth, "polish": args.polish,
                      "starts": args.starts, "epochs": args.epochs, "threads": args.threads}
            if _key(params) in done:
                continue
            try:
                fitted = fit_reference(X_tr, y_tr, params, args.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:  # finished fits stay in --out; a rerun resumes
                raise SystemExit(f"{_key(params)}: {exc}") from None
            record = {"key": _key(params), **params, "started_at": time.time(), **fitted}
            store.append(record)
            done[record["key"]] = record  # a depth given twice is fitted once
            print(f"{record['key']}: train R2 {record['train_r2']:.2f} in {record['fit_seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
