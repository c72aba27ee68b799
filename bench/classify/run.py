"""GETClassifier against CART, a random forest, HistGradientBoosting, logistic regression and obliquetree on the
12 classification tables of ../shared/datasets/classification (MANIFEST.md there).

Protocol (the regression tables', for classes): per dataset and seed a stratified 75/25 train/test split; every tree
method chooses its depth (1..12) on a stratified 2:1 split of the training part by validation accuracy and is refit
on all of it (CART all 12 depths; obliquetree and GET stop after GETClassifierCV's patience); the forest is tuned as
in the regression tables (``bench.paper.methods.tune_forest``, scored by accuracy); HistGradientBoosting keeps its
defaults, logistic regression is standardized (max_iter 2000). Categorical columns are one-hot encoded on the whole
table (the codes are fixed, no target is read). GET: ``GETClassifierCV`` with ``time_budget`` seconds for the whole
search and refit (``--budget``), dense or with k = 1, 2, 3 features per split; ``get-logistic`` with a logistic model
per leaf and depths from 0 (one logistic model), ``get-auto`` with the search choosing constant or logistic leaves
per depth (issue 52); ``get-logistic-refit`` and ``get-auto-refit`` the same with logistic leaves fitted only after a
class-share soft phase (``engine.logistic``'s switches), the variants the soft-phase training is measured against;
``get-auto-cal`` is ``get-auto`` with its probabilities tempered on the validation rows (``calibrate``) and
``get-auto-1se`` adds the one-standard-error depth rule (``depth_rule``). Each (dataset, seed, method) cell is
appended to a JSON-lines file as it finishes, so an interrupted run resumes: rerun the same command.

  python -m bench.classify --seeds 0 --budget 20              # the reduced protocol of docs/BENCHMARKS.md
  python -m bench.classify --seeds 0 1 2 --budget 60 --datasets 'pima*' sonar --methods cart get
"""

from __future__ import annotations

import argparse
import fnmatch
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, balanced_accuracy_score, log_loss
from sklearn.model_selection import train_test_split

from bench.common import DEFAULT_DATA_DIR, DEFAULT_DOC, RESULTS_DIR, CellStore, log, thread_limit, write_section
from bench.paper.methods import DEPTHS, FOREST_TREES, PATIENCE, VALIDATION_FRACTION, tune_depth, tune_forest
from get_core import ENGINE_VERSION
from get_core.baselines import count_tree_parameters

DATA_DIR = DEFAULT_DATA_DIR / "classification"
CELLS = RESULTS_DIR / "classify.cells.jsonl"
METHODS = ("cart", "rf", "hgb", "logistic", "obliquetree", "get", "get-k1", "get-k2", "get-k3", "get-logistic",
           "get-auto", "get-logistic-refit", "get-auto-refit", "get-auto-cal",
           "get-auto-1se")
#: GETClassifierCV's leaf per GET method (issue 52); the logistic ones also try depth 0, one logistic model.
GET_LEAVES = {"get-logistic": "logistic", "get-auto": "auto", "get-logistic-refit": "logistic",
              "get-auto-refit": "auto", "get-auto-cal": "auto", "get-auto-1se": "auto"}
#: The GET methods whose probabilities are tempered on the validation rows (GETClassifierCV's ``calibrate``; issue
#: 52): ``get-auto-cal`` is ``get-auto`` with it, and its cells also hold the same fit's log loss untempered;
#: ``get-auto-1se`` adds the one-standard-error depth rule (``depth_rule="one_se"``).
CALIBRATED = {"get-auto-cal", "get-auto-1se"}
DEPTH_RULES = {"get-auto-1se": "one_se"}
#: The variants of whether the soft phase trains logistic leaves (``engine.logistic``'s switch set to the value for
#: the method's fit): with a class-share soft phase, the logistic leaves fitted after it only.
SOFT_SWITCHES = {"get-logistic-refit": ("SOFT_PHASE", False), "get-auto-refit": ("SEARCH_SOFT_PHASE", False)}


def load_table(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(X float64 with categorical columns one-hot encoded, y) of a CSV whose last column is ``target``; y holds the
    labels' indices 0..C-1 in sorted order (obliquetree accepts nothing else; GET's own label handling is tested
    in tests/test_classifier.py)."""
    frame = pd.read_csv(path)
    X = pd.get_dummies(frame.drop(columns="target"), dtype=np.float64)
    return X.to_numpy(dtype=np.float64), np.unique(frame["target"].to_numpy(), return_inverse=True)[1]


def stratified_split(X, y, seed: int, test_size: float):
    return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)


def _tree_method(make, X, y, seed, patience=None):
    split = stratified_split(X, y, seed, VALIDATION_FRACTION)
    model, depth, cv = tune_depth(make, X, y, seed, patience=patience, split=split, metric=accuracy_score)
    return model, {"depth": depth, "cv": cv}


def fit_method(name: str, X, y, seed: int, budget: float):
    """(fitted model, details) of one method on the training part."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    if name == "cart":
        model, details = _tree_method(lambda d: DecisionTreeClassifier(max_depth=d, random_state=seed), X, y, seed)
        return model, {**details, "parameters": count_tree_parameters(model), "features_per_split": 1}
    if name == "rf":
        fitted = tune_forest(RandomForestClassifier, stratified_split(X, y, seed, VALIDATION_FRACTION), X, y, seed,
                             accuracy_score)
        return fitted.model, {**fitted.details, "depth": fitted.depth, "parameters": fitted.n_parameters,
                              "features_per_split": 1}
    if name == "hgb":
        return HistGradientBoostingClassifier(random_state=seed).fit(X, y), {}
    if name == "logistic":
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
        return model, {"parameters": int(np.size(model[-1].coef_) + np.size(model[-1].intercept_))}
    if name == "obliquetree":
        from obliquetree import Classifier

        model, details = _tree_method(lambda d: Classifier(max_depth=d, random_state=seed), X, y, seed, PATIENCE)
        return model, details
    from get_core import GETClassifierCV
    from get_core.engine import logistic as logistic_leaves

    leaf = GET_LEAVES.get(name, "constant")
    k = None if name == "get" or leaf != "constant" else int(name.removeprefix("get-k"))
    depths = DEPTHS if leaf == "constant" else (0, *DEPTHS)
    switch, value = SOFT_SWITCHES.get(name, ("SOFT_PHASE", logistic_leaves.SOFT_PHASE))
    default = getattr(logistic_leaves, switch)
    setattr(logistic_leaves, switch, value)
    try:
        model = GETClassifierCV(depths=depths, leaf=leaf, time_budget=budget, max_split_features=k,
                                random_state=seed, calibrate=name in CALIBRATED,
                                depth_rule=DEPTH_RULES.get(name, "best")).fit(X, y)
    finally:
        setattr(logistic_leaves, switch, default)
    tree = model.tree_
    return model, {"depth": int(model.best_depth_), "leaf": model.best_leaf_,
                   "parameters": int(tree.n_nonzero_parameters),
                   "features_per_split": int(tree.split_widths.max()), "train_accuracy": tree.meta["train_accuracy"],
                   "cv": model.cv_results_, "temperature": model.temperature_}


def run_cell(path: Path, name: str, seed: int, budget: float) -> dict:
    X, y = load_table(path)
    X_tr, X_te, y_tr, y_te = stratified_split(X, y, seed, 0.25)
    start = time.perf_counter()
    with thread_limit(1):
        model, details = fit_method(name, X_tr, y_tr, seed, budget)
    seconds = time.perf_counter() - start
    pred = model.predict(X_te)
    proba = model.predict_proba(X_te)
    labels = np.arange(proba.shape[1])
    if "temperature" in details:  # the same fit's log loss before tempering, paired exactly
        from get_core.estimator import with_temperature

        untempered = with_temperature(model.tree_, 1.0 / details["temperature"]).predict_proba(X_te)
        details["log_loss_untempered"] = float(log_loss(y_te, untempered, labels=labels))
    return {"accuracy": 100 * accuracy_score(y_te, pred), "balanced_accuracy": 100 * balanced_accuracy_score(y_te, pred),
            "log_loss": float(log_loss(y_te, proba, labels=labels)), "fit_seconds": seconds, **details}


def friedman_ranks(table: pd.DataFrame) -> pd.Series:
    """Mean rank of each method (columns) over datasets (rows) by accuracy, 1 = best, ties share their mean rank."""
    return table.rank(axis=1, ascending=False).mean(axis=0)


def report(records: list[dict], methods: list[str], budget: float, seeds: list[int]) -> str:
    frame = pd.DataFrame(records)
    frame = frame[frame["method"].isin(methods)]
    mean = frame.groupby(["dataset", "method"]).mean(numeric_only=True)
    accuracy = mean["accuracy"].unstack()[methods]
    complete = accuracy.dropna()
    lines = [f"Protocol: seeds {', '.join(map(str, seeds))}; GET `time_budget={budget:g}` s per GETClassifierCV fit "
             f"(search and refit); engine version {ENGINE_VERSION}. Test accuracy (%), mean over seeds:", "",
             "| dataset | " + " | ".join(methods) + " |", "|---|" + "---:|" * len(methods)]
    for dataset, row in accuracy.iterrows():
        lines.append(f"| {dataset} | " + " | ".join("–" if np.isnan(v) else f"{v:.2f}" for v in row) + " |")
    lines.append(f"| **average ({len(complete)} complete)** | " +
                 " | ".join(f"**{complete[m].mean():.2f}**" for m in methods) + " |")
    ranks = friedman_ranks(complete)
    lines.append("| Friedman mean rank | " + " | ".join(f"{ranks[m]:.2f}" for m in methods) + " |")
    lines += ["", "Averages over the complete datasets (same rows for every method):", "",
              "| method | accuracy | balanced accuracy | log loss | fit seconds | parameters | features per split |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    kept = mean.reset_index()
    kept = kept[kept["dataset"].isin(complete.index)]
    for m in methods:
        rows = kept[kept["method"] == m]

        def avg(col, fmt):
            return "–" if col not in rows or rows[col].isna().all() else format(rows[col].mean(), fmt)
        lines.append(f"| {m} | {avg('accuracy', '.2f')} | {avg('balanced_accuracy', '.2f')} | "
                     f"{avg('log_loss', '.3f')} | {avg('fit_seconds', '.1f')} | {avg('parameters', ',.0f')} | "
                     f"{avg('features_per_split', '.1f')} |")
    return "\n".join(lines + advice(accuracy))


def advice(accuracy: pd.DataFrame, data_dir: Path = DATA_DIR) -> list[str]:
    """Per table, whether the single tree is the right tool (issue 52): the run's last GET method against the forest
    and against the better of CART and logistic regression (the issue's per-table floor is that minus 1 point),
    and ``get_core.views.advice``'s verdict in words (with the table's facts where ``data_dir`` holds it); [] when
    the run lacks them."""
    from get_core.views.advice import advise, table_facts

    gets = [m for m in accuracy.columns if m.startswith("get")]
    if not gets or not {"rf", "cart", "logistic"} <= set(accuracy.columns):
        return []
    get = gets[-1]
    lines = ["", f"Per table, {get} against the forest and the better of CART and logistic regression (accuracy "
             "points):", "", f"| dataset | {get} | rf | max(cart, logistic) | verdict |", "|---|---:|---:|---:|---|"]
    for dataset, row in accuracy.dropna(subset=[get, "rf", "cart", "logistic"]).iterrows():
        path = data_dir / f"{dataset}.csv"
        # the labels as written (load_table's are their indices, which would all look ordinal)
        facts = (table_facts(load_table(path)[0], pd.read_csv(path)["target"], is_classifier=True)
                 if path.exists() else None)
        scores = {"get": row[get], "forest": row["rf"], "hgb": row.get("hgb"), "cart": row["cart"],
                  "logistic": row["logistic"]}
        lines.append(f"| {dataset} | {row[get]:.2f} | {row['rf']:.2f} | {max(row['cart'], row['logistic']):.2f} | "
                     f"{advise(scores, facts)} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.classify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--datasets", nargs="+", default=["*"], help="file name patterns (without .csv)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--budget", type=float, default=20.0, help="GET's time_budget per GETClassifierCV fit")
    parser.add_argument("--cells", type=Path, default=CELLS)
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC)
    parser.add_argument("--no-doc", action="store_true", help="print the table instead of writing the doc section")
    args = parser.parse_args(argv)
    paths = [p for p in sorted(args.data_dir.glob("*.csv")) if any(fnmatch.fnmatch(p.stem, d) for d in args.datasets)]
    store = CellStore(args.cells)
    done = store.load(("accuracy",))
    for seed in args.seeds:
        for path in paths:
            for name in args.methods:
                key = f"{path.stem}|{seed}|{name}|{args.budget:g}|v{ENGINE_VERSION}"
                if key in done:
                    continue
                log(f"{path.stem} seed {seed} {name}")
                record = {"key": key, "dataset": path.stem, "seed": seed, "method": name, "budget": args.budget,
                          **run_cell(path, name, seed, args.budget)}
                store.append(record)
                done[key] = record
                log(f"  accuracy {record['accuracy']:.2f} in {record['fit_seconds']:.1f} s")
    records = [r for r in done.values() if r["budget"] == args.budget and r["seed"] in args.seeds]
    table = report(records, args.methods, args.budget, args.seeds)
    if args.no_doc:
        print(table)
    else:
        write_section(args.doc, "classify-table", table, "## Classification: accuracy against the baselines")
        print(table)
