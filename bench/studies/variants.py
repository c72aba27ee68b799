"""Test R2 of GET at fixed depths: the engine as it is against one change, on the same split, seed and budget.

Changes:
  robust        ``scaling="robust"`` (each feature's 1st-99th percentiles to [0, 1]) instead of min-max.
  weight-decay  the authors' optimizer: their code uses ``torch.optim.AdamW`` with its default weight decay 0.01
                (decoupled: every step multiplies the splits and leaf values by 1 - lr * 0.01); ours uses none
                (``GETConfig.weight_decay=0``).
``--outlier F`` first replaces feature 0 of one training row by min + F x range (a missing-value code such as
9999): what one far outlier does to each side.

Usage: python -m bench.studies.variants --change robust --datasets airfoil_self_noise abalone cpu_act --seeds 0 1 2
       python -m bench.studies.variants --change robust --outlier 10 --datasets airfoil_self_noise --depths 4 6
       python -m bench.studies.variants --report          # Markdown table of the finished cells
Cells go to a JSON-lines file and are skipped on a rerun.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace
from statistics import mean, stdev

import numpy as np
from sklearn.metrics import r2_score

from bench.common import RESULTS_DIR, Budget, int_in
from bench.studies.study import run_study, study_key, study_parser
from get_core.config import GETConfig
from get_core.engine.train import train

RESULTS = RESULTS_DIR / "variants.jsonl"
AUTHORS_WEIGHT_DECAY = 0.01  # torch.optim.AdamW's default, which the authors' GET_IterAlp.py keeps


def with_outlier(X: np.ndarray, factor: float | None) -> np.ndarray:
    """X with feature 0 of row 0 set to min + ``factor`` x range (None: X unchanged)."""
    if factor is None:
        return X
    X = X.copy()
    X[0, 0] = X[:, 0].min() + factor * np.ptp(X[:, 0])
    return X


def fit_both(split, depth: int, seed: int, budget: Budget, change: str, outlier: float | None) -> dict:
    """GET of ``depth`` as is (``_a``) and with ``change`` (``_b``): test and training R2, seconds."""
    X_tr, y_tr, X_te, y_te = split
    X_tr = with_outlier(X_tr, outlier)
    config = GETConfig(depth=depth, n_starts=budget.n_starts, n_epochs=budget.n_epochs, random_state=seed)
    changed = {"robust": replace(config, scaling="robust"),
               "weight-decay": replace(config, weight_decay=AUTHORS_WEIGHT_DECAY)}[change]
    out = {}
    for side, cfg in {"a": config, "b": changed}.items():
        t0 = time.perf_counter()
        tree = train(X_tr, y_tr, cfg)
        out |= {f"test_{side}": float(r2_score(y_te, tree.predict(X_te))),
                f"train_{side}": float(r2_score(y_tr, tree.predict(X_tr))), f"seconds_{side}": time.perf_counter() - t0}
    return out


def report(records: list[dict]) -> str:
    """Markdown: per (change, outlier) the test and training R2 (%) of both sides per cell, then the summary."""
    lines = ["| change | outlier | dataset | seed | depth | test: as is | test: changed | train: as is | "
             "train: changed |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    summary = []
    groups = sorted({(r["change"], r["outlier"] or 0) for r in records})
    for change, outlier in groups:
        rows = sorted((r for r in records if (r["change"], r["outlier"] or 0) == (change, outlier)),
                      key=lambda r: (r["dataset"], r["seed"], r["depth"]))
        for r in rows:
            lines.append(f"| {change} | {outlier or '-'} | {r['dataset']} | {r['seed']} | {r['depth']} | "
                         f"{100 * r['test_a']:.2f} | {100 * r['test_b']:.2f} | {100 * r['train_a']:.2f} | "
                         f"{100 * r['train_b']:.2f} |")
        diff = [100 * (r["test_b"] - r["test_a"]) for r in rows]
        spread = f", sd {stdev(diff):.2f}" if len(diff) > 1 else ""
        summary.append(f"* {change}, outlier {outlier or 'none'}, {len(rows)} cells: test R2 changed minus as is: mean "
                       f"{mean(diff):+.2f}{spread}, range {min(diff):+.2f} to {max(diff):+.2f}; training R2 mean "
                       f"{mean(100 * (r['train_b'] - r['train_a']) for r in rows):+.2f}.")
    return "\n".join(lines + [""] + summary)


def finite_float(text: str) -> float:
    """An argparse type: a finite number (an infinite or NaN outlier cannot be scaled, nor stored as JSON)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def parse_args(argv: list[str] | None = None):
    parser = study_parser(__doc__, "bench.studies.variants", RESULTS)
    parser.add_argument("--change", choices=["robust", "weight-decay"], default="robust",
                        help="the change to compare with the engine as it is (default: robust)")
    parser.add_argument("--depths", nargs="+", type=int_in(1, 12), default=[4, 6, 8],
                        help="fixed depths (default: 4 6 8)")
    parser.add_argument("--outlier", type=finite_float, metavar="F",
                        help="set feature 0 of one training row to min + F x range")
    return parser.parse_args(argv)


def cells(args: argparse.Namespace, budget: Budget, name: str, seed: int, split: tuple):
    """One cell per depth: (key, fit, describe) for ``study.run_study``."""
    for depth in args.depths:
        yield (study_key(args, name, seed, depth, args.change, args.outlier),
               lambda depth=depth: {"depth": depth, "change": args.change, "outlier": args.outlier,
                                    **fit_both(split, depth, seed, budget, args.change, args.outlier)},
               lambda r: f"{name} seed {seed} depth {r['depth']}: test {100 * r['test_a']:.2f} as is, "
                         f"{100 * r['test_b']:.2f} with {r['change']}")


def main(argv: list[str] | None = None) -> None:
    run_study(parse_args(argv), report, cells)


if __name__ == "__main__":
    main()
