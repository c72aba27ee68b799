"""Reproduce the GET paper's comparison (test R2, Table 2) and its training-optimality tables (Tables 3 and 4).

Protocol (the paper's, see ../shared/datasets/MANIFEST.md): per dataset and seed a 75/25 train/test split, X and y
min-max scaled with statistics of the training part; every tree method tunes its depth on a 2:1 split of the
training part and is refit on all of it. GETRegressor min-max scales again inside; on already scaled training data
that is the identity for the final refit, and R2 does not depend on the units anyway.

Each (dataset, seed, method) cell is checkpointed as soon as it finishes, so an interrupted run picks up where it
stopped: rerun the same command. Results: a JSON summary (``--out``), the cell file beside it, and a Markdown
section of docs/BENCHMARKS.md between ``<!-- paper-table:start -->`` and ``<!-- paper-table:end -->`` (or
``paper-training`` for ``--tables``); the rest of that file is left alone.

Examples:
  python bench/paper.py --budget fast --jobs 2                       # all shared datasets, seed 0
  python bench/paper.py --datasets 'airfoil*' abalone --seeds 0 1 2 --methods cart rf get-linear
  python bench/paper.py --tables --datasets airfoil_self_noise abalone --starts 2 --epochs 200
  python bench/paper.py --budget paper --dask-scheduler tcp://127.0.0.1:8786
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from bench.paper import methods as M
from bench.paper import report, sweep
from get_core import CONSTANT_LEAF_ENGINE_VERSION, ENGINE_VERSION
from get_core.tree import MAX_DEPTH

REPO_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "datasets"
MAX_SEED = 2**32 - 1  # a split seed is train_test_split's random_state
DEFAULT_DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
RESULTS_DIR = REPO_ROOT / "bench" / "results"


def int_in(low: int, high: int | None = None):
    """An argparse type: an integer from ``low`` to ``high`` (no upper bound when None), refused with a message."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {text!r}")
        return value
    return parse


def study_parser(doc: str, results: Path) -> argparse.ArgumentParser:
    """The options every offline study under bench/ shares (datasets, seeds, budget, cell file, report)."""
    head, _, rest = doc.partition("\n\n")
    parser = argparse.ArgumentParser(description=head, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="directory of CSV files, target = last column named 'target' (default: %(default)s)")
    parser.add_argument("--datasets", nargs="+", metavar="NAME", help="dataset names or globs (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int_in(0, MAX_SEED), default=[0], help="split seeds (default: 0)")
    parser.add_argument("--budget", choices=sorted(M.BUDGETS), default="fast",
                        help="GET budget, as bench/paper.py's (default: fast)")
    parser.add_argument("--max-rows", type=int_in(sweep.MIN_ROWS),
                        help="use at most this many rows of each dataset (a fixed sample)")
    parser.add_argument("--out", type=Path, default=results,
                        help="JSON-lines file of the finished cells, appended to (default: %(default)s)")
    parser.add_argument("--threads", type=int_in(1), default=1,
                        help="threads per fit (default 1, as bench/paper.py cells)")
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")
    return parser


def study_key(args: argparse.Namespace, *parts) -> str:
    """A study cell's key: its own ``parts``, then what every study cell depends on (budget, engine, row cap)."""
    rows = "" if args.max_rows is None else f"|rows{args.max_rows}"
    return "|".join(str(part) for part in (*parts, args.budget, f"v{ENGINE_VERSION}")) + rows


def study_splits(args: argparse.Namespace):
    """(dataset name, seed, (X_tr, y_tr, X_te, y_te)) for a study's datasets and seeds, split and scaled as here."""
    # every table is read (and checked) before the first cell, so a bad file stops the run before any fit
    tables = [(path.stem, sweep.load_dataset(path, args.max_rows))
              for path in sweep.find_datasets(args.data_dir, args.datasets)]
    for name, (X, y) in tables:
        for seed in args.seeds:
            yield name, seed, sweep.split_and_scale(X, y, seed)


def run_study(args: argparse.Namespace, report: Callable[[list[dict]], str], measure: Callable) -> None:
    """The offline studies' loop: with ``--report`` print the table of the finished cells; otherwise, for every
    split of ``study_splits``, ``measure(name, seed, split)`` yields ``(key, fit, describe)`` per cell, and each
    cell whose key is not in the cell file yet is fitted (``fit()`` -> record fields), appended and described."""
    store = sweep.CellStore(args.out)
    if args.out.is_dir():
        raise SystemExit(f"--out {args.out} is a directory; give the cell file's name, e.g. {args.out / 'cells.jsonl'}")
    if args.report:
        records = list(store.load().values())
        if not records:
            raise SystemExit(f"--out {args.out}: no finished cells in it" + ("" if args.out.exists() else
                                                                          " (no such file)"))
        print(report(records))
        return
    check_writable("--out", args.out)  # before any fit: a cell that cannot be stored is a fit lost
    check_cells_file("--out", args.out)
    done = store.load()
    with sweep.thread_limit(args.threads):
        for name, seed, split in study_splits(args):
            for key, fit, describe in measure(name, seed, split):
                if key in done:
                    continue
                record = {"key": key, "dataset": name, "seed": seed, "budget": args.budget,
                          "engine": ENGINE_VERSION, **fit()}
                store.append(record)
                done[key] = record  # a seed or depth given twice is fitted once
                print(describe(record), flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.paper", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("Examples:")[1],
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="directory of CSV files, target = last column named 'target' (default: %(default)s)")
    parser.add_argument("--datasets", nargs="+", metavar="NAME", help="dataset names or globs (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int_in(0, MAX_SEED), default=[0], help="split seeds (default: 0)")
    parser.add_argument("--budget", choices=sorted(M.BUDGETS), default="fast",
                        help="GET budget: " + "; ".join(f"{b.name} = {b.n_starts} starts x {b.n_epochs} epochs"
                                                        for b in M.BUDGETS.values()) + " (default: fast)")
    parser.add_argument("--starts", type=int_in(1), help="override the budget's number of starts")
    parser.add_argument("--epochs", type=int_in(1), help="override the budget's epochs per alpha stage")
    parser.add_argument("--polish-in-cv", action=argparse.BooleanOptionalAction,
                        help="polish every tree of the depth search (default: the budget's choice: paper yes, "
                             "fast no = search without polish, then polish the chosen depth's tree)")
    parser.add_argument("--methods", nargs="+", metavar="NAME",
                        help=f"test mode: {', '.join(M.METHODS)} (default: {' '.join(M.DEFAULT_METHODS)}); "
                             f"--tables: {', '.join(M.TABLE_METHODS)} (default: all)")
    parser.add_argument("--tables", action="store_true",
                        help="training R2 at fixed depths (the paper's Tables 3 and 4) instead of test R2")
    parser.add_argument("--depths", nargs="+", type=int_in(1, MAX_DEPTH),
                        help="fixed depths for --tables (default: 2 4 8)")
    parser.add_argument("--max-rows", type=int_in(sweep.MIN_ROWS),
                        help="use at most this many rows of each dataset (a fixed sample)")
    parser.add_argument("--out", type=Path,
                        help="summary JSON (default: bench/results/paper-BUDGET.json, or tables-BUDGET.json), replaced "
                             "on each run; the finished cells go beside it to NAME.cells-KEY.jsonl (NAME: OUT "
                             "without .json)")
    parser.add_argument("--searches", type=Path,
                        help="directory where each GET depth search keeps its finished fits, so a cell stopped "
                             "part-way resumes at its next depth with the same result (default: OUT-stem.searches-KEY "
                             "beside the cells file)")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="Markdown file to update (default: %(default)s)")
    parser.add_argument("--no-doc", action="store_true", help="do not touch the Markdown file")
    parser.add_argument("--section", help="marker name of the Markdown section to write (default: paper-table, or "
                                          "paper-training with --tables); other runs can keep their own section")
    parser.add_argument("--jobs", type=int_in(1), default=1, help="parallel cells through joblib (default: 1)")
    parser.add_argument("--threads", type=int_in(1),
                        help="threads per cell (torch, BLAS; default 1: run cells side by side with --jobs instead; "
                             "threads help only on an idle machine)")
    parser.add_argument("--dask-scheduler", metavar="tcp://HOST:PORT",
                        help="run the cells on this Dask distributed scheduler instead of locally; the workers need "
                             "the project importable (start them from the repo root or with PYTHONPATH)")
    parser.add_argument("--dry-run", action="store_true", help="list the cells to run and exit")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: write the JSON and Markdown from the cells finished so far")
    args = parser.parse_args(argv)
    if args.tables and args.polish_in_cv is not None:
        parser.error("--polish-in-cv and --no-polish-in-cv apply to the test-R2 sweep, not to --tables (fixed depths, "
                     "no depth search): leave it out")
    if not args.tables and args.depths is not None:
        parser.error("--depths applies to --tables only (the test-R2 sweep searches depths 1-12): leave it out or add "
                     "--tables")
    methods = _unique(args.methods or list(M.TABLE_METHODS if args.tables else M.DEFAULT_METHODS))
    allowed = M.TABLE_METHODS if args.tables else tuple(M.METHODS)
    unknown = [m for m in methods if m not in allowed]
    if unknown:
        other = [m for m in unknown if m in (tuple(M.METHODS) if args.tables else M.TABLE_METHODS)]
        what = "test-R2 method(s), not for --tables" if args.tables else "--tables method(s): add --tables"
        hint = f" ({', '.join(other)}: {what})" if other else ""
        parser.error(f"unknown method(s) {', '.join(unknown)}{hint}; choose from {', '.join(allowed)}")
    args.methods = methods
    args.seeds = _unique(args.seeds)  # a repeated seed, method or depth would fit and count the same cell twice
    args.depths = _unique(args.depths or list(M.TABLE_DEPTHS))
    return args


def _unique(values: list) -> list:
    """``values`` without repeats, in their first order."""
    return list(dict.fromkeys(values))


def main(argv: list[str] | None = None) -> dict:
    """Run the sweep (or the training tables) for the command line ``argv``; returns the summary JSON as a dict."""
    args = parse_args(argv)
    settings = _settings(args)
    out = args.out or RESULTS_DIR / f"{'tables' if args.tables else 'paper'}-{args.budget}.json"
    store = sweep.CellStore(out.with_name(f"{out.stem}.cells-{settings.key}.jsonl"))
    paths = sweep.find_datasets(args.data_dir, args.datasets)
    depths = args.depths if args.tables else [None]
    cells = [sweep.Cell(p.stem, s, m, d) for p in paths for s in args.seeds for m in args.methods for d in depths]
    if not args.dry_run:  # before any cell: a result that cannot be written is a fit lost
        check_writable("--out", out)
        check_replaceable("--out", out, "settings")
        check_writable("--out", store.path)
        if not (args.tables or args.report_only):  # where the depth searches keep their fits
            args.searches = args.searches or out.with_name(f"{out.stem}.searches-{settings.key}")
            check_writable("--searches", args.searches / "fit.json")
        if not args.no_doc:
            check_writable("--doc", args.doc)
    done = store.load(required=("train_r2" if args.tables else "test_r2", "started_at", "finished_at"))
    finished = {c.method for c in cells if c.key in done}
    # a method whose optional package is missing here is not run, but the cells it finished (on another machine, or
    # before the package went) stay in the report; --report-only runs nothing, so it needs no package at all
    runnable = args.methods if args.tables or args.report_only else _runnable(args.methods, finished)
    methods = [m for m in args.methods if m in runnable or m in finished]
    if not methods:
        raise SystemExit("nothing to run or report: every method given is skipped here (see above)")
    cells = [c for c in cells if c.method in methods]
    pending = [c for c in cells if c.key not in done and c.method in runnable]
    n_done = sum(c.key in done for c in cells)
    _log(f"{len(cells)} cells, {n_done} already finished in {store.path}; {len(pending)} "
         + ("not finished" if args.report_only else "to run"))
    if args.dry_run:
        print("\n".join(c.key for c in pending))
        return {}

    t0 = time.perf_counter()
    fitted, failed = (0, []) if args.report_only else _run_pending(pending, paths, args, settings, store, done)
    records = [done[c.key] for c in cells if c.key in done]
    if not records:  # an empty table would only replace the JSON and the Markdown section of an earlier run
        if failed:
            raise SystemExit(f"all {len(failed)} cells failed (see above) and none finished earlier: wrote nothing")
        raise SystemExit(f"no finished cells for these settings in {store.path}: wrote nothing (to report an earlier "
                         "run, give the same --budget, --starts, --epochs, --max-rows and --out as it had)")
    run = {
        "seeds": args.seeds, "cells_total": len(cells), "cells_finished": len(records),
        "cells_skipped": n_done, "cells_fitted": fitted, "cells_failed": len(failed),
        "failures": failed, "wall_seconds": time.perf_counter() - t0,
        "cell_seconds_total": sum(r.get("wall_seconds", 0.0) for r in records),
        "span_seconds": (max(r["finished_at"] for r in records) - min(r["started_at"] for r in records))
        if records else None,
        "jobs": args.jobs, "dask_scheduler": args.dask_scheduler, "cells_file": str(store.path),
    }
    result = _write_outputs(args, settings, out, methods, [p.stem for p in paths], depths, records, run)
    _log(f"fitted {fitted}, skipped {run['cells_skipped']}, failed {len(failed)} cells in {run['wall_seconds']:.1f} s; "
         f"wrote {out}" + ("" if args.no_doc else f" and {args.doc}"))
    return result


def check_writable(option: str, path: Path) -> None:
    """Exit with a message naming ``option`` when ``path`` cannot be written (a directory, or a folder that cannot
    be created or written to); creates the missing folders."""
    if path.is_dir():
        raise SystemExit(f"{option} {path} is a directory; give a file name, e.g. {path / 'results.json'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        raise SystemExit(f"{option} {path}: cannot write there ({exc.strerror or exc}); choose another path") from None


def check_replaceable(option: str, path: Path, field: str, writer: str = "bench/paper.py") -> None:
    """Exit with a message unless ``path`` is absent or empty or is a JSON object with ``field``: what this tool
    wrote there before, so replacing it loses nothing (not a cells file, the Markdown or a dataset given by mistake)."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        ours = field in json.loads(path.read_bytes())
    except (ValueError, TypeError):
        ours = False
    if not ours:
        raise SystemExit(f"{option} {path} exists and is not a summary JSON written by {writer}; it would be "
                         "replaced: give another file name" + (" (the .cells-*.jsonl files are found from the summary's"
                                                               " name)" if path.suffix == ".jsonl" else ""))


def check_cells_file(option: str, path: Path) -> None:
    """Exit with a message unless ``path`` is absent, empty or a JSON-lines file of cells that this run appends to."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    try:
        whole = json.loads(data)
    except ValueError:  # several lines, or a torn one
        cells = data.startswith(b"{") or any(line.startswith(b'{"key"') for line in data.splitlines())
    else:
        cells = isinstance(whole, dict) and "key" in whole
    if not cells:
        raise SystemExit(f"{option} {path} exists and is not a JSON-lines file of cells; appending cells would "
                         "spoil it: give another file name")


def _settings(args: argparse.Namespace) -> sweep.Settings:
    budget = M.BUDGETS[args.budget]
    return sweep.Settings(mode="train" if args.tables else "test", budget=args.budget,
                          n_starts=args.starts or budget.n_starts, n_epochs=args.epochs or budget.n_epochs,
                          max_rows=args.max_rows,
                          polish_in_cv=budget.polish_in_cv if args.polish_in_cv is None else args.polish_in_cv,
                          # the tables fit constant leaves at fixed depths only (see CONSTANT_LEAF_ENGINE_VERSION)
                          engine=CONSTANT_LEAF_ENGINE_VERSION if args.tables else ENGINE_VERSION)


def _runnable(methods: list[str], finished: set[str] = frozenset()) -> list[str]:
    """The methods that can run here; optional packages that are missing or broken are skipped with a message."""
    keep = []
    for m in methods:
        problem = M.METHODS[m].problem()
        if problem:
            _log(f"skipping {m}: {problem}" + ("; its finished cells are still reported" if m in finished else ""))
        else:
            keep.append(m)
    return keep


def _run_pending(pending, paths, args, settings, store, done) -> tuple[int, list[dict]]:
    """Run the pending cells, checkpoint each finished one; failed cells are reported and left for a rerun."""
    data = {p.stem: sweep.load_dataset(p, args.max_rows) for p in paths if any(c.dataset == p.stem for c in pending)}
    pending = sweep.order_cells(pending, {k: v[1].size for k, v in data.items()})
    fitted, failed = 0, []
    commit = _commit()
    for record in sweep.execute(pending, settings, data, jobs=args.jobs, threads=args.threads,
                                scheduler=args.dask_scheduler,
                                searches=str(args.searches.resolve()) if args.searches else None):
        if "error" in record:
            failed.append({"key": record["key"], "error": record["error"]})
            _log(f"FAILED {record['key']}: {record['error'].splitlines()[0]}")
            continue
        record["commit"] = commit  # the code that computed the cell (a resumed run may span several commits)
        store.append(record)
        fitted += 1
        done[record["key"]] = record
        _log(f"done {record['key']}: " + _brief(record) + f" [{fitted}/{len(pending)}]")
    return fitted, failed


def _write_outputs(args, settings, out: Path, methods, names, depths, records, run) -> dict:
    if args.tables:
        summary = report.summarize_training(records, names, methods, depths)
        markdown = report.training_markdown(summary, methods, depths, asdict(settings), run)
        section = "paper-training"
        title = f"## Training optimality and ablation (paper Tables 3 and 4), budget {settings.budget}"
    else:
        paper = report.paper_figures(args.data_dir / "MANIFEST.md")
        summary = report.summarize(records, names, methods, paper)
        markdown = report.test_markdown(summary, methods, asdict(settings), run)
        section, title = "paper-table", f"## Test R2 against the paper (bench/paper.py), budget {settings.budget}"
    result = {"settings": {**asdict(settings), "key": settings.key}, "methods": methods, "datasets": names,
              "run": run, "summary": summary, "records": records, "markdown": markdown}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, allow_nan=False))
    os.replace(tmp, out)
    if not args.no_doc:
        report.write_section(args.doc, args.section or section, markdown, title)
    print(markdown)
    return result


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _brief(record: dict) -> str:
    if "test_r2" in record:
        return (f"test R2 {record['test_r2']:.2f}%, depth {record['depth']}, {record['fit_seconds']:.1f} s")
    return f"train R2 {record['train_r2']:.2f}%, {record['wall_seconds']:.1f} s"


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
