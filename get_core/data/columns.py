"""User tables typed: column kinds, summaries and numbers of the data a run trains on or a model scores.

Files are read by ``get_core.data.reading``; encoding for the model is ``get_core.data.encoding``. One error style: every
refusal raises ``DataError`` whose message names the column or row at fault and says what to do; the UI shows the
message as it is.

Limits (enforced in ``reading`` and ``encoding``): ``MAX_FEATURES`` model inputs after one-hot encoding,
``MAX_CATEGORIES`` distinct values per categorical column, at least ``MIN_ROWS`` usable rows.

Rows are numbered as people see them in a spreadsheet of the data: "row 1" is the first row after the header;
blank lines are not rows (pandas skips them), so a CSV message also gives the line number an editor shows.

Column kinds: numeric (used as is; booleans become 0/1), categorical (strings with at most ``MAX_CATEGORIES``
distinct values, one-hot encoded as ``column=value``), and kinds refused as features: text (more distinct strings),
datetime, mixed (numbers with a few non-numeric cells) and empty (every value missing).
"""
from __future__ import annotations

import hashlib
import io
import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import numpy as np
import pandas as pd

from get_core.errors import GETExplorerError

MAX_FEATURES = 200
MAX_CATEGORIES = 30
MIN_ROWS = 20
#: A feature is squeezed when min-max scaling leaves its central 98% of values less than this share of [0, 1].
SQUEEZED_SHARE = 0.1
#: The percentiles that bound a feature's central 98%: robust scaling maps them to 0 and 1 (train.MinMax).
ROBUST_PERCENTILES = (1, 99)
_DATE_LIKE = re.compile(r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})"
                        r"([ T]\d{1,2}:\d{2}.*)?\s*$")


class DataError(GETExplorerError, ValueError):
    """A table cannot be used as given; ``str(error)`` names the column or row and says what to do."""

    def __init__(self, message: str, *, column: str | None = None, row: int | None = None) -> None:
        super().__init__(message)
        self.column = column
        self.row = row


class ColumnKind(str, Enum):
    NUMERIC = "numeric"
    CATEGORICAL = "categorical"
    TEXT = "text"
    DATETIME = "datetime"
    MIXED = "numbers with text"
    EMPTY = "empty"

    @property
    def usable(self) -> bool:
        return self in (ColumnKind.NUMERIC, ColumnKind.CATEGORICAL)


@dataclass(frozen=True)
class ColumnInfo:
    """What the Data page shows per column."""

    name: str
    kind: ColumnKind
    n_missing: int
    n_distinct: int
    minimum: float | None  # numeric columns only
    maximum: float | None
    example: str
    row_index: bool = False  # numbers 0, 1, 2, ... (or 1, 2, 3, ...) in file order: a saved row index, not data


# ---------------------------------------------------------------------------------------------------- typing
def column_kind(series: pd.Series) -> ColumnKind:
    """Classify one column (see the module docstring)."""
    values = series.dropna()
    if values.empty:
        return ColumnKind.EMPTY
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return ColumnKind.NUMERIC
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        return ColumnKind.DATETIME
    text = values.astype(str).str.strip()
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.notna().all():
        return ColumnKind.NUMERIC
    sample = text.iloc[:500]
    if sample.str.match(_DATE_LIKE).mean() >= 0.9:
        return ColumnKind.DATETIME
    if numbers.notna().mean() >= 0.9:
        return ColumnKind.MIXED
    return ColumnKind.CATEGORICAL if text.nunique() <= MAX_CATEGORIES else ColumnKind.TEXT


def describe_columns(df: pd.DataFrame) -> list[ColumnInfo]:
    infos = []
    for name in df.columns:
        series = df[name]
        kind = column_kind(series)
        minimum = maximum = None
        if kind is ColumnKind.NUMERIC:
            numbers = as_float(series)
            finite = numbers[np.isfinite(numbers)]
            if finite.size:
                minimum, maximum = float(finite.min()), float(finite.max())
        values = series.dropna()
        infos.append(ColumnInfo(name=str(name), kind=kind, n_missing=int(series.isna().sum()),
                                n_distinct=_distinct(values), minimum=minimum, maximum=maximum,
                                example=str(values.iloc[0])[:40] if len(values) else "",
                                row_index=kind is ColumnKind.NUMERIC and _counts_rows(series)))
    return infos


def _distinct(values: pd.Series) -> int:
    """Distinct values; numbers compared as numbers (turning 100,000 x 75 numbers into text to count them took 7 s
    of a large upload), anything else by its text, so 1 and '1' in one text column are one value."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return int(values.nunique())
    return int(values.astype(str).nunique())


def _counts_rows(series: pd.Series) -> bool:
    """True for 0, 1, 2, ... or 1, 2, 3, ... in file order: what ``DataFrame.to_csv`` writes as its index column. A
    tree split on it learns the file's order, so the Data page does not offer it as a feature by default."""
    numbers = as_float(series)
    return len(numbers) >= 2 and numbers[0] in (0.0, 1.0) and bool(np.all(np.diff(numbers) == 1.0))


def default_target(infos: Sequence[ColumnInfo]) -> str | None:
    """A column named 'target' (any case, any kind: a text one is a class target), else the last numeric column
    that varies (the benchmark files' convention). A constant 'target' is still chosen: the user named it, so the
    Data page says why it cannot be learned rather than quietly training on another column."""
    named = [info.name for info in infos if info.name.strip().lower() == "target"]
    if named:
        return named[0]
    numeric = [info for info in infos if info.kind is ColumnKind.NUMERIC]
    varying = [info.name for info in numeric if info.n_distinct > 1]
    return varying[-1] if varying else None


#: Text that is a whole number written as a float ('1.0', '2.00'), as a column of codes is once a blank or a text
#: cell made pandas read it as floats or text.
_WHOLE_TEXT = re.compile(r"([-+]?\d+)\.0*")


def text_label(value: Any) -> str:
    """A text value as a level or class label: stripped, a whole number written as a float ('1.0') spelled as an
    integer ('1'), exact for codes beyond 2**53; other text as written."""
    text = str(value).strip()
    whole = _WHOLE_TEXT.fullmatch(text)
    return str(int(whole[1])) if whole else text


# ---------------------------------------------------------------------------------------------------- numbers
def as_float(series: pd.Series) -> np.ndarray:
    """The column as float64; booleans become 0/1, anything that is not a number NaN."""
    if pd.api.types.is_bool_dtype(series):
        return series.astype(float).to_numpy()
    if pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.to_numeric(series.astype("string").str.strip(), errors="coerce").to_numpy(dtype=np.float64,
                                                                                         na_value=np.nan)


def first_non_number(series: pd.Series) -> tuple[int, str]:
    """(row number, value) of the first non-missing cell that is not a number; the column must have one."""
    text = series.astype("string").str.strip()
    bad = pd.to_numeric(text, errors="coerce").isna() & series.notna()
    position = int(np.flatnonzero(bad.to_numpy())[0])
    return position + 1, str(series.iloc[position])[:30]


# ---------------------------------------------------------------------------------------------------- storage
def to_parquet_bytes(df: pd.DataFrame) -> bytes:
    """The table as Parquet bytes for the run store; object columns are stored as strings (numbers stay numbers)."""
    frame = df.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(lambda v: v if v is None or (isinstance(v, float) and math.isnan(v))
                                              else str(v)).astype("string")
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, engine="pyarrow")
    return buffer.getvalue()


def from_parquet_bytes(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data), engine="pyarrow")


def fingerprint(data: bytes) -> str:
    """SHA-256 of the stored dataset bytes, hex."""
    return hashlib.sha256(data).hexdigest()


#: The rows ``squeezed_features`` takes its percentiles from: a warning's test, not the scaling itself.
SQUEEZE_SAMPLE_ROWS = 100_000


def squeezed_features(X: np.ndarray) -> list[int]:
    """Columns whose central 98% of values min-max scaling packs into less than SQUEEZED_SHARE of [0, 1] (far
    outliers, e.g. a missing-value code like 9999): there GET's soft splits barely move, and ``scaling="robust"``
    helps. Columns that are mostly one value are not counted (robust scaling falls back to min-max for them).
    The percentiles of a larger table are those of ``SQUEEZE_SAMPLE_ROWS`` evenly spaced rows (the range is every
    row's): on 750,000 rows the exact ones took 2 s before a budgeted fit's clock started."""
    X = np.asarray(X, dtype=np.float64)
    if len(X) == 0:
        return []
    sample = X[::-(-len(X) // SQUEEZE_SAMPLE_ROWS)]
    low, high = np.percentile(sample, ROBUST_PERCENTILES, axis=0)
    span = X.max(axis=0) - X.min(axis=0)
    return [int(j) for j in np.flatnonzero((high > low) & (high - low < SQUEEZED_SHARE * span))]


def outlier_notes(X: np.ndarray, names: Sequence[str]) -> list[str]:
    """One sentence per squeezed column (``squeezed_features``): where 98% of its values lie against its range."""
    X = np.asarray(X, dtype=np.float64)
    notes = []
    for j in squeezed_features(X):
        low, high = np.percentile(X[:, j], ROBUST_PERCENTILES)
        notes.append(f"'{names[j]}': 98% of its values lie between {low:.6g} and {high:.6g}, but it ranges from "
                     f"{X[:, j].min():.6g} to {X[:, j].max():.6g}")
    return notes
