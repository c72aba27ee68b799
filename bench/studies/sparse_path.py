"""The accuracy-readability path per dataset: ``GETRegressorCV(max_split_features="auto").path_results_``.

Why: issue 20 asks for validation R2 and the parameter count at k = 1, 2, 3, 5 and dense, per dataset, so a person
can pick k. A depth search per k costs five depth searches per dataset; this study holds the depth at the one the
dense method's own search chose on the same split (read from a ``bench.paper`` cell file), a declared cheaper
protocol: each k is one fit on the 2:1 train part, scored on the validation part, and the chosen k is refit.

Usage: python -m bench.studies.sparse_path --cells results/paper-fast-sparse.cells-cdb30d8994.jsonl \
           --seeds 0 --leaf linear
       python -m bench.studies.sparse_path --report
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sklearn.metrics import r2_score

from bench.common import RESULTS_DIR, Budget, CellStore
from bench.studies.study import run_study, study_key, study_parser
from get_core.config import SPLIT_FEATURE_PATH
from get_core.estimator import GETRegressorCV

RESULTS = RESULTS_DIR / "sparse-path.jsonl"
DENSE_METHOD = {"constant": "get", "linear": "get-linear"}


def fit_cell(X_tr, y_tr, X_te, y_te, leaf: str, depth: int, seed: int, budget: Budget) -> dict:
    """The path at ``depth``: per k its validation R2, parameters (non-zero) and widest split; the chosen k's
    test R2."""
    t0 = time.perf_counter()
    search = GETRegressorCV(depths=(depth,), leaf=leaf, n_starts=budget.n_starts, n_epochs=budget.n_epochs,
                            random_state=seed, max_split_features="auto").fit(X_tr, y_tr)
    return {"path": search.path_results_, "chosen": search.best_max_split_features_,
            "test": float(r2_score(y_te, search.predict(X_te))), "seconds": time.perf_counter() - t0}


def report(records: list[dict]) -> str:
    """Markdown: per dataset and seed, validation R2 (%) / parameters at each k of the path, and the chosen k."""
    names = ["dense" if k is None else f"k={k}" for k in SPLIT_FEATURE_PATH]
    lines = ["| dataset | seed | depth | " + " | ".join(names) + " | chosen (test R2) |",
             "|---|---:|---:|" + "---:|" * (len(names) + 1)]
    for r in sorted(records, key=lambda r: (r["dataset"], r["seed"])):
        by_k = {p["max_split_features"]: p for p in r["path"]}
        cells = [f"{100 * by_k[k]['validation_r2']:.2f} / {by_k[k]['n_parameters']:,}" if k in by_k else "–"
                 for k in SPLIT_FEATURE_PATH]
        chosen = "dense" if r["chosen"] is None else f"k={r['chosen']}"
        lines.append(f"| {r['dataset']} | {r['seed']} | {r['depth']} | " + " | ".join(cells)
                     + f" | {chosen} ({100 * r['test']:.2f}) |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = study_parser(__doc__, "bench.studies.sparse_path", RESULTS)
    parser.add_argument("--cells", type=Path, help="bench.paper cell file holding the dense method's cells (their "
                                                   "chosen depths); required unless --report")
    parser.add_argument("--leaf", choices=sorted(DENSE_METHOD), default="linear", help="leaf type (default: linear)")
    args = parser.parse_args(argv)
    if args.cells is None and not args.report:
        parser.error("--cells is required: the depth of each dataset and seed comes from its dense cell")
    return args


def cells(args: argparse.Namespace, budget: Budget, name: str, seed: int, split: tuple):
    """One cell per (dataset, seed) whose dense cell is in ``--cells``; the others are skipped with a message."""
    dense = CellStore(args.cells).load().get(f"{name}|{seed}|{DENSE_METHOD[args.leaf]}|None")
    if dense is None:
        print(f"{name} seed {seed}: no {DENSE_METHOD[args.leaf]} cell in {args.cells}, skipped", flush=True)
        return
    depth = int(dense["depth"])
    yield (study_key(args, name, seed, args.leaf, f"depth{depth}", f"{budget.n_starts}x{budget.n_epochs}"),
           lambda: {"leaf": args.leaf, "depth": depth, **fit_cell(*split, args.leaf, depth, seed, budget)},
           lambda r: f"{name} seed {seed} depth {depth}: chosen {r['chosen']}, test {100 * r['test']:.2f}, "
                     f"{r['seconds']:.0f} s")


def main(argv: list[str] | None = None) -> None:
    run_study(parse_args(argv), report, cells)


if __name__ == "__main__":
    main()
