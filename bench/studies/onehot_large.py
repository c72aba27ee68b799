"""A large one-hot table at the default budget (issue 52, item 4): 50,000 rows of 10 numeric columns and 9 categorical
ones of 10 levels, one-hot encoded to 90 columns (100 inputs), whose class is a planted depth-2 tree, with 10% of the
labels flipped at random: the Bayes accuracy is 90%. Two structures: ``oblique`` (each split a dense hyperplane of
the numbers plus one category's effect) and ``axis`` (each split one number's threshold or one category's half of
its levels: CART's own kind, where a single oblique tree has nothing to gain and must not lose).

Methods, on the same stratified 75/25 split, one thread each (as ``bench.classify`` fits them): ``cart`` (depth-tuned
CART, ``bench.classify``'s), ``get`` (``GETClassifier(time_budget=20)``, its defaults otherwise) and ``get-cv``
(``GETClassifierCV(time_budget=20)``, ``bench.classify``'s ``get``). Each record: test accuracy, fit seconds, and for
GET the race's plan (starts, epochs, checkpoints), its CART start's rows and the fit's cpu_share. The target: each GET
at least CART + 1 point.

Usage: nice python -m bench.studies.onehot_large --seeds 0
       python -m bench.studies.onehot_large --report
Cells go to a JSON-lines file and are skipped on a rerun.
"""

from __future__ import annotations

import os
import time
from functools import partial

import numpy as np
from sklearn.metrics import accuracy_score

from bench.classify.run import fit_method, stratified_split
from bench.common import RESULTS_DIR, add_cell_options, command_parser, fill_cells, thread_limit
from get_core import ENGINE_VERSION, GETClassifier

RESULTS = RESULTS_DIR / "onehot-large.jsonl"
ROWS, NUMERIC, CATEGORICAL, LEVELS = 50_000, 10, 9, 10
#: The share of labels flipped: the Bayes accuracy is 1 minus it.
FLIP = 0.1
BUDGET = 20.0
METHODS = ("cart", "get", "get-cv")
STRUCTURES = ("oblique", "axis")


def onehot_table(seed: int, structure: str = "oblique", rows: int = ROWS) -> tuple[np.ndarray, np.ndarray]:
    """(X (rows, NUMERIC + CATEGORICAL x LEVELS): the numbers in [0, 1], then each category's 0/1 columns; y in {0, 1}).
    The class: a root split and one split on each side decide it (``oblique``: a dense hyperplane of the numbers plus
    the first, second (left) or third (right) category's effect; ``axis``: number 0's median, category 1's first
    five levels, number 1's median); then ``FLIP`` of the labels flip."""
    rng = np.random.default_rng(seed)
    numbers = rng.random((rows, NUMERIC))
    categories = rng.integers(0, LEVELS, (rows, CATEGORICAL))
    effects = rng.normal(scale=0.5, size=(3, LEVELS))

    def margin(which: int) -> np.ndarray:
        if structure == "axis":
            return (numbers[:, 0], (categories[:, 1] < LEVELS // 2).astype(float), numbers[:, 1])[which] - 0.5
        raw = numbers @ rng.normal(size=NUMERIC) + effects[which, categories[:, which]]
        return raw - np.median(raw)

    root, left, right = margin(0), margin(1), margin(2)
    clean = np.where(root <= 0, left > 0, right <= 0).astype(np.int64)
    y = np.where(rng.random(rows) < FLIP, 1 - clean, clean)
    onehot = (categories[:, :, None] == np.arange(LEVELS)).reshape(rows, -1).astype(np.float64)
    return np.hstack([numbers, onehot]), y


def cell(seed: int, structure: str, method: str) -> dict:
    X, y = onehot_table(seed, structure)
    X_tr, X_te, y_tr, y_te = stratified_split(X, y, seed, 0.25)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with thread_limit(1):
        if method == "get":
            model, details = GETClassifier(time_budget=BUDGET, random_state=seed).fit(X_tr, y_tr), {}
        else:
            model, details = fit_method("cart" if method == "cart" else "get", X_tr, y_tr, seed, BUDGET)
    seconds = time.perf_counter() - start
    record = {"seed": seed, "structure": structure, "method": method,
              "accuracy": 100 * accuracy_score(y_te, model.predict(X_te)),
              "fit_seconds": seconds, "load_before": load, "depth": details.get("depth")}
    if method != "cart":
        tree = model.tree_
        decisions = tree.meta.get("plan", {}).get("decisions", [])
        record.update(depth=tree.depth, cpu_share=tree.meta.get("cpu_share"),
                      plan=[d for d in decisions if d[0] in ("race", "cart_rows", "stop")])
    return record


def report(records: list[dict]) -> str:
    """Per structure and method: test accuracy by seed and its mean, fit seconds, and the gap to CART's mean."""
    lines = [f"Bayes accuracy {100 * (1 - FLIP):.1f}%", "",
             "| structure | method | accuracy by seed | mean | over CART | fit s by seed | load before |",
             "|---|---|---|---:|---:|---|---|"]
    for structure, method in ((s, m) for s in STRUCTURES for m in METHODS):
        cells = sorted((r for r in records if (r["structure"], r["method"]) == (structure, method)),
                       key=lambda r: r["seed"])
        means = {} if method == "cart" else means
        if cells:
            means[method] = float(np.mean([r["accuracy"] for r in cells]))
            gap = f"{means[method] - means['cart']:+.2f}" if "cart" in means and method != "cart" else ""
            accuracy, seconds, load = (" / ".join(f"{r[key]:{spec}}" for r in cells) for key, spec in (
                ("accuracy", ".2f"), ("fit_seconds", ".1f"), ("load_before", ".1f")))
            lines.append(f"| {structure} | {method} | {accuracy} | {means[method]:.2f} | {gap} | {seconds} | {load} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.onehot_large")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--structures", nargs="+", choices=STRUCTURES, default=list(STRUCTURES))
    add_cell_options(parser, RESULTS)
    args = parser.parse_args(argv)
    fill_cells(args, report, (
        (f"{seed}|{structure}|{method}|v{ENGINE_VERSION}", partial(cell, seed, structure, method),
         lambda r: f"{r['key']}: {r['accuracy']:.2f}% in {r['fit_seconds']:.1f} s")
        for seed in args.seeds for structure in args.structures for method in args.methods))


if __name__ == "__main__":
    main()
