"""Time budgets against the paper's fixed budget (issue 21): training R2 and wall time of ``time_budget`` fits.

Parts: ``a`` depth 4, ``time_budget=10`` on the 12 shared datasets; ``b`` depth 8, ``time_budget=60``; ``c`` planted
dense oblique trees (``tests.planted.planted_oblique``, depths 3 and 4, 6,000 training rows, 6 features, noise sd
0.3) with ``time_budget=10``: test R2 as a share of the noise ceiling. Each budgeted fit is compared with the fixed
paper budget (10 starts x 3000 epochs): fitted here with ``--paper`` (parts a and b), else the stored paper-budget
cells of the training-optimality tables (``PAPER_CELLS``, seed 0, measured on a quieter machine); part c always fits
it, on the ``--paper-seeds`` (default 0). Fits are single-threaded, on the paper's split (``common.split_and_scale``); each record keeps the 1-minute load
average before and after the fit, since a wall-clock budget buys fewer epochs on a loaded machine.

``--race`` also fits each budgeted cell without the polish that ``polish="auto"`` gives a budgeted fit, and the report
compares their train and test R2.

Usage: nice python -m bench.studies.time_budget --part a --seeds 0 1 2 --race
       nice python -m bench.studies.time_budget --part b --seeds 0 --datasets abalone airfoil_self_noise
       nice python -m bench.studies.time_budget --part c --seeds 0 1 2
       python -m bench.studies.time_budget --report          # Markdown tables of the finished cells
Cells go to a JSON-lines file and are skipped on a rerun.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from statistics import median

import numpy as np
from sklearn.metrics import r2_score

from bench.common import (RESULTS_DIR, CellStore, add_data_options, command_parser, find_datasets, load_dataset,
                          split_and_scale, thread_limit)
from get_core import ENGINE_VERSION
from get_core.config import GETConfig
from get_core.engine.train import train
from tests.planted import noise_ceiling, planted_oblique

RESULTS = RESULTS_DIR / "time-budget.jsonl"
PAPER_CELLS = RESULTS_DIR / "tables-paper.cells-09ea66c943.jsonl"
PARTS = {"a": (4, 10.0), "b": (8, 60.0), "c": (None, 10.0)}
PAPER = {"n_starts": 10, "n_epochs": 3000}
PLANTED_DEPTHS, PLANTED_ROWS, PLANTED_TEST_ROWS, PLANTED_NOISE = (3, 4), 6000, 4000, 0.3


def fit(X: np.ndarray, y: np.ndarray, depth: int, seed: int, budget: float | None, method: str
        ) -> tuple[dict, object]:
    """One fit (``budget`` None: the paper's 10 x 3000; method "race": the budget without the polish that
    ``polish="auto"`` adds) and its record fields."""
    load = os.getloadavg()[0]
    settings = {"time_budget": budget} if budget is not None else PAPER
    if method == "race":
        settings = {**settings, "polish": False}
    t0 = time.perf_counter()
    tree = train(X, y, GETConfig(depth=depth, random_state=seed, **settings))
    seconds = time.perf_counter() - t0
    ran = tree.meta["config"]
    return {"train_r2": 100 * float(r2_score(y, tree.predict(X))), "wall_seconds": seconds,
            "n_starts": ran["n_starts"], "n_epochs": ran["n_epochs"], "load_before": load,
            "load_after": os.getloadavg()[0]}, tree


def cells(part: str, args) -> list[tuple[str, callable]]:
    """(key, fit) of every cell of ``part``."""
    depth, budget = PARTS[part]
    out = []
    paper = part == "c" or args.paper

    def methods(seed: int) -> list[tuple[str, float | None]]:
        return ([("budget", budget)] + ([("race", budget)] if args.race else [])
                + ([("paper", None)] if paper and seed in args.paper_seeds else []))

    if part == "c":
        for d in PLANTED_DEPTHS:
            for seed in args.seeds:
                for method, b in methods(seed):
                    out.append((f"c|planted{d}|{seed}|{method}|v{ENGINE_VERSION}",
                                lambda d=d, seed=seed, b=b, method=method: planted_cell(d, seed, b, method)))
        return out
    for path in find_datasets(args.data_dir, args.datasets):
        for seed in args.seeds:
            for method, b in methods(seed):
                out.append((f"{part}|{path.stem}|{seed}|{method}|v{ENGINE_VERSION}",
                            lambda path=path, seed=seed, b=b, method=method: dataset_cell(
                                part, path, depth, seed, b, method)))
    return out


def dataset_cell(part: str, path: Path, depth: int, seed: int, budget: float | None, method: str) -> dict:
    X_tr, y_tr, X_te, y_te = split_and_scale(*load_dataset(path), seed)
    record, tree = fit(X_tr, y_tr, depth, seed, budget, method)
    return {"part": part, "dataset": path.stem, "seed": seed, "depth": depth, "method": method,
            "time_budget": budget, **record, "test_r2": 100 * float(r2_score(y_te, tree.predict(X_te)))}


def planted_cell(depth: int, seed: int, budget: float | None, method: str) -> dict:
    X, y, _ = planted_oblique(PLANTED_ROWS, depth, seed, noise=PLANTED_NOISE)
    X_te, y_te, clean_te = planted_oblique(PLANTED_TEST_ROWS, depth, seed, noise=PLANTED_NOISE)
    record, tree = fit(X, y, depth, seed, budget, method)
    test_r2 = float(r2_score(y_te, tree.predict(X_te)))
    ceiling = float(noise_ceiling(clean_te, PLANTED_NOISE))
    return {"part": "c", "dataset": f"planted depth {depth}", "seed": seed, "depth": depth, "method": method,
            "time_budget": budget, **record, "test_r2": 100 * test_r2, "ceiling": 100 * ceiling,
            "share_of_ceiling": 100 * test_r2 / ceiling}


def stored_paper(depth: int) -> dict[str, dict]:
    """The stored paper-budget GET cells of ``depth`` (seed 0), by dataset."""
    found = {}
    for line in PAPER_CELLS.read_text().splitlines():
        record = json.loads(line)
        if record.get("method") == "get" and record.get("depth") == depth and record.get("seed") == 0:
            found[record["dataset"]] = record
    return found


def report(records: list[dict]) -> str:
    lines = []
    for part in ("a", "b"):
        rows = [r for r in records if r["part"] == part]
        if rows:
            lines += dataset_table(part, rows)
    lines += polish_table([r for r in records if r["part"] in ("a", "b")])
    rows = [r for r in records if r["part"] == "c"]
    if rows:
        lines += ["**Part c: planted dense oblique trees** (6,000 training rows, 6 features, noise sd 0.3; test R2 "
                  "on 4,000 fresh rows as a share of the noise ceiling; one row per fit)", "",
                  "| tree | seed | method | test R2 / ceiling (%) | train R2 | wall s | starts x epochs | load |",
                  "|---|---:|---|---:|---:|---:|---|---:|"]
        labels = {"budget": "time_budget=10", "race": "time_budget=10, polish=False", "paper": "paper 10 x 3000"}
        for r in sorted(rows, key=lambda r: (r["dataset"], r["seed"], r["method"])):
            lines.append(f"| {r['dataset']} | {r['seed']} | {labels[r['method']]} | {r['share_of_ceiling']:.1f} | "
                         f"{r['train_r2']:.2f} | {r['wall_seconds']:.1f} | {r['n_starts']}x{r['n_epochs']} | "
                         f"{r['load_before']:.1f} |")
    return "\n".join(lines)


def dataset_table(part: str, rows: list[dict]) -> list[str]:
    """Parts a and b: per dataset, the budgeted fits of every seed run and their median against the paper budget's
    (fitted here on the seeds it was, and the stored seed-0 cell where seed 0 was not), and the gap between the two
    medians."""
    depth, budget = PARTS[part]
    tolerance = 0.5 if part == "a" else 1.0
    stored = stored_paper(depth)
    lines = [f"**Part {part}: depth {depth}, time_budget={budget:g} s against the paper budget (10 x 3000)**", "",
             "| dataset | budgeted train R2 by seed | median | wall s (median) | starts x epochs (first seed) | "
             "paper train R2 by seed | median | paper wall s (median) | gap of medians (points) |",
             "|---|---|---:|---:|---|---|---:|---:|---:|"]
    gaps = []
    for name in sorted({r["dataset"] for r in rows}):
        mine = _by_seed(rows, name, "budget")
        fitted = _by_seed(rows, name, "paper")
        paper = dict(sorted({**({0: stored[name]} if name in stored else {}), **fitted}.items()))
        if not mine:
            continue
        source = "" if 0 in fitted or 0 not in paper else " (seed 0 stored)"
        mid = median(r["train_r2"] for r in mine.values())
        paper_mid = median(r["train_r2"] for r in paper.values()) if paper else None
        gap = None if paper_mid is None else mid - paper_mid
        gaps.append(gap)
        first = mine[min(mine)]
        paper_wall = median(r.get("wall_seconds", r.get("fit_seconds")) for r in paper.values()) if paper else None
        lines.append(f"| {name} | {_seeds(mine)} | {mid:.2f} | {median(r['wall_seconds'] for r in mine.values()):.1f} "
                     f"| {first['n_starts']}x{first['n_epochs']} | {_seeds(paper)}{source} | {_fmt(paper_mid)} | "
                     f"{_fmt(paper_wall, 1)} | {_fmt(gap)} |")
    known = [g for g in gaps if g is not None]
    if known:
        lines += ["", f"Median gap {median(known):+.2f} points; the budgeted median within {tolerance:g} point(s) of "
                  f"the paper budget's on {sum(g >= -tolerance for g in known)} of {len(known)} datasets.", ""]
    return lines


def polish_table(rows: list[dict]) -> list[str]:
    """Per dataset of parts a and b fitted both ways: median train and test R2, over the seeds fitted both ways, of
    the budgeted fit with its polish (``polish="auto"``) and of the race alone (``polish=False``)."""
    pairs = sorted({(r["part"], r["dataset"]) for r in rows if r["method"] == "race"})
    if not pairs:
        return []
    lines = ["**The polish's share of a budget: the race alone (polish=False) against the default (race, then "
             "polish below the root)**, medians over seeds", "",
             "| part | dataset | seeds | race train R2 | with polish | race test R2 | with polish | test gain |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    gains = []
    for part, name in pairs:
        part_rows = [r for r in rows if r["part"] == part]
        race, both = _by_seed(part_rows, name, "race"), _by_seed(part_rows, name, "budget")
        seeds = sorted(s for s in race.keys() & both.keys() if "test_r2" in both[s])
        if not seeds:
            continue
        train = [median(cells[s]["train_r2"] for s in seeds) for cells in (race, both)]
        test = [median(cells[s]["test_r2"] for s in seeds) for cells in (race, both)]
        gains.append(test[1] - test[0])
        lines.append(f"| {part} | {name} | {', '.join(map(str, seeds))} | {train[0]:.2f} | {train[1]:.2f} | "
                     f"{test[0]:.2f} | {test[1]:.2f} | {test[1] - test[0]:+.2f} |")
    if gains:
        lines += ["", f"Test R2 gain of the polish: median {median(gains):+.2f} points, higher on "
                  f"{sum(g > 0 for g in gains)} of {len(gains)}.", ""]
    return lines


def _by_seed(rows: list[dict], dataset: str, method: str) -> dict[int, dict]:
    return {r["seed"]: r for r in sorted(rows, key=lambda r: r["seed"])
            if r["dataset"] == dataset and r["method"] == method}


def _seeds(cells: dict[int, dict]) -> str:
    return " / ".join(f"{r['train_r2']:.2f}" for r in cells.values())


def _fmt(value, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = command_parser(__doc__, "bench.studies.time_budget")
    add_data_options(parser)
    parser.add_argument("--part", choices=sorted(PARTS), action="append", help="which part(s) to run")
    parser.add_argument("--paper", action="store_true",
                        help="parts a and b: fit the paper budget here too (slow), instead of the stored cells")
    parser.add_argument("--paper-seeds", nargs="+", type=int, default=[0],
                        help="seeds on which the paper budget is fitted, when it is (default: 0)")
    parser.add_argument("--race", action="store_true",
                        help="also fit each budgeted cell without its polish (polish=False), to compare test R2")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON-lines cell file (default: %(default)s)")
    parser.add_argument("--report", action="store_true", help="print the Markdown tables of the finished cells")
    args = parser.parse_args()
    store = CellStore(args.out)
    if args.report:
        print(report(list(store.load().values())))
        return
    done = store.load()
    with thread_limit(1):
        for part in args.part or []:
            for key, run in cells(part, args):
                if key in done:
                    continue
                record = {"key": key, "engine": ENGINE_VERSION, **run()}
                store.append(record)
                done[key] = record
                print(f"{key}: train R2 {record['train_r2']:.2f} in {record['wall_seconds']:.1f} s "
                      f"({record['n_starts']}x{record['n_epochs']}, load {record['load_before']:.1f})", flush=True)


if __name__ == "__main__":
    main()
