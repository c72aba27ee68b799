"""Reproduce the GET paper's comparison (test R2, Table 2) and its training-optimality tables (Tables 3 and 4).

Protocol (the paper's, see ../shared/datasets/MANIFEST.md): per dataset and seed a 75/25 train/test split, X and y
min-max scaled with statistics of the training part; every tree method tunes its depth on a 2:1 split of the
training part and is refit on all of it. GETRegressor min-max scales again inside; on already scaled training data
that is the identity for the final refit, and R2 does not depend on the units anyway.

Each (dataset, seed, method) cell is checkpointed as soon as it finishes, so an interrupted run picks up where it
stopped: rerun the same command. Results: a JSON summary (``--out``), the cell file beside it, and a Markdown
section of results/paper-tables.md (the per-dataset tables, too long for docs/BENCHMARKS.md, which quotes their
averages) between ``<!-- paper-table:start -->`` and ``<!-- paper-table:end -->`` (or ``paper-training`` for
``--tables``); the rest of that file is left alone.

Examples:
  python -m bench.paper --budget fast --jobs 2                       # all shared datasets, seed 0
  python -m bench.paper --datasets 'airfoil*' abalone --seeds 0 1 2 --methods cart rf get-linear
  python -m bench.paper --tables --datasets airfoil_self_noise abalone --starts 2 --epochs 200
  python -m bench.paper --budget paper --dask-scheduler tcp://127.0.0.1:8786
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from bench.common import (BUDGETS, REPO_ROOT, RESULTS_DIR, CellStore, add_data_options,
                          add_sample_options, check_replaceable, check_writable, command_parser, find_datasets, int_in,
                          load_dataset, log, unique, write_section)
from bench.paper import methods as M
from bench.paper import report, sweep
from get_core import CONSTANT_LEAF_ENGINE_VERSION, ENGINE_VERSION
from get_core.model.tree import MAX_DEPTH

WRITER = "python -m bench.paper"  # named in the refusal to replace a file this command did not write
TABLES_DOC = RESULTS_DIR / "paper-tables.md"  # the generated per-dataset tables (results/INDEX.md)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = command_parser(__doc__, "bench.paper")
    add_data_options(parser)
    add_sample_options(parser)
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
    parser.add_argument("--out", type=Path,
                        help="summary JSON (default: results/paper-BUDGET.json, or tables-BUDGET.json), replaced "
                             "on each run; the finished cells go beside it to NAME.cells-KEY.jsonl (NAME: OUT "
                             "without .json)")
    parser.add_argument("--searches", type=Path,
                        help="directory where each GET depth search keeps its finished fits, so a cell stopped "
                             "part-way resumes at its next depth with the same result (default: OUT-stem.searches-KEY "
                             "beside the cells file)")
    parser.add_argument("--doc", type=Path, default=TABLES_DOC, help="Markdown file to update (default: %(default)s)")
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
    methods = unique(args.methods or list(M.TABLE_METHODS if args.tables else M.DEFAULT_METHODS))
    allowed = M.TABLE_METHODS if args.tables else tuple(M.METHODS)
    unknown = [m for m in methods if m not in allowed]
    if unknown:
        other = [m for m in unknown if m in (tuple(M.METHODS) if args.tables else M.TABLE_METHODS)]
        what = "test-R2 method(s), not for --tables" if args.tables else "--tables method(s): add --tables"
        hint = f" ({', '.join(other)}: {what})" if other else ""
        parser.error(f"unknown method(s) {', '.join(unknown)}{hint}; choose from {', '.join(allowed)}")
    args.methods = methods
    args.seeds = unique(args.seeds)  # a repeated seed, method or depth would fit and count the same cell twice
    args.depths = unique(args.depths or list(M.TABLE_DEPTHS))
    return args


def main(argv: list[str] | None = None) -> dict:
    """Run the sweep (or the training tables) for the command line ``argv``; returns the summary JSON as a dict."""
    args = parse_args(argv)
    settings = _settings(args)
    out = args.out or RESULTS_DIR / f"{'tables' if args.tables else 'paper'}-{args.budget}.json"
    store = CellStore(out.with_name(f"{out.stem}.cells-{settings.key}.jsonl"))
    paths = find_datasets(args.data_dir, args.datasets)
    depths = args.depths if args.tables else [None]
    cells = [sweep.Cell(p.stem, s, m, d) for p in paths for s in args.seeds for m in args.methods for d in depths]
    if not args.dry_run:  # before any cell: a result that cannot be written is a fit lost
        check_writable("--out", out)
        check_replaceable("--out", out, "settings", WRITER)
        check_writable("--out", store.path)
        if not (args.tables or args.report_only):  # where the depth searches keep their fits
            args.searches = args.searches or out.with_name(f"{out.stem}.searches-{settings.key}")
            check_writable("--searches", args.searches / "fit.json")
        if not args.no_doc:
            check_writable("--doc", args.doc)
    done = store.load(required=("train_r2" if args.tables else "test_r2", "started_at", "finished_at"))
    cells, waiting = at_dense_depths(cells, done)
    if waiting:
        log(f"{len(waiting)} cells wait for the depth their dense method chose ({', '.join(sorted(waiting))}): run "
            "those methods on the same datasets and seeds first, then rerun this command")
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
    log(f"{len(cells)} cells, {n_done} already finished in {store.path}; {len(pending)} "
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
    log(f"fitted {fitted}, skipped {run['cells_skipped']}, failed {len(failed)} cells in {run['wall_seconds']:.1f} s; "
         f"wrote {out}" + ("" if args.no_doc else f" and {args.doc}"))
    return result


def at_dense_depths(cells: list[sweep.Cell], done: dict[str, dict]) -> tuple[list[sweep.Cell], list[str]]:
    """Cells of a method with ``depth_from`` (the sparse ones) get the depth that method's finished cell on the same
    dataset and seed chose; those without one are left out and returned as "dataset|seed|dense method" keys."""
    out, waiting = [], []
    for c in cells:
        dense = M.METHODS[c.method].depth_from if c.method in M.METHODS else None
        if dense is None:
            out.append(c)
            continue
        record = done.get(sweep.Cell(c.dataset, c.seed, dense).key)
        if record is None:
            waiting.append(f"{c.dataset}|{c.seed}|{dense}")
        else:
            out.append(sweep.Cell(c.dataset, c.seed, c.method, int(record["depth"])))
    return out, list(dict.fromkeys(waiting))


def _settings(args: argparse.Namespace) -> sweep.Settings:
    budget = BUDGETS[args.budget]
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
            log(f"skipping {m}: {problem}" + ("; its finished cells are still reported" if m in finished else ""))
        else:
            keep.append(m)
    return keep


def _run_pending(pending, paths, args, settings, store, done) -> tuple[int, list[dict]]:
    """Run the pending cells, checkpoint each finished one; failed cells are reported and left for a rerun."""
    data = {p.stem: load_dataset(p, args.max_rows) for p in paths if any(c.dataset == p.stem for c in pending)}
    pending = sweep.order_cells(pending, {k: v[1].size for k, v in data.items()})
    fitted, failed = 0, []
    commit = _commit()
    for record in sweep.execute(pending, settings, data, jobs=args.jobs, threads=args.threads,
                                scheduler=args.dask_scheduler,
                                searches=str(args.searches.resolve()) if args.searches else None):
        if "error" in record:
            failed.append({"key": record["key"], "error": record["error"]})
            log(f"FAILED {record['key']}: {record['error'].splitlines()[0]}")
            continue
        record["commit"] = commit  # the code that computed the cell (a resumed run may span several commits)
        store.append(record)
        fitted += 1
        done[record["key"]] = record
        log(f"done {record['key']}: " + _brief(record) + f" [{fitted}/{len(pending)}]")
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
        section = "paper-table"
        title = f"## Test R2 against the paper (python -m bench.paper), budget {settings.budget}"
    result = {"settings": {**asdict(settings), "key": settings.key}, "methods": methods, "datasets": names,
              "run": run, "summary": summary, "records": records, "markdown": markdown}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, allow_nan=False))
    os.replace(tmp, out)
    if not args.no_doc:
        write_section(args.doc, args.section or section, markdown, title)
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
