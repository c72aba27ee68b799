"""Training accuracy of a depth-4 GETClassifier with ``time_budget=10`` against the fixed paper budget (10 starts x
3,000 epochs per stage) on the 12 classification tables (issue 32's target: within 0.5 point on every table).

Per table: the 75% training part of ``bench.classify``'s stratified split (seed 0), categorical columns one-hot
(``bench.classify.load_table``); ``GETClassifier(depth=4, random_state=0)`` with ``time_budget=10`` ("budget-10")
or ``n_starts=10, n_epochs=3000`` ("paper"), every other parameter at its default (the budgeted fit polishes, the
paper one does not: ``polish="auto"``). The accuracy is on the rows the tree was fitted on. Fits are
single-threaded.

Usage: nice python -m bench.studies.class_budget --methods paper budget-10
       python -m bench.studies.class_budget --report
Cells go to a JSON-lines file and are skipped on a rerun (keyed by table, method and engine version).
"""

from __future__ import annotations

import fnmatch
import time

from bench.classify.run import DATA_DIR, load_table, stratified_split
from bench.common import RESULTS_DIR, TEST_SIZE, add_cell_options, command_parser, fill_cells, thread_limit
from get_core import ENGINE_VERSION, GETClassifier

RESULTS = RESULTS_DIR / "class-budget.jsonl"
DEPTH = 4
SEED = 0
METHODS = {"budget-10": dict(time_budget=10.0), "paper": dict(n_starts=10, n_epochs=3000)}
TARGET = 0.5  # points of training accuracy the budgeted fit may lose to the paper budget


def fit(path, method: str) -> dict:
    """Training accuracy (%) and seconds of one fit on ``path``'s seed-0 training part."""
    X, y = load_table(path)
    X_train, _, y_train, _ = stratified_split(X, y, SEED, TEST_SIZE)
    start = time.perf_counter()
    with thread_limit(1):
        model = GETClassifier(depth=DEPTH, random_state=SEED, **METHODS[method]).fit(X_train, y_train)
    return {"dataset": path.stem, "method": method, "rows": len(y_train),
            "train_accuracy": 100 * model.score(X_train, y_train), "seconds": time.perf_counter() - start,
            "starts_x_epochs": [model.tree_.meta["config"]["n_starts"], model.tree_.meta["config"]["n_epochs"]]}


def report(records: list[dict]) -> str:
    """Markdown: per table, both training accuracies of the current engine and the gap, then the verdict."""
    current = [r for r in records if r["engine"] == ENGINE_VERSION]
    cell = {(r["dataset"], r["method"]): r for r in current}
    lines = [f"Engine version {ENGINE_VERSION}; depth {DEPTH}, seed-0 training part (75%), training accuracy (%).",
             "", "| dataset | rows | paper 10 x 3000 | seconds | time_budget=10 | race plan (starts x epochs) | gap |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    gaps = {}
    for name in sorted({r["dataset"] for r in current}):
        paper, fast = cell.get((name, "paper")), cell.get((name, "budget-10"))
        gap = None if paper is None or fast is None else fast["train_accuracy"] - paper["train_accuracy"]
        if gap is not None:
            gaps[name] = gap
        rows = (paper or fast)["rows"]
        lines.append(f"| {name} | {rows:,} | {_acc(paper)} | {_secs(paper)} | {_acc(fast)} | "
                     f"{'' if fast is None else ' x '.join(map(str, fast['starts_x_epochs']))} | "
                     f"{'' if gap is None else f'{gap:+.2f}'} |")
    short = [f"{n} ({g:+.2f})" for n, g in sorted(gaps.items()) if g < -TARGET]
    lines += ["", f"* Within {TARGET} point of the paper budget: {len(gaps) - len(short)} of {len(gaps)} tables"
              + (f"; short on {', '.join(short)}." if short else ".")]
    return "\n".join(lines)


def _acc(record: dict | None) -> str:
    return "" if record is None else f"{record['train_accuracy']:.2f}"


def _secs(record: dict | None) -> str:
    return "" if record is None else f"{record['seconds']:.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.class_budget")
    parser.add_argument("--data-dir", type=type(DATA_DIR), default=DATA_DIR)
    parser.add_argument("--datasets", nargs="+", default=["*"], help="file name patterns (without .csv)")
    parser.add_argument("--methods", nargs="+", choices=sorted(METHODS), default=sorted(METHODS))
    add_cell_options(parser, RESULTS)
    args = parser.parse_args(argv)
    paths = [p for p in sorted(args.data_dir.glob("*.csv")) if any(fnmatch.fnmatch(p.stem, d) for d in args.datasets)]
    fill_cells(args, report, (
        (f"{path.stem}|{method}|v{ENGINE_VERSION}", lambda path=path, method=method: fit(path, method),
         lambda r: f"{r['dataset']} {r['method']}: train {r['train_accuracy']:.2f} in {r['seconds']:.0f} s")
        for method in args.methods for path in paths))


if __name__ == "__main__":
    main()
