"""Other defaults for the app's default run, paired: each variant's GET fit on the same split, one after another.

Why: ``bench.studies.app_default`` runs the whole app run (GET, its counterpart, the uncut baselines), so a variant
measured in another run met another load, and a time-budgeted GET fit on the shared 2-core machine buys less work
than on a free one while the baselines do not. Here every variant of a (dataset, seed) cell is fitted in one process,
on the split, encoding and fit function of the worker (``runs.training``: ``split_rows``, ``prepare``, ``fit_tree``),
in an order rotated by seed, so that the comparison between variants is paired. With ``--cpu-clock`` (the default)
torch runs one thread and the budget's clock counts that thread's seconds on a core however long it waited
(``budget.STRETCH`` lifted for the fit), so "10 s" is 10 CPU seconds at any load: the variants compare, but the
figures are those of a one-thread fit (the app's runs use every core). The forest of each cell is read from an app
default run's cells (``--forest``), whose split is the same.

A variant is a name from ``VARIANTS``: GETConfig overrides of the app's defaults (``APP_DEFAULTS``), and for the
linear leaves' rule (``engine.leaves.MIN_LEAF_ROWS`` and ``SLOPE_ROWS_PER_PARAMETER`` for that fit). Every base fit
also records the test R2 of its own splits with each of ``LEAF_RULES`` refitting its leaves (nothing retrained: the
rule's direct effect, free of the race's noise).

Examples:
  python -m bench.studies.app_variants --datasets abalone puma8NH --seeds 0 --variants base depth4 rows_30
  python -m bench.studies.app_variants --report
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd

from bench.common import DEFAULT_DATA_DIR, RESULTS_DIR, CellStore, command_parser, find_datasets
from get_core import budget
from get_core.config import ALLOWED, APP_DEFAULTS, ENGINE_VERSION, GETConfig
from get_core.data.encoding import DataSpec, prepare, usable_rows
from get_core.metrics import scores
from get_core.runs.spec import split_rows
from get_core.runs.training import fit_tree

RESULTS = RESULTS_DIR / "app-default-variants.jsonl"
FOREST = RESULTS_DIR / "app-default-fair-idle.jsonl"


class Variant(NamedTuple):
    """A variant of the app's default run: GETConfig overrides of ``APP_DEFAULTS``; the linear leaves' rule for the
    fit (``leaves.MIN_LEAF_ROWS``, ``leaves.SLOPE_ROWS_PER_PARAMETER``), None for the engine's; its seconds as a
    multiple of the study's budget; and ``search``: the app's "choose for me" depth (``GETRegressorCV`` over depths
    1 to the config's depth, as the Train page asks it, ``runs.search``) instead of one fit at that depth."""

    overrides: dict[str, Any]
    rule: tuple[int, int] | None = None
    budget_scale: float = 1.0
    search: bool = False


VARIANTS: dict[str, Variant] = {
    "base": Variant({}),
    "depth4": Variant({"depth": 4}),
    "depth6": Variant({"depth": 6}),
    "k2": Variant({"max_split_features": 2}),
    "k3": Variant({"max_split_features": 3}),
    "k5": Variant({"max_split_features": 5}),
    "depth6_k3": Variant({"depth": 6, "max_split_features": 3}),
    "robust": Variant({"scaling": "robust"}),
    "no_polish": Variant({"polish": False}),
    "ols": Variant({"linear_leaves": "ols"}),
    "rows_20": Variant({}, (20, 1)),
    "rows_30": Variant({}, (30, 1)),
    "rows_50": Variant({}, (50, 1)),
    "slope_2": Variant({}, (10, 2)),
    "slope_3": Variant({}, (10, 3)),
    "slope_5": Variant({}, (10, 5)),
    "rows_20_slope_3": Variant({}, (20, 3)),
    "rows_30_slope_3": Variant({}, (30, 3)),
    "starts_20": Variant({"n_starts": 20}),
    "starts_5": Variant({"n_starts": 5}),
    "budget_x2": Variant({}, budget_scale=2.0),
    "cv": Variant({}, search=True),
    "cv_x2": Variant({}, budget_scale=2.0, search=True),
}

#: Linear-leaf rules tried on each base tree's own splits (its leaves refitted, nothing retrained): name ->
#: (``leaves.MIN_LEAF_ROWS``, ``leaves.SLOPE_ROWS_PER_PARAMETER``). "engine" (the engine's own) checks the refit.
LEAF_RULES: dict[str, tuple[int, int]] = {
    "engine": (10, 1), "rows_20": (20, 1), "rows_30": (30, 1), "rows_50": (50, 1), "slope_2": (10, 2),
    "slope_3": (10, 3), "slope_5": (10, 5), "rows_20_slope_3": (20, 3), "rows_30_slope_3": (30, 3),
}

#: The table whose single fits vary most (sd 4-11 points, results/app-default-variants.md): the report also gives
#: each variant's mean without it.
NOISIEST = "gas_turbine_co_2015"
#: Robust clamps of the linear leaves tried on each base tree (``clamp_rules``): name -> Tukey's c.
CLAMPS: dict[str, float] = {"fence_1.5": 1.5, "fence_3": 3.0, "fence_6": 6.0}


@contextlib.contextmanager
def cpu_clock(enabled: bool) -> Iterator[None]:
    """Within it (when ``enabled``), torch runs one thread and a budgeted fit's clock counts only that thread's
    seconds on a core, however long it waited: the floor of 1 / ``budget.STRETCH`` of the wall clock is lifted."""
    import torch
    stretch, threads = budget.STRETCH, torch.get_num_threads()
    if enabled:
        budget.STRETCH = 1e9
        torch.set_num_threads(1)
    try:
        yield
    finally:
        budget.STRETCH = stretch
        torch.set_num_threads(threads)


@contextlib.contextmanager
def leaf_rule(rows: int | None, per_parameter: int | None = None) -> Iterator[None]:
    """The linear leaves' ``MIN_LEAF_ROWS`` and ``SLOPE_ROWS_PER_PARAMETER`` for one fit (None: the engine's)."""
    from get_core.engine import leaves  # torch loads here, not when the report is read
    engine = leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER
    leaves.MIN_LEAF_ROWS = engine[0] if rows is None else rows
    leaves.SLOPE_ROWS_PER_PARAMETER = engine[1] if per_parameter is None else per_parameter
    try:
        yield
    finally:
        leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER = engine


def refit_rules(tree: Any, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray) -> dict:
    """Test R2 of ``tree``'s own splits with each of ``LEAF_RULES`` refitting its leaves on the training rows."""
    from get_core.engine.leaves import refit_tree_leaves
    out = {}
    for name, (rows, per_parameter) in LEAF_RULES.items():
        other = copy.deepcopy(tree)
        with leaf_rule(rows, per_parameter):
            refit_tree_leaves(other, X_train, (y_train - other.y_min) / other.y_scale)
        out[name] = scores(y_test, other.predict(X_test))[0]
    return out


def search_tree(X_train: np.ndarray, y_train: np.ndarray, config: GETConfig,
                feature_names: list[str]) -> tuple[Any, dict]:
    """The app's "choose for me" depth on the config (``runs.search.search_fit`` without its channel): its refit
    tree and the chosen depth."""
    from get_core.estimator import GETRegressorCV, estimator_params
    depths = list(range(ALLOWED["depth"].low, config.depth + 1))
    cv = GETRegressorCV(**{**estimator_params(GETRegressorCV, config), "depths": depths,
                           "max_split_features": config.max_split_features})
    cv.fit(pd.DataFrame(X_train, columns=feature_names), y_train)
    return cv.tree_, {"chosen_depth": int(cv.best_depth_)}


def clamp_rules(tree: Any, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                y_test: np.ndarray) -> dict:
    """Test R2 of ``tree`` with each of ``CLAMPS`` narrowing its linear leaves' clamp (the leaf's training target
    range) to Tukey's fences of the leaf's training targets, [Q1 - c IQR, Q3 + c IQR]: a line fitted through one
    extreme target of a small leaf then cannot hand that target to a new row (nothing retrained)."""
    from get_core.model import routing
    leaf = routing.leaves(tree, X_train) - tree.n_leaves
    y_scaled = (y_train - tree.y_min) / tree.y_scale
    sloped = np.any(tree.leaf_coefs != 0, axis=1)
    out = {}
    for name, c in CLAMPS.items():
        other = copy.deepcopy(tree)
        for i in np.flatnonzero(sloped):
            q1, q3 = np.percentile(y_scaled[leaf == i], [25, 75])
            other.leaf_lower[i] = max(other.leaf_lower[i], q1 - c * (q3 - q1))
            other.leaf_upper[i] = min(other.leaf_upper[i], q3 + c * (q3 - q1))
        out[name] = scores(y_test, other.predict(X_test))[0]
    return out


def run_cell(path: Path, seed: int, variants: Sequence[str], cpu: bool,
             seconds: float | None = APP_DEFAULTS.time_budget) -> list[dict]:
    """Every variant's GET fit on the app run's split of ``path`` for ``seed``, ``seconds`` each, in an order
    rotated by seed."""
    frame = pd.read_csv(path)
    spec = DataSpec(target="target", features=tuple(c for c in frame.columns if c != "target"))
    rows = usable_rows(frame, spec)
    train_idx, test_idx = split_rows(len(rows), 0.25, seed)
    prepared = prepare(frame, spec, fit_rows=train_idx)
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    order = list(variants)[seed % len(variants):] + list(variants)[:seed % len(variants)]
    records = []
    for name in order:
        variant = VARIANTS[name]
        budget_s = None if seconds is None else seconds * variant.budget_scale
        config = replace(APP_DEFAULTS, **{"time_budget": budget_s, **variant.overrides, "random_state": seed})
        load_before = os.getloadavg()[0]
        wall, cpu_start = time.perf_counter(), time.process_time()
        with cpu_clock(cpu), leaf_rule(*(variant.rule or (None, None))):
            if variant.search:
                tree, chosen = search_tree(X_train, y_train, config, prepared.feature_names)
            else:
                tree, chosen = fit_tree(X_train, y_train, config, prepared.feature_names, None), {}
        wall, cpu_s = time.perf_counter() - wall, time.process_time() - cpu_start
        ran = tree.meta["config"]
        records.append({"dataset": path.stem, "seed": seed, "variant": name, "engine": ENGINE_VERSION,
                        "cpu_clock": cpu, "time_budget": budget_s, "test_r2": scores(y_test, tree.predict(X_test))[0],
                        "train_r2": scores(y_train, tree.predict(X_train))[0], "wall_s": wall, "cpu_s": cpu_s,
                        "n_starts": ran["n_starts"], "n_epochs": ran["n_epochs"], "load_before": load_before,
                        "load_after": os.getloadavg()[0], **chosen,
                        **({"leaf_rules": refit_rules(tree, X_train, y_train, X_test, y_test),
                            "clamps": clamp_rules(tree, X_train, y_train, X_test, y_test)}
                           if config.leaf == "linear" and config.linear_leaves == "gcv" else {})})
    return records


def forest_scores(path: Path) -> dict[tuple[str, int], float]:
    """(dataset, seed) -> the 100-tree forest's test R2 in an app default run's cells (the same split)."""
    return {(r["dataset"], r["seed"]): r["forest_r2"] for r in CellStore(path).load().values()
            if not r.get("overrides")}


def report(records: list[dict], forest: dict[tuple[str, int], float]) -> str:
    """Per dataset, each variant's mean test R2 minus the base's (paired), and the base's against the forest."""
    batches: dict[str, dict[str, dict]] = {}
    for r in records:
        batches.setdefault(f"{r['dataset']}|{r['seed']}|{r['batch']}", {})[r["variant"]] = r
    by: dict[tuple[str, int], list[dict[str, dict]]] = {}
    for batch in batches.values():
        if "base" in batch:
            by.setdefault((batch["base"]["dataset"], batch["base"]["seed"]), []).append(batch)
    names = [name for name in VARIANTS if name != "base" and any(r["variant"] == name for r in records)]
    lines = ["Test R2 in points; each variant minus the base fitted beside it (same split, seed and process).", "",
             "| dataset | seeds | base | base - forest | " + " | ".join(names) + " |",
             "|---|---|---:|---:|" + "---:|" * len(names)]
    gaps: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    to_forest_all: list[float] = []
    for dataset in sorted({d for d, _ in by}):
        cells = [(s, v) for (d, s), vs in sorted(by.items()) if d == dataset for v in vs]
        base = [100 * v["base"]["test_r2"] for _, v in cells]
        to_forest = [100 * (v["base"]["test_r2"] - forest[(dataset, s)]) for s, v in cells if (dataset, s) in forest]
        to_forest_all += to_forest
        row = [dataset, " ".join(sorted({str(s) for s, _ in cells})), f"{np.mean(base):.2f}",
               f"{np.mean(to_forest):+.2f}" if to_forest else "-"]
        for name in names:
            diffs = [100 * (v[name]["test_r2"] - v["base"]["test_r2"]) for _, v in cells if name in v]
            gaps[name][dataset] = diffs
            row.append(f"{np.mean(diffs):+.2f}" if diffs else "-")
        lines.append("| " + " | ".join(row) + " |")
    forest_mean = f"{np.mean(to_forest_all):+.2f}" if to_forest_all else "-"
    pooled = [[d for diffs in g.values() for d in diffs] for g in gaps.values()]
    lines.append(f"| **mean** | | | {forest_mean} | " + " | ".join(f"**{np.mean(g):+.2f}** ({len(g)})" if g else "-"
                                                  for g in pooled) + " |")
    lines += ["", *summary(gaps), "", *posthoc_report(
        [r for r in records if "leaf_rules" in r], "leaf_rules",
        "Leaf rules on the fitted trees' own splits (leaves refitted, nothing retrained), minus the engine's rule:")]
    lines += ["", *posthoc_report(
        [r for r in records if "clamps" in r and r["variant"] == "base"], "clamps",
        "Robust clamps of the base trees' linear leaves (Tukey's fences of each leaf's training targets, nothing "
        "retrained), minus the fit:")]
    cpu = {name: np.median([r["cpu_s"] for r in records if r["variant"] == name]) for name in ["base", *names]}
    lines.append("\nMedian CPU s per fit: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()) +
                 f"; load {min(r['load_before'] for r in records):.1f}-{max(r['load_before'] for r in records):.1f}.")
    return "\n".join(lines)


def posthoc_report(records: list[dict], field: str, title: str) -> list[str]:
    """Per dataset, the test R2 of each rule in the records' ``field`` (``leaf_rules`` or ``clamps``: the fitted
    trees changed after the fit, nothing retrained) minus the fit's own (its ``engine`` rule's refit, where recorded),
    in points."""
    if not records:
        return []
    names = [n for n in records[0][field] if n != "engine"]

    def own(r: dict) -> float:
        return r[field].get("engine", r["test_r2"])

    lines = [title, "", "| dataset | trees | fit | " + " | ".join(names) + " |", "|---|---:|---:|" + "---:|" * len(names)]
    for dataset in sorted({r["dataset"] for r in records}):
        rows = [r for r in records if r["dataset"] == dataset]
        lines.append(f"| {dataset} | {len(rows)} | {100 * np.mean([own(r) for r in rows]):.2f} | " + " | ".join(
            f"{100 * np.mean([r[field][n] - own(r) for r in rows]):+.2f}" for n in names) + " |")
    lines.append(f"| **mean** | {len(records)} | | " + " | ".join(
        f"**{100 * np.mean([r[field][n] - own(r) for r in records]):+.2f}**" for n in names) + " |")
    return lines


def summary(gaps: dict[str, dict[str, list[float]]]) -> list[str]:
    """Per variant, its paired differences (dataset -> points) over all cells: mean, standard error, median, how
    many above the base, and the mean and standard error without ``NOISIEST``."""
    lines = ["| variant | pairs | mean | se | median | above base | mean without " + NOISIEST + " | se |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, by_dataset in gaps.items():
        every = np.array([d for diffs in by_dataset.values() for d in diffs])
        rest = np.array([d for dataset, diffs in by_dataset.items() if dataset != NOISIEST for d in diffs])
        if len(every) == 0:
            continue
        lines.append(f"| {name} | {len(every)} | {every.mean():+.2f} | {_se(every):.2f} | {np.median(every):+.2f} | "
                     f"{int((every > 0).sum())} | {rest.mean() if len(rest) else float('nan'):+.2f} | "
                     f"{_se(rest):.2f} |")
    return lines


def _se(values: np.ndarray) -> float:
    """Standard error of the mean (NaN under two values)."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")


def main(argv: Sequence[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.app_variants")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", nargs="*", default=None, help="names or globs (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=["base"], choices=list(VARIANTS))
    parser.add_argument("--wall-clock", action="store_true",
                        help="budget on the engine's own clock with torch's default threads, as the app does")
    parser.add_argument("--budget", type=float, default=APP_DEFAULTS.time_budget,
                        help="each fit's seconds (default: the app's %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--forest", type=Path, default=FOREST, help="an app default run's cells (the forest's R2)")
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")
    args = parser.parse_args(argv)
    store = CellStore(args.out)
    if args.report:
        print(report(list(store.load().values()), forest_scores(args.forest)))
        return
    variants = ["base", *[v for v in args.variants if v != "base"]]  # every cell pairs with its base
    done = store.load()
    for path in find_datasets(args.data_dir, args.datasets):
        for seed in args.seeds:
            key = f"{path.stem}|{seed}|{ENGINE_VERSION}|{'wall' if args.wall_clock else 'cpu'}" + (
                "" if args.budget == APP_DEFAULTS.time_budget else f"|{args.budget:g}s")
            todo = [v for v in variants if not any(k.startswith(f"{key}|{v}|") for k in done)]
            if not todo:
                continue
            batch = time.strftime("%Y-%m-%dT%H:%M:%S")  # a variant pairs with the base of its own batch
            for record in run_cell(path, seed, ["base", *[v for v in todo if v != "base"]], not args.wall_clock,
                                   args.budget):
                store.append({"key": f"{key}|{record['variant']}|{batch}", "batch": batch, **record})
                print(f"{path.stem} seed {seed} {record['variant']}: test {record['test_r2']:.4f} train "
                          f"{record['train_r2']:.4f} cpu {record['cpu_s']:.1f} s wall {record['wall_s']:.1f} s "
                          f"({record['n_starts']} x {record['n_epochs']})", flush=True)


if __name__ == "__main__":
    main()
