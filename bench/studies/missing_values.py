"""Tables as they come (issue 47): GET with missing values and categorical columns against the usual work-arounds.

Missing values are injected into half of a table's feature columns (chosen by the seed), in every row, train and
test alike: ``mcar10`` and ``mcar30`` leave 10% or 30% of their cells empty completely at random; ``value30`` empties
30% of them on average with a chance that rises with the value itself (twice the rate times the value's rank share
in its column: the largest values are missing most often). Against GET's own handling (``native``: NaN passed to
the estimator), the work-arounds as scikit-learn pipelines around the same estimator: ``drop`` (training rows with a
hole dropped; a test row's holes get the kept rows' means, since every test row is scored), ``mean`` (mean
imputation), ``indicator`` (mean imputation with a missing indicator per column that has holes) and
HistGradientBoosting with its native NaN handling (``hgb``). ``native`` runs with the CART start grown on the fills
(``get_core.engine.starts.DEFAULT_DIRECTION`` off, the code before issue 47's second round) and ``native-dd`` with
that start's learned default direction per split (on), so the two are paired in one process, seed by seed;
``native-dd0`` also starts the random hyperplanes with no weight on the "is missing" inputs
(``ZERO_RANDOM_MISSING``). Categorical columns (``categorical``): the table's own
(german_credit's 13) or, for an all-numeric table, half of its columns cut into ten quantile bins named as levels;
``native`` passes them as pandas categories (``categorical_features="from_dtype"``), ``onehot`` one-hot encodes them
(unseen levels all zero), ``hgb`` takes them natively.

Per cell (table, seed, pattern, method): test accuracy in points (R2 x 100 or accuracy %), terms per split (a
split's distinct inputs, a raw column counted once with its "if missing" term and its categories under ``native``,
each one-hot level and each indicator a term of its own as the app shows them today; the mean over live splits) and
rule length (the terms a test row's path reads, root to leaf, on average). Every GET fit is ``GETRegressor`` /
``GETClassifier`` at one depth with a small ``time_budget`` and one thread; HistGradientBoosting has no terms.

  python -m bench.studies.missing_values                      # the default: 4 tables x 3 patterns + 3 categorical
  python -m bench.studies.missing_values --tables german_credit --patterns categorical --seeds 0 1 2
  python -m bench.studies.missing_values --report             # the Markdown table of the finished cells
"""

from __future__ import annotations

import argparse
import time
import zlib
from statistics import mean
from typing import Callable, Iterator

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder

from bench.common import (DEFAULT_DATA_DIR, MAX_SEED, RESULTS_DIR, TEST_SIZE, add_cell_options, check_cells_file,
                          check_writable, command_parser, fill_cells, int_in, thread_limit, unique)
from get_core import GETClassifier, GETRegressor
from get_core.engine import starts

RESULTS = RESULTS_DIR / "missing-values.cells.jsonl"
CLASS_DIR = DEFAULT_DATA_DIR / "classification"
MISSING = {"mcar10": 0.10, "mcar30": 0.30, "value30": 0.30}  # pattern -> share of a chosen column's cells emptied
CATEGORICAL = "categorical"
PATTERNS = (*MISSING, CATEGORICAL)
MISSING_METHODS = ("drop", "mean", "indicator", "native", "native-dd", "native-dd0", "hgb")
#: GET's own handling: (the CART start's default direction, random starts without "if missing" weights)
NATIVE = {"native": (False, False), "native-dd": (True, False), "native-dd0": (True, True)}
CATEGORICAL_METHODS = ("onehot", "native", "hgb")
MISSING_TABLES = ("airfoil_self_noise", "cpu_small", "pima_diabetes", "banknote")  # all numeric
CATEGORICAL_TABLES = ("german_credit", "airfoil_self_noise", "pima_diabetes")  # its own categories, then binned ones
BINS = 10
MAX_ROWS = 2000  # the default row cap: a fixed sample, so that the default run takes minutes


# ---------------------------------------------------------------- tables
def read_table(name: str, max_rows: int | None) -> tuple[pd.DataFrame, pd.Series, bool]:
    """(features, target, is it a class table) of a shared table: the regression folder, else the class one."""
    for folder, classify in ((DEFAULT_DATA_DIR, False), (CLASS_DIR, True)):
        path = folder / f"{name}.csv"
        if path.is_file():
            frame = pd.read_csv(path)
            if max_rows is not None and len(frame) > max_rows:
                frame = frame.sample(n=max_rows, random_state=12345).sort_index()
            return frame.drop(columns="target"), frame["target"], classify
    raise SystemExit(f"--tables {name}: no {name}.csv in {DEFAULT_DATA_DIR} or {CLASS_DIR}")


def _rng(name: str, seed: int, pattern: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), zlib.crc32(pattern.encode())])


def _chosen_columns(X: pd.DataFrame, rng: np.random.Generator) -> list[str]:
    numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
    count = max(1, (len(numeric) + 1) // 2)
    return sorted(rng.choice(numeric, size=count, replace=False).tolist(), key=list(X.columns).index)


def with_holes(X: pd.DataFrame, pattern: str, rng: np.random.Generator) -> pd.DataFrame:
    """``X`` with the pattern's holes in half of its numeric columns (see the module's docstring)."""
    X = X.astype({c: np.float64 for c in X.columns if pd.api.types.is_numeric_dtype(X[c])})
    rate = MISSING[pattern]
    for column in _chosen_columns(X, rng):
        if pattern.startswith("mcar"):
            chance = np.full(len(X), rate)
        else:  # the value's rank share, 0 for the smallest to 1 for the largest: twice the rate on average
            chance = np.clip(2 * rate * X[column].rank(pct=True, method="average").to_numpy(), 0, 1)
        X.loc[rng.random(len(X)) < chance, column] = np.nan
    return X


def with_categories(X: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """``X`` with its text columns as pandas categories; a table without any gets half of its numeric columns cut
    into ``BINS`` quantile bins, each level a name ("L0".."L9") that carries no order to a one-hot encoder."""
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    X = X.copy()
    if not text:
        for column in _chosen_columns(X, rng):
            bins = pd.qcut(X[column], BINS, labels=False, duplicates="drop")
            X[column] = "L" + bins.astype(int).astype(str)
            text.append(column)
    return X.astype({c: "category" for c in text})


# ---------------------------------------------------------------- methods
class DropIncompleteRows(BaseEstimator):
    """Trains ``estimator`` on the rows without a missing value; a row to predict has its holes filled with the
    kept rows' column means (every test row gets a prediction, so the score counts all of them)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y):
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        complete = ~np.isnan(X).any(axis=1)
        self.imputer_ = SimpleImputer(strategy="mean", keep_empty_features=True).fit(X[complete])
        self.estimator_ = clone(self.estimator).fit(X[complete], y[complete])
        self.n_kept_ = int(complete.sum())
        return self

    def transform(self, X) -> np.ndarray:
        return self.imputer_.transform(np.asarray(X, dtype=np.float64))

    def predict(self, X) -> np.ndarray:
        return self.estimator_.predict(self.transform(X))


def make_method(method: str, classify: bool, categorical: list[str], depth: int, budget: float, seed: int):
    """The method's unfitted model: GET alone (``native``), a pipeline around GET, or HistGradientBoosting."""
    if method == "hgb":
        hgb = HistGradientBoostingClassifier if classify else HistGradientBoostingRegressor
        return hgb(categorical_features="from_dtype" if categorical else None, random_state=seed)
    kind = GETClassifier if classify else GETRegressor
    get = kind(depth=depth, time_budget=budget, random_state=seed)
    if method in NATIVE:
        return get.set_params(categorical_features="from_dtype") if categorical else get
    if method == "drop":
        return DropIncompleteRows(get)
    if method == "onehot":
        onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        return make_pipeline(ColumnTransformer([("onehot", onehot, categorical)], remainder="passthrough"), get)
    return make_pipeline(SimpleImputer(strategy="mean", add_indicator=method == "indicator"), get)


def _get_parts(model) -> tuple[Callable, BaseEstimator]:
    """(what turns the raw rows into the GET estimator's inputs, the fitted GET estimator) of a fitted method."""
    if isinstance(model, DropIncompleteRows):
        return model.transform, model.estimator_
    if isinstance(model, Pipeline):
        return model[:-1].transform, model[-1]
    return (lambda X: X), model


def readability(model, X_test) -> dict:
    """Terms per live split and the mean terms a test row's path reads (None for HistGradientBoosting)."""
    if isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier)):
        return {"terms_per_split": None, "rule_length": None}
    transform, estimator = _get_parts(model)
    terms = estimator.tree_.split_terms  # a raw column once (its categories, its "if missing"); a pipeline's inputs
    live = terms[terms > 0]
    path = estimator.decision_path(transform(X_test))[:, :-1]  # the branch nodes of each row, root first
    return {"terms_per_split": float(live.mean()) if live.size else 0.0,
            "rule_length": float(terms[path - 1].sum(axis=1).mean())}


def fit_cell(name: str, seed: int, pattern: str, method: str, args: argparse.Namespace) -> dict:
    """One (table, seed, pattern, method): the holes or categories, the 75/25 split, the fit and its figures."""
    X, y, classify = read_table(name, args.max_rows)
    rng = _rng(name, seed, pattern)
    X = with_categories(X, rng) if pattern == CATEGORICAL else with_holes(X, pattern, rng)
    categorical = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    holes = float(X.isna().to_numpy().mean())
    if not categorical:  # numbers only: an array (a frame's names would reach the estimator's far-outlier warning,
        X = X.to_numpy()  # which indexes them by input column: issue 47's h/C at 8e83726)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=TEST_SIZE, random_state=seed,
                                              stratify=y if classify else None)
    model = make_method(method, classify, categorical, args.depth, args.time_budget, seed)
    start, flags = time.perf_counter(), (starts.DEFAULT_DIRECTION, starts.ZERO_RANDOM_MISSING)
    starts.DEFAULT_DIRECTION, starts.ZERO_RANDOM_MISSING = NATIVE.get(method, flags)
    try:
        model.fit(X_tr, y_tr)
    finally:
        starts.DEFAULT_DIRECTION, starts.ZERO_RANDOM_MISSING = flags
    seconds = time.perf_counter() - start
    predicted = model.predict(X_te)
    score = accuracy_score(y_te, predicted) if classify else r2_score(y_te, predicted)
    return {"table": name, "pattern": pattern, "method": method, "task": "classes" if classify else "regression",
            "score": 100 * float(score), "seconds": seconds, "missing_share": holes,
            "train_rows": int(getattr(model, "n_kept_", len(X_tr))), **readability(model, X_te)}


def cells(args: argparse.Namespace) -> Iterator[tuple[str, Callable[[], dict], Callable[[dict], str]]]:
    plan = [(name, p) for p in args.patterns if p != CATEGORICAL for name in args.tables]
    plan += [(name, CATEGORICAL) for name in args.categorical_tables if CATEGORICAL in args.patterns]
    for seed in args.seeds:  # a seed's methods side by side, so paired methods see the same load
        for name, pattern in plan:
            for method in [m for m in args.methods if m in (CATEGORICAL_METHODS if pattern == CATEGORICAL
                                                            else MISSING_METHODS)]:
                key = "|".join(map(str, (name, pattern, method, seed, f"depth{args.depth}",
                                         f"{args.time_budget:g}s", f"rows{args.max_rows}")))
                yield (key, lambda name=name, pattern=pattern, method=method, seed=seed:
                       {"seed": seed, "depth": args.depth, "time_budget": args.time_budget,
                        **fit_cell(name, seed, pattern, method, args)},
                       _describe)


def _describe(r: dict) -> str:
    terms = "" if r["terms_per_split"] is None else (f", {r['terms_per_split']:.2f} terms per split, rule length "
                                                     f"{r['rule_length']:.1f}")
    return (f"{r['table']} seed {r['seed']} {r['pattern']} {r['method']}: {r['score']:.2f}{terms}, "
            f"{r['train_rows']} training rows, {r['seconds']:.1f} s")


# ---------------------------------------------------------------- report
def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return mean(values) if values else None


def _text(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def report(records: list[dict]) -> str:
    """Markdown: per pattern, each table's score per method (seeds averaged) with terms per split / rule length,
    the mean over tables, and the issue's comparisons (native against the best imputation, or one-hot)."""
    lines = []
    for pattern in [p for p in PATTERNS if any(r["pattern"] == p for r in records)]:
        mine = [r for r in records if r["pattern"] == pattern]
        methods = [m for m in (CATEGORICAL_METHODS if pattern == CATEGORICAL else MISSING_METHODS)
                   if any(r["method"] == m for r in mine)]
        tables = unique([r["table"] for r in mine])
        lines += [f"**{pattern}** (score: test R2 x 100 or accuracy %; terms per split / rule length)", "",
                  "| table | " + " | ".join(methods) + " | seeds |", "|---|" + "---:|" * (len(methods) + 1)]
        per_method: dict[str, list[dict]] = {m: [] for m in methods}
        for table in tables:
            cells_ = []
            for m in methods:
                rows = [r for r in mine if r["table"] == table and r["method"] == m]
                if not rows:
                    cells_.append("")
                    continue
                summary = {k: _mean([r[k] for r in rows]) for k in ("score", "terms_per_split", "rule_length")}
                per_method[m].append({"table": table, **summary})
                readable = ("" if summary["terms_per_split"] is None else
                            f" ({summary['terms_per_split']:.1f} / {summary['rule_length']:.1f})")
                cells_.append(f"{summary['score']:.2f}{readable}")
            seeds = len({r["seed"] for r in mine if r["table"] == table})
            lines.append(f"| {table} | " + " | ".join(cells_) + f" | {seeds} |")
        lines.append("| **mean** | " + " | ".join(
            _text(_mean([c["score"] for c in per_method[m]])) + (
                "" if _mean([c["terms_per_split"] for c in per_method[m]]) is None else
                f" ({_mean([c['terms_per_split'] for c in per_method[m]]):.1f} / "
                f"{_mean([c['rule_length'] for c in per_method[m]]):.1f})") for m in methods) + " | |")
        lines += ["", _comparison(pattern, per_method), *_paired_lines(mine), ""]
    return "\n".join(lines).rstrip()


def _comparison(pattern: str, per_method: dict[str, list[dict]]) -> str:
    """The issue's target for the pattern, over the tables every method involved has."""
    native = {c["table"]: c for c in per_method.get("native", [])}
    if pattern == CATEGORICAL:
        onehot = {c["table"]: c for c in per_method.get("onehot", [])}
        both = [t for t in native if t in onehot]
        if not both:
            return "native against one-hot: no table has both."
        gap = mean(native[t]["score"] - onehot[t]["score"] for t in both)
        ratio = mean(native[t]["terms_per_split"] / onehot[t]["terms_per_split"] for t in both)
        return (f"native minus one-hot: {gap:+.2f} points on average over {len(both)} tables (target: -0.5 or "
                f"above); its terms per split {ratio:.2f}x one-hot's (target: at most 0.5x).")
    scores = {m: {c["table"]: c["score"] for c in per_method.get(m, [])} for m in ("mean", "indicator", *NATIVE)}
    target = "+1 or above" if pattern == "value30" else "-0.3 or above"
    lines = []
    for method in [m for m in NATIVE if scores[m]]:
        both = [t for t in scores[method] if t in scores["mean"] and t in scores["indicator"]]
        if both:
            gap = mean(scores[method][t] - max(scores["mean"][t], scores["indicator"][t]) for t in both)
            lines.append(f"{method} minus the better of mean and indicator imputation per table: {gap:+.2f} points "
                         f"on average over {len(both)} tables (target: {target}).")
    trio = ("mean", "indicator", "native")
    shared = [t for t in scores["native"] if all(t in scores[m] for m in trio)]
    if shared:  # the yardstick's own bias: any one of three methods against the better of the other two
        lines.append("Each against the better of the other two per table (the yardstick's bias where they are "
                     "alike): " + ", ".join(
                         f"{m} {mean(scores[m][t] - max(scores[o][t] for o in trio if o != m) for t in shared):+.2f}"
                         for m in trio) + ".")
    return "\n".join(lines) if lines else "native against the best imputation: no table has all three."


def _paired_lines(records: list[dict]) -> list[str]:
    """Each variant of ``native`` against ``native``, mean and indicator imputation, cell by cell (table and seed):
    the mean difference and its paired standard error."""
    score = {(r["method"], r["table"], r["seed"]): r["score"] for r in records}
    lines = []
    for method in [m for m in NATIVE if m != "native" and any(k[0] == m for k in score)]:
        parts = []
        for other in ("native", "mean", "indicator"):
            diffs = [v - score[(other, *k[1:])] for k, v in score.items()
                     if k[0] == method and (other, *k[1:]) in score]
            if len(diffs) > 1:
                parts.append(f"{other} {mean(diffs):+.2f} ± {np.std(diffs, ddof=1) / np.sqrt(len(diffs)):.2f} "
                             f"({len(diffs)} cells)")
        if parts:
            lines.append(f"{method} minus, paired by table and seed (mean ± standard error): "
                         + ", ".join(parts) + ".")
    return lines


# ---------------------------------------------------------------- command line
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = command_parser(__doc__, "bench.studies.missing_values")
    parser.add_argument("--tables", nargs="+", default=list(MISSING_TABLES),
                        help="all-numeric shared regression or class tables that get holes (default: %(default)s)")
    parser.add_argument("--categorical-tables", nargs="+", default=list(CATEGORICAL_TABLES),
                        help="shared tables for the categorical pattern (default: %(default)s)")
    parser.add_argument("--patterns", nargs="+", choices=PATTERNS, default=list(PATTERNS))
    parser.add_argument("--methods", nargs="+", choices=unique([*MISSING_METHODS, *CATEGORICAL_METHODS]),
                        default=unique([*MISSING_METHODS, *CATEGORICAL_METHODS]))
    parser.add_argument("--seeds", nargs="+", type=int_in(0, MAX_SEED), default=[0], help="split seeds (default: 0)")
    parser.add_argument("--depth", type=int_in(1, 12), default=4, help="GET's depth (default 4)")
    parser.add_argument("--time-budget", type=float, default=3.0, help="seconds per GET fit (default 3)")
    parser.add_argument("--max-rows", type=int_in(20), default=MAX_ROWS,
                        help="at most this many rows of each table, a fixed sample (default %(default)s)")
    add_cell_options(parser, RESULTS)
    args = parser.parse_args(argv)
    if not args.time_budget > 0:
        parser.error(f"--time-budget must be a positive number of seconds; got {args.time_budget:g}")
    args.seeds = unique(args.seeds)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report:  # a wrong name or a table with text stops the run before the first fit
        for name in args.tables:
            text = [c for c, kind in read_table(name, 20)[0].dtypes.items() if not pd.api.types.is_numeric_dtype(kind)]
            if text:
                raise SystemExit(f"--tables {name}: column {text[0]!r} holds text; the holes go into all-numeric "
                                 "tables: give it to --categorical-tables instead")
        for name in args.categorical_tables:
            read_table(name, 20)
        check_writable("--out", args.out)
        check_cells_file("--out", args.out)
    with thread_limit(1):
        fill_cells(args, report, cells(args))


if __name__ == "__main__":
    main()
