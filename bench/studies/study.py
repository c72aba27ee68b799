"""What the offline studies share: their options, the key of a cell, the splits they fit on, and their loop.

A study fits cells (dataset, seed and its own parts) on the paper's splits (``common.split_and_scale``), appends
each finished cell to a JSON-lines file and skips it on a rerun; ``--report`` prints its Markdown table instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Iterator

from bench.common import (BUDGETS, CellStore, add_data_options, add_sample_options, check_cells_file,
                          check_writable, command_parser, find_datasets, int_in, load_dataset, split_and_scale,
                          thread_limit)
from get_core import ENGINE_VERSION


def study_parser(doc: str, command: str, results: Path) -> argparse.ArgumentParser:
    """The options every study shares (datasets, seeds, budget, row cap, cell file, threads, report)."""
    parser = command_parser(doc, command)
    add_data_options(parser)
    add_sample_options(parser)
    parser.add_argument("--out", type=Path, default=results,
                        help="JSON-lines file of the finished cells, appended to (default: %(default)s)")
    parser.add_argument("--threads", type=int_in(1), default=1,
                        help="threads per fit (default 1, as the paper benchmark's cells)")
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")
    return parser


def study_key(args: argparse.Namespace, *parts) -> str:
    """A study cell's key: its own ``parts``, then what every study cell depends on (budget, engine, row cap)."""
    rows = "" if args.max_rows is None else f"|rows{args.max_rows}"
    return "|".join(str(part) for part in (*parts, args.budget, f"v{ENGINE_VERSION}")) + rows


def study_splits(args: argparse.Namespace) -> Iterator[tuple[str, int, tuple]]:
    """(dataset name, seed, (X_tr, y_tr, X_te, y_te)) for a study's datasets and seeds, split and scaled as the
    paper benchmark does."""
    # every table is read (and checked) before the first cell, so a bad file stops the run before any fit
    tables = [(path.stem, load_dataset(path, args.max_rows)) for path in find_datasets(args.data_dir, args.datasets)]
    for name, (X, y) in tables:
        for seed in args.seeds:
            yield name, seed, split_and_scale(X, y, seed)


def run_study(args: argparse.Namespace, report: Callable[[list[dict]], str], cells: Callable) -> None:
    """The studies' loop: with ``--report`` print the table of the finished cells; otherwise, for every split of
    ``study_splits``, ``cells(args, budget, name, seed, split)`` yields ``(key, fit, describe)`` per cell, and each
    cell whose key is not in the cell file yet is fitted (``fit()`` -> record fields), appended and described
    (``describe(record)`` -> a line of progress)."""
    store = CellStore(args.out)
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
    budget = BUDGETS[args.budget]
    with thread_limit(args.threads):
        for name, seed, split in study_splits(args):
            for key, fit, describe in cells(args, budget, name, seed, split):
                if key in done:
                    continue
                record = {"key": key, "dataset": name, "seed": seed, "budget": args.budget,
                          "engine": ENGINE_VERSION, **fit()}
                store.append(record)
                done[key] = record  # a seed or depth given twice is fitted once
                print(describe(record), flush=True)
