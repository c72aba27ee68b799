"""The app's own run on tables with category columns, paired: the Data page's default (categories handed to the
estimator as one group per column, ``DataSpec.one_hot`` False) against one-hot encoding by the app (runs before).

Each (table, seed) cell fits both on the worker's split, encoding and fit function (``runs.training``:
``split_rows`` / ``stratified_split``, ``prepare``, ``fit_tree``) with the app's default settings at a short time
budget, one after the other, so the comparison is paired. The tables and their categories are
``bench.studies.missing_values``'s (german_credit's own text columns; half of the numeric columns of the others cut
into 10 unordered bins). Reported: test R2 (regression) or accuracy (classes) in points, the mean terms of a live
split (a raw column once: its categories, its "if missing"; one-hot: each level input) and the mean terms a test
row's path reads.

Example:
  python -m bench.studies.app_categories --seeds 0 --budget 3
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Sequence

import pandas as pd
from sklearn.metrics import accuracy_score, r2_score

from bench.common import command_parser
from bench.studies.missing_values import CATEGORICAL, CATEGORICAL_TABLES, _rng, read_table, with_categories
from get_core.config import APP_DEFAULTS
from get_core.data.classes import class_labels
from get_core.data.encoding import DataSpec, prepare, usable_rows
from get_core.runs.spec import split_rows, stratified_split
from get_core.runs.training import fit_tree

VARIANTS = {"categories": False, "one-hot": True}  # name -> DataSpec.one_hot


def cell(name: str, seed: int, budget: float, max_rows: int) -> dict[str, dict]:
    """Both variants of one (table, seed): score (points), terms per live split, terms a test row's path reads."""
    X, y, classify = read_table(name, max_rows)
    X = with_categories(X, _rng(name, seed, CATEGORICAL))
    frame = X.astype({c: object for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)}).assign(target=y)
    out = {}
    for variant, one_hot in VARIANTS.items():
        spec = DataSpec(target="target", features=tuple(X.columns), missing="keep", one_hot=one_hot,
                        task="classification" if classify else "regression")
        rows = usable_rows(frame, spec)
        train, test = (stratified_split(class_labels(frame["target"])[rows], 0.25, seed) if classify
                       else split_rows(len(rows), 0.25, seed))
        prepared = prepare(frame, spec, fit_rows=train)
        config = replace(APP_DEFAULTS, time_budget=budget, random_state=seed, device="cpu")
        tree = fit_tree(prepared.X[train], prepared.y[train], config, prepared.feature_names, None, classify)
        predicted = tree.predict(prepared.X[test])
        score = accuracy_score(prepared.y[test], predicted) if classify else r2_score(prepared.y[test], predicted)
        terms = tree.split_terms
        path = tree.decision_path(prepared.X[test])[:, :-1]
        out[variant] = {"score": 100 * float(score), "terms_per_split": float(terms[terms > 0].mean()),
                        "rule_length": float(terms[path - 1].sum(axis=1).mean()), "inputs": prepared.n_inputs}
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.app_categories")
    parser.add_argument("--tables", nargs="+", default=list(CATEGORICAL_TABLES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per GET fit (default: %(default)s)")
    parser.add_argument("--max-rows", type=int, default=2000)
    args = parser.parse_args(argv)
    rows = []
    for name in args.tables:
        for seed in args.seeds:
            for variant, figures in cell(name, seed, args.budget, args.max_rows).items():
                rows.append({"table": name, "seed": seed, "variant": variant, **figures})
                print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in rows[-1].items()),
                      flush=True)
    table = pd.DataFrame(rows)
    mean = table.groupby("variant")[["score", "terms_per_split", "rule_length"]].mean()
    print(mean.to_string(float_format=lambda v: f"{v:.2f}"))
    paired = table.pivot_table(index=["table", "seed"], columns="variant", values="score")
    gap = (paired["categories"] - paired["one-hot"]).to_numpy()
    print(f"categories - one-hot: {gap.mean():+.2f} points (per cell {', '.join(f'{g:+.2f}' for g in gap)}); "
          f"terms per split {mean.loc['categories', 'terms_per_split'] / mean.loc['one-hot', 'terms_per_split']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
