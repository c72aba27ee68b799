"""The app's data path on the largest table it accepts: reading an upload and encoding it for a run.

``reading.read_table`` (delimiter sniffing, decoding, type repairs) against a bare ``pandas.read_csv`` of the same
bytes, and ``encoding.prepare`` (validation, one-hot encoding) against a bare ``pandas.get_dummies``: the bare
calls are the floor, so the ratios say what the checks cost. Medians of ``--repeats`` runs, same process.

    python -m bench.studies.data_path                 # print the table
    python -m bench.studies.data_path --doc           # and write it into docs/BENCHMARKS.md (section "data-path")
"""
from __future__ import annotations

import io
import platform
import statistics
import time
from typing import Callable

import numpy as np
import pandas as pd

from bench.common import DEFAULT_DOC, command_parser, write_section
from get_core.data import reading
from get_core.data.columns import DataError
from get_core.data.encoding import DataSpec, prepare


def table(rows: int, numeric: int, text: int, seed: int = 0) -> pd.DataFrame:
    """``numeric`` float columns, ``text`` categorical columns of 4 levels and a target ``y``."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(rows, numeric)).round(4), columns=[f"x{i}" for i in range(numeric)])
    for j in range(text):
        df[f"c{j}"] = rng.choice(["red", "green", "blue", "dark grey"], rows)
    df["y"] = rng.normal(size=rows)
    return df


def median_seconds(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(rows: int, numeric: int, text: int, repeats: int) -> str:
    df = table(rows, numeric, text)
    content = df.to_csv(index=False).encode()
    spec = DataSpec(target="y", features=tuple(c for c in df.columns if c != "y"),
                    categorical=tuple(c for c in df.columns if c.startswith("c")))
    read = median_seconds(lambda: reading.read_table(content, "data.csv"), repeats)
    bare_read = median_seconds(lambda: pd.read_csv(io.BytesIO(content)), repeats)
    encode = median_seconds(lambda: prepare(df, spec), repeats)
    bare_encode = median_seconds(lambda: pd.get_dummies(df.drop(columns="y")).to_numpy(np.float64), repeats)
    return "\n".join([
        f"Command: `python -m bench.studies.data_path --rows {rows} --numeric {numeric} --text {text} "
        f"--repeats {repeats} --doc` (2-core VM, 24 GiB, nothing else running).",
        "",
        f"Table: {rows:,} rows, {numeric} numeric and {text} text columns and a target ({len(content) / 1e6:.1f} MB "
        f"of CSV); medians of {repeats} runs; {platform.processor() or platform.machine()}, "
        f"{platform.python_version()}, pandas {pd.__version__}.",
        "",
        "| step | GET Explorer (s) | bare pandas (s) | ratio |",
        "|---|---:|---:|---:|",
        f"| read the upload: `reading.read_table` vs `pd.read_csv` | {read:.2f} | {bare_read:.2f} | "
        f"{read / bare_read:.1f}x |",
        f"| encode for a run: `encoding.prepare` vs `pd.get_dummies` | {encode:.2f} | {bare_encode:.2f} | "
        f"{encode / bare_encode:.1f}x |",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(__doc__, "bench.studies.data_path")
    parser.add_argument("--rows", type=int, default=reading.limits.MAX_ROWS, help="rows (default: the upload limit)")
    parser.add_argument("--numeric", type=int, default=54, help="numeric columns (default 54)")
    parser.add_argument("--text", type=int, default=6, help="categorical text columns (default 6)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement; the median is reported")
    parser.add_argument("--doc", action="store_true", help="write the table into docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    for name in ("rows", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    for name in ("numeric", "text"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be at least 0")
    if args.numeric + args.text < 1:
        parser.error("--numeric plus --text must be at least 1: the table needs a feature column")
    try:
        markdown = measure(args.rows, args.numeric, args.text, args.repeats)
    except DataError as exc:  # the app's own refusal of the generated table (too many rows, too large, ...)
        parser.error(f"the app refuses this table, so there is nothing to time: {exc} Lower --rows or the columns.")
    print(markdown)
    if args.doc:
        write_section(DEFAULT_DOC, "data-path", markdown, "## The app's data path (python -m bench.studies.data_path)")


if __name__ == "__main__":
    main()
