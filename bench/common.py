"""What every bench command line shares: paths and budgets, option parsing, one-line refusals, the shared datasets
and the paper's split, the append-only cell file, thread limits and generated Markdown sections.

Commands run from the repository root as modules (``python -m bench.paper``); a refusal is a ``SystemExit`` whose
message names the option or file and what to do, never a traceback, and it comes before the first fit.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from get_core.config import ENGINE_VERSION
from get_core.engine.train import MinMax

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "datasets"
DEFAULT_DOC = REPO_ROOT / "docs" / "BENCHMARKS.md"
RESULTS_DIR = REPO_ROOT / "results"  # results are data, kept outside the code (results/INDEX.md)
MAX_SEED = 2**32 - 1  # a split seed is train_test_split's random_state
TEST_SIZE = 0.25  # the paper's 75% train / 25% test
SUBSAMPLE_SEED = 12345  # --max-rows keeps the same rows for every seed and method
MIN_ROWS = 20  # fewest rows a dataset (or --max-rows) may have: 10 / 5 / 5 rows for search, validation and test


# ---------------------------------------------------------------- GET budgets
@dataclass(frozen=True)
class Budget:
    """GET's optimization budget: ``n_starts`` starts x ``n_alphas`` (2) stages x ``n_epochs`` epochs per fit.

    ``polish_in_cv``: the polish methods polish every tree of the depth search (True), or search the depth without
    polish and polish only the final tree at the chosen depth (False). Polish costs about one more fit per level of
    the tree, so polishing inside the search multiplies the search's cost by roughly the depth; polishing after it
    costs one polished fit and gives exactly the unpolished method's tree, polished (same seed).
    ``searches``: with a directory, a depth search stopped part-way (a paper-budget search can take hours) resumes
    at its next depth with the same result. Not part of the settings: it changes where fits are kept, not what.
    """

    name: str
    n_starts: int
    n_epochs: int
    polish_in_cv: bool = True
    searches: str | None = None  # directory where GET's depth searches keep each finished fit (get_core.engine.checkpoint)


BUDGETS = {
    "paper": Budget("paper", 10, 3000, polish_in_cv=True),  # the paper's setting
    # Chosen by measurement so that the 12 shared datasets x 6 methods x 1 seed finish in about an hour on this
    # 2-core machine (2 jobs x 1 thread); see docs/BENCHMARKS.md for the measured wall times.
    "fast": Budget("fast", 3, 200, polish_in_cv=False),
    "tiny": Budget("tiny", 1, 10, polish_in_cv=False),  # smoke tests only
}


# ---------------------------------------------------------------- options
def command_parser(doc: str, command: str) -> argparse.ArgumentParser:
    """A parser for ``python -m {command}``: the module docstring's first paragraph as description, the rest (its
    usage examples) as epilog, kept as written."""
    head, _, rest = doc.strip().partition("\n\n")
    return argparse.ArgumentParser(prog=f"python -m {command}", description=head, epilog=rest,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


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


def add_data_options(parser: argparse.ArgumentParser, *, seeds: bool = True) -> None:
    """--data-dir and --datasets (the shared datasets, or a folder like it), and --seeds (split seeds)."""
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="directory of CSV files, target = last column named 'target' (default: %(default)s)")
    parser.add_argument("--datasets", nargs="+", metavar="NAME", help="dataset names or globs (default: all)")
    if seeds:
        parser.add_argument("--seeds", nargs="+", type=int_in(0, MAX_SEED), default=[0],
                            help="split seeds (default: 0)")


def add_sample_options(parser: argparse.ArgumentParser) -> None:
    """--budget (GET's starts x epochs) and --max-rows (a fixed sample of each dataset)."""
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="fast",
                        help="GET budget: " + "; ".join(f"{b.name} = {b.n_starts} starts x {b.n_epochs} epochs"
                                                        for b in BUDGETS.values()) + " (default: fast)")
    parser.add_argument("--max-rows", type=int_in(MIN_ROWS),
                        help="use at most this many rows of each dataset (a fixed sample)")


def add_cell_options(parser: argparse.ArgumentParser, results: Path) -> None:
    """A small study's cell file (``--out``) and ``--report``."""
    parser.add_argument("--out", type=Path, default=results, help="JSON-lines cell file (default: %(default)s)")
    parser.add_argument("--report", action="store_true", help="print the Markdown table of the finished cells")


def fill_cells(args: argparse.Namespace, report: Callable[[list[dict]], str],
               cells: Iterable[tuple[str, Callable[[], dict], Callable[[dict], str]]]) -> None:
    """A small study's loop: with ``--report`` print the table of the cell file's finished cells; otherwise fit
    each ``(key, fit, describe)`` whose key the file lacks (``fit()`` -> record fields), append it and print
    ``describe(record)``. ``cells`` is lazy, so nothing is fitted for a report."""
    store = CellStore(args.out)
    done = store.load()
    if args.report:
        print(report(list(done.values())))
        return
    for key, fit, describe in cells:
        if key not in done:
            record = {"key": key, "engine": ENGINE_VERSION, **fit()}
            store.append(record)
            print(describe(record), flush=True)


def unique(values: list) -> list:
    """``values`` without repeats, in their first order (a seed, method or depth given twice is one cell)."""
    return list(dict.fromkeys(values))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- refusals before the first fit
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


def check_replaceable(option: str, path: Path, field: str, writer: str) -> None:
    """Exit with a message unless ``path`` is absent or empty or is a JSON object with ``field``: what ``writer``
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


# ---------------------------------------------------------------- datasets and the paper's split
def find_datasets(data_dir: Path, patterns: Iterable[str] | None = None) -> list[Path]:
    """CSV files of ``data_dir`` whose stem matches any of ``patterns`` (names or globs; all when empty)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"--data-dir {data_dir}: no such directory")
    files = sorted(f for f in data_dir.glob("*.csv") if f.is_file())
    if not files:
        raise SystemExit(f"--data-dir {data_dir}: no .csv file in it")
    patterns = list(patterns or [])
    if not patterns:
        return files
    chosen = [f for f in files if any(fnmatch.fnmatch(f.stem, p.removesuffix(".csv")) for p in patterns)]
    missing = [p for p in patterns if not any(fnmatch.fnmatch(f.stem, p.removesuffix(".csv")) for f in files)]
    if missing:
        raise SystemExit(f"no dataset in {data_dir} matches {', '.join(missing)}")
    return chosen


def load_dataset(path: Path, max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a CSV whose last column, named ``target``, is the target; at most ``max_rows`` random rows.

    Exits with a message naming the file, column and row when the table is not complete numeric data (the paper's
    protocol has no encoding or imputation step to apply, so the benchmark refuses rather than guesses)."""
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SystemExit(f"{path}: cannot be read as a CSV table ({message}); the benchmark needs a comma-separated "
                         "UTF-8 file with a header row") from None
    problem = table_problem(frame)
    if problem:
        raise SystemExit(f"{path}: {problem}")
    X = frame.iloc[:, :-1].to_numpy(dtype=np.float64)
    y = frame["target"].to_numpy(dtype=np.float64)
    if max_rows is not None and len(y) > max_rows:
        keep = np.sort(np.random.default_rng(SUBSAMPLE_SEED).permutation(len(y))[:max_rows])
        X, y = X[keep], y[keep]
    return X, y


def table_problem(frame: pd.DataFrame) -> str | None:
    """Why a benchmark table cannot be used as it is, or None; rows are counted from 1 after the header."""
    if frame.columns[-1] != "target":
        return f"the last column must be the target, named 'target'; it is {frame.columns[-1]!r}: rename it or move it"
    if frame.shape[1] < 2:
        return "there is no feature column besides 'target'"
    if len(frame) < MIN_ROWS:
        return f"only {len(frame)} rows; the protocol's 50/25/25 split needs at least {MIN_ROWS}"
    for column in frame.columns:
        numbers = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        for bad, what in ((np.isnan(numbers) & frame[column].notna().to_numpy(), "is not a number"),
                          (frame[column].isna().to_numpy(), "is missing"),
                          (np.isinf(numbers), "is infinite")):
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                cell = frame[column].iloc[row]
                value = "" if what == "is missing" else f" ({getattr(cell, 'item', lambda: cell)()!r})"
                n = int(bad.sum())
                return (f"column {column!r}, row {row + 1}: the value{value} {what} ({n} row{'s' * (n > 1)} like it); "
                        "the benchmark needs complete numeric data: encode, fill or drop them first")
    if frame["target"].nunique() == 1:
        value = pd.to_numeric(frame["target"]).iloc[0].item()
        return (f"the target is {value!r} in every row: there is nothing to predict (R2 is undefined); check that "
                "the right column is named 'target'")
    return None


def split_and_scale(X: np.ndarray, y: np.ndarray, seed: int):
    """The paper's protocol: 75/25 split by ``seed``, then min-max scaling of X and y to [0, 1] with statistics of
    the training part only (test values may fall outside [0, 1]). R2 is the same in scaled and original units."""
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=TEST_SIZE, random_state=seed)
    scaling = MinMax.fit(X_tr, y_tr)
    return (*scaling.transform(X_tr, y_tr), *scaling.transform(X_te, y_te))


# ---------------------------------------------------------------- the cell file
class CellStore:
    """Append-only JSON-lines file of finished cells (one record per line, keyed by its ``key``).

    Each record is written by one ``os.write`` of a whole line to a file opened with O_APPEND and then fsynced, so
    an interruption leaves at most a torn last line, which ``load`` ignores (that cell simply runs again).
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self, required: tuple[str, ...] = ()) -> dict[str, dict]:
        """{key: record} of the finished cells; a line that is not such a record (torn, garbled, an error, or
        without one of the ``required`` fields) is ignored, so that cell runs again."""
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        for line in self.path.read_bytes().splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # a torn or garbled line (bad JSON or bytes that are not UTF-8): that cell reruns
                continue
            if (isinstance(record, dict) and isinstance(record.get("key"), str) and "error" not in record
                    and all(field in record for field in required)):
                done[record["key"]] = record
        return done

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record, allow_nan=False, default=jsonable) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                line = b"\n" + line  # a torn line from an interrupted run stays a line of its own
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def jsonable(value):
    """``value`` with numpy scalars made Python numbers and tuples made lists, all the way down."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


class thread_limit:
    """Limit torch, BLAS and OpenMP pools to ``n`` threads inside the block, restoring them afterwards."""

    def __init__(self, n: int):
        self.n = max(1, int(n))

    def __enter__(self):
        import torch
        from threadpoolctl import threadpool_limits

        self._torch = torch.get_num_threads()
        torch.set_num_threads(self.n)
        self._pools = threadpool_limits(self.n)
        return self

    def __exit__(self, *exc):
        import torch

        self._pools.restore_original_limits()
        torch.set_num_threads(self._torch)


# ---------------------------------------------------------------- generated Markdown sections
def write_section(doc: Path, name: str, body: str, title: str = "") -> None:
    """Put ``body`` between ``<!-- {name}:start -->`` and ``<!-- {name}:end -->`` in ``doc``.

    Text outside the markers is never changed; the section is appended (under ``title``) when the markers are
    missing and the file is created when it does not exist. The file is replaced atomically.
    """
    doc = Path(doc)
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + (f"{title}\n\n" if title else "") + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=doc.parent, prefix=f".{doc.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, doc)
