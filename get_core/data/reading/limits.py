"""The size limits of a table read, and the checks of its shape, which every format applies (the Parquet and Excel
readers before they decode anything)."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from get_core.data.columns import MIN_ROWS, ColumnKind, DataError, column_kind

MAX_ROWS = 1_000_000  # training samples rows beyond config.AUTO_SAMPLE_ABOVE (issue 21)
MAX_COLUMNS = 200
#: Rows x columns: the largest table of issue 18 (100,000 x 200), so the bounds of the readers, set for it, hold for
#: every shape, 1,000,000 x 20 as well.
MAX_CELLS = 20_000_000


def check_unique(names: Sequence[str], filename: str) -> None:
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(f"Column name '{name}' appears twice in '{filename}' (columns {seen[name]} and "
                            f"{position}): rename one of them.", column=name)
        seen[name] = position


def check_size(n_rows: int, n_columns: int, filename: str) -> None:
    if n_columns > MAX_COLUMNS:
        raise DataError(f"'{filename}' has {n_columns:,} columns; the limit is {MAX_COLUMNS}: "
                        "keep the target and the features you need.")
    if n_rows > MAX_ROWS:
        raise DataError(f"'{filename}' has more than {MAX_ROWS:,} rows: sample it down to at most "
                        f"{MAX_ROWS:,} rows first.")
    if n_rows * n_columns > MAX_CELLS:
        raise DataError(f"'{filename}' has {n_rows:,} rows x {n_columns:,} columns; the limit is {MAX_CELLS:,} cells "
                        f"(e.g. {MAX_ROWS:,} x {MAX_CELLS // MAX_ROWS} or {MAX_CELLS // MAX_COLUMNS:,} x "
                        f"{MAX_COLUMNS}): keep the features you need, or sample rows.")


def check_shape(df: pd.DataFrame, filename: str, training: bool, text: bool = False) -> pd.DataFrame:
    """Size limits, then (to train on) at least MIN_ROWS rows; a text file none of whose columns holds numbers is
    prose or a list rather than a table, and is told so instead of being counted short."""
    check_size(len(df), df.shape[1], filename)
    if len(df) == 0:
        raise DataError(f"'{filename}' has a header but no data rows: add rows below the header.")
    if training and text and not any(column_kind(df[c]) is ColumnKind.NUMERIC for c in df.columns):
        raise DataError(f"'{filename}' does not look like a table: none of its {df.shape[1]} columns holds numbers, "
                        "and GET predicts a number from numbers. Upload a table (CSV, Parquet or Excel) whose first "
                        "line names the columns and whose rows hold the values, or check the delimiter.")
    if len(df) < MIN_ROWS and training:
        raise DataError(f"'{filename}' has only {len(df)} data row{'s' if len(df) > 1 else ''}; "
                        f"GET needs at least {MIN_ROWS}: use a larger table.")
    return df
