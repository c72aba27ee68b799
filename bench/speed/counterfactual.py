"""Recourse a reviewer can act on (issue 49): do the answers of ``get_core.counterfactual`` hold when typed back as
the app shows them, and how long do three of them take on deep trees with directions and whole numbers?

Typed back: on each shared regression table (``--data-dir``) and class table (its ``classification/``), a GET tree
of each ``--depths`` is fitted on at most ``--train-rows`` rows (75%, seed 0) with a small budget (``--starts``
starts, ``--epochs`` epochs, no polish: the answers' holding does not depend on how good the tree is), through
the app's own encoding (a categorical column one-hot, switching whole). For ``--rows`` test rows each, three answers
(``n=3``, the training rows as reference, whole-number columns kept whole as the app does) to the goal the app
starts at (``what_if.default_goal``: another class; for regression "at least" a value between the row's prediction
and the next leaf's). Each shown answer is typed back: the row's raw columns, each changed one set to the text the
page shows (``what_if.value_text``; a category to its level), encoded by the run's encoding and predicted. Also
counted: answers in leaves of fewer than ``MIN_SUPPORT`` training rows (there should be none) and rows with no
answer (the sentence's first words).

Speed: random dense oblique trees (``bench.studies.counterfactual.routed_tree``) of depth 8 and 12 over 50 features,
ten of them whole numbers, ten that may only increase and ten only decrease; goal: the upper tenth of the tree's
predictions; ``n=3``; median and largest seconds over ``--queries`` rows below it.

    python -m bench.speed.counterfactual                         # both parts, print the tables
    python -m bench.speed.counterfactual --part typed --datasets abalone banknote --rows 5
    python -m bench.speed.counterfactual --part speed --queries 10 --jobs 4
"""
from __future__ import annotations

import fnmatch
import platform
import statistics
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import DEFAULT_DATA_DIR, command_parser, find_datasets, int_in
from bench.studies.counterfactual import routed_tree
from get_core.data.encoding import DataSpec, prepare
from get_core.model.counterfactual import MIN_SUPPORT, CounterfactualError, counterfactual
from get_core.views import what_if

#: Issue 49's targets: depth -> seconds for three answers (50 features, directions, whole numbers).
TARGETS = {8: 1.0, 12: 10.0}


# ---------------------------------------------------------------------------------------------- typed back
def typed_cell(path: str, task: str, depth: int, rows: int, train_rows: int, starts: int, epochs: int) -> dict:
    """One table at one depth: answers shown, answers that hold typed back, answers on too few rows, refusals."""
    from get_core import GETClassifier, GETRegressor  # loads torch: only here

    frame = pd.read_csv(path)
    spec = DataSpec(target="target", features=tuple(c for c in frame.columns if c != "target"),
                    categorical=tuple(c for c in frame.columns if c != "target" and frame[c].dtype == object),
                    task=task)
    order = np.random.default_rng(0).permutation(len(frame))
    test_ids, train_ids = order[:rows], order[rows:rows + train_rows]
    prepared = prepare(frame, spec, fit_rows=train_ids)
    encoding = prepared.encoding
    X = pd.DataFrame(prepared.X, columns=list(encoding.feature_names))
    y = prepared.y
    make = GETClassifier if task == "classification" else GETRegressor
    model = make(depth=depth, n_starts=starts, n_epochs=epochs, polish=False, random_state=0, device="cpu")
    with warnings.catch_warnings():  # a table's far outliers: the fit says so, the answers' holding is unaffected
        warnings.simplefilter("ignore", UserWarning)
        model.fit(X.iloc[train_ids], y[train_ids])
    tree, X_train = model.tree_, prepared.X[train_ids]
    shown = held = thin = answered = 0
    refusals: dict[str, int] = {}
    seconds = []
    for i in test_ids:
        x, raw = prepared.X[i], frame.iloc[[i]].drop(columns="target")
        start = what_if.default_goal(tree, x)
        goal = what_if.regression_goal(*start) if not tree.is_classifier else start
        whole = what_if.whole_columns(tree, x, X_train, encoding)
        began = time.perf_counter()
        try:
            answers = counterfactual(tree, x, goal, encoding=encoding, reference=X_train, integers=whole, n=3)
        except CounterfactualError as exc:
            words = " ".join(str(exc).split()[:3])
            refusals[words] = refusals.get(words, 0) + 1
            continue
        finally:
            seconds.append(time.perf_counter() - began)
        answered += 1
        for answer in answers:
            shown += 1
            typed = raw.copy()
            for change in answer.changes:
                typed[change.feature] = (change.needed if change.change is None
                                         else float(what_if.value_text(change.needed, change.step)))
            value = tree.predict(encoding.transform(typed))[0]
            held += bool(value == goal if tree.is_classifier else
                         (goal[0] is None or value >= goal[0]) and (goal[1] is None or value <= goal[1]))
            thin += answer.support.rows is not None and answer.support.rows < MIN_SUPPORT
    return {"table": Path(path).stem, "task": task, "depth": depth, "rows": len(test_ids), "answered": answered,
            "shown": shown, "held": held, "thin": thin, "refusals": refusals,
            "median_s": statistics.median(seconds) if seconds else float("nan")}


def typed_table(cells: list[dict], args) -> str:
    lines = [f"GET trees fitted on at most {args.train_rows} rows per table ({args.starts} start(s), {args.epochs} "
             f"epochs, no polish, seed 0); {args.rows} test rows each; three answers per row to the app's default "
             "goal; answers typed back as shown.", "",
             "| table | task | depth | rows answered | answers shown | held typed back | on < "
             f"{MIN_SUPPORT} rows | median s per row (3 answers) | no answer (first words: rows) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in cells:
        said = "; ".join(f"{k}: {v}" for k, v in c["refusals"].items())
        lines.append(f"| {c['table']} | {c['task']} | {c['depth']} | {c['answered']} / {c['rows']} | {c['shown']} | "
                     f"{c['held']} | {c['thin']} | {c['median_s']:.3f} | {said} |")
    shown, held = sum(c["shown"] for c in cells), sum(c["held"] for c in cells)
    thin = sum(c["thin"] for c in cells)
    lines += ["", f"- answers that hold typed back: {held} of {shown} ({100 * held / max(shown, 1):.1f}%; target "
                  f"100%): {'met' if held == shown else 'NOT met'}",
              f"- answers in leaves under {MIN_SUPPORT} training rows: {thin} (target 0): "
              f"{'met' if thin == 0 else 'NOT met'}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- speed
def speed_cell(depth: int, p: int, queries: int, seed: int = 0) -> dict:
    """Three answers per row on a random tree: 10 whole-number features, 10 increase-only, 10 decrease-only."""
    tree, X = routed_tree(depth, p, seed, whole=10)
    names = tree.feature_names
    directions = {**{names[j]: "increase" for j in range(10, 20)}, **{names[j]: "decrease" for j in range(20, 30)}}
    predictions = tree.predict(X)
    goal = (float(np.quantile(predictions, 0.9)), None)
    seconds, programs, found = [], [], []
    for x in X[predictions < goal[0]][:queries]:
        began = time.perf_counter()
        answers = counterfactual(tree, x, goal, n=3, directions=directions, integers=names[:10], reference=X)
        seconds.append(time.perf_counter() - began)
        programs.append(answers[0].programs)
        found.append(len(answers))
        for answer in answers:
            if not (answer.prediction >= goal[0] and np.all(answer.x[:10] == np.round(answer.x[:10]))
                    and np.all(answer.x[10:20] >= x[10:20]) and np.all(answer.x[20:30] <= x[20:30])):
                raise SystemExit(f"an answer broke its constraints (depth {depth}): a bug")
    return {"depth": depth, "p": p, "queries": len(seconds), "median": statistics.median(seconds),
            "max": max(seconds), "programs": statistics.median(programs), "answers": statistics.median(found)}


def speed_table(cells: list[dict]) -> str:
    lines = ["Random dense trees, 50 features (10 whole numbers, 10 increase-only, 10 decrease-only), three answers "
             "in distinct leaves, goal the upper tenth; "
             f"{platform.processor() or platform.machine()}, wall seconds in this process.", "",
             "| depth | features | rows | median s | max s | programs (median) | answers (median) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        lines.append(f"| {c['depth']} | {c['p']} | {c['queries']} | {c['median']:.3f} | {c['max']:.3f} | "
                     f"{c['programs']:g} | {c['answers']:g} |")
    lines.append("")
    for c in cells:
        if c["depth"] in TARGETS:
            limit = TARGETS[c["depth"]]
            lines.append(f"- depth {c['depth']}: under {limit:g} s for three answers: "
                         f"{'met' if c['median'] < limit else 'NOT met'} (median {c['median']:.3f} s, largest "
                         f"{c['max']:.3f} s)")
    return "\n".join(lines)


def _tables(data_dir: Path, patterns: list[str]) -> list[tuple[str, str]]:
    """(path, task) of the regression tables in ``data_dir`` and the class tables in its ``classification/`` whose
    names match ``patterns`` (all when empty)."""
    found = [(str(f), task) for directory, task in ((data_dir, "regression"),
                                                     (data_dir / "classification", "classification"))
             for f in find_datasets(directory)
             if not patterns or any(fnmatch.fnmatch(f.stem, p.removesuffix(".csv")) for p in patterns)]
    if not found:
        raise SystemExit(f"--datasets {' '.join(patterns)}: no table in {data_dir} or its classification/ matches")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.speed.counterfactual")
    parser.add_argument("--part", choices=["typed", "speed", "both"], default="both")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", nargs="*", default=[], help="table names or globs (default: all)")
    parser.add_argument("--depths", type=int_in(1, 12), nargs="+", default=[5, 8])
    parser.add_argument("--rows", type=int_in(1), default=20, help="test rows per table (default 20)")
    parser.add_argument("--train-rows", type=int_in(20), default=2000, help="training rows per table (default 2000)")
    parser.add_argument("--starts", type=int_in(1), default=1)
    parser.add_argument("--epochs", type=int_in(1), default=30)
    parser.add_argument("--speed-depths", type=int_in(1, 12), nargs="+", default=[8, 12])
    parser.add_argument("--queries", type=int_in(1), default=5, help="rows per speed cell (default 5)")
    parser.add_argument("--jobs", type=int_in(1), default=1, help="processes for the typed-back cells")
    args = parser.parse_args(argv)
    if args.part in ("typed", "both"):
        tables = _tables(args.data_dir, args.datasets)
        jobs = [(f, t, d, args.rows, args.train_rows, args.starts, args.epochs) for f, t in tables
                for d in args.depths]
        cells = []
        with ProcessPoolExecutor(args.jobs) as pool:
            for cell in pool.map(typed_cell, *zip(*jobs)):
                cells.append(cell)
                print(f"{cell['table']}, depth {cell['depth']}: {cell['held']} of {cell['shown']} answers hold typed "
                      f"back, {cell['answered']} of {cell['rows']} rows answered", flush=True)
        print(typed_table(cells, args), flush=True)
    if args.part in ("speed", "both"):
        print(speed_table([speed_cell(d, 50, args.queries) for d in args.speed_depths]))


if __name__ == "__main__":
    main()
