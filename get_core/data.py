"""User tables in, numbers out: read, type, encode and validate the data a run trains on.

One error style: every refusal raises ``DataError`` whose message names the column or row at fault and says what
to do; the UI shows the message as it is. Uploaded files are data, never code: CSV is parsed as text, Parquet by
pyarrow, Excel by openpyxl; nothing is ever unpickled or evaluated.

Limits (enforced here; the upload size limit is ``server.maxUploadSize`` in ``.streamlit/config.toml``):
  * ``MAX_ROWS`` data rows and ``MAX_COLUMNS`` columns per file, ``MAX_FEATURES`` model inputs after one-hot
    encoding, ``MAX_CATEGORIES`` distinct values per categorical column, at least ``MIN_ROWS`` usable rows.

Rows are numbered as people see them in a spreadsheet of the data: "row 1" is the first row after the header.

Column kinds: numeric (used as is; booleans become 0/1), categorical (strings with at most ``MAX_CATEGORIES``
distinct values, one-hot encoded as ``column=value``), and kinds refused as features: text (more distinct strings),
datetime, mixed (numbers with a few non-numeric cells) and empty (every value missing). Missing values in the
features are dropped or imputed (median for numeric, most frequent value for categorical), as chosen; rows with a
missing target are always dropped, since a made-up target would be trained on. A run learns its fill values and
category levels from its training rows only (``prepare(..., fit_rows=...)``) and stores that ``Encoding``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import PurePath
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

MAX_UPLOAD_MB = 50  # keep equal to server.maxUploadSize in .streamlit/config.toml
MAX_ROWS = 100_000
MAX_COLUMNS = 200
MAX_FEATURES = 200
MAX_CATEGORIES = 30
MIN_ROWS = 20

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".xlsx", ".xlsm")
SNIFF_CHARS = 65_536  # the start of a text file read to find its delimiter and header
MISSING_MARKERS = ["?"]  # besides pandas' defaults (empty, NA, NaN, null, ...); UCI files mark missing with "?"
MISSING_POLICIES = ("drop", "impute")
_DECIMAL_COMMA = re.compile(r"[-+]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?([eE][-+]?\d+)?")
_DATE_LIKE = re.compile(r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})"
                        r"([ T]\d{1,2}:\d{2}.*)?\s*$")


class DataError(ValueError):
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


# ---------------------------------------------------------------------------------------------------- reading
def read_table(data: bytes, filename: str, *, delimiter: str | None = None, training: bool = True) -> pd.DataFrame:
    """Parse an uploaded file (CSV/TSV/TXT, Parquet, Excel .xlsx) into a DataFrame with unique string columns.

    ``delimiter`` (CSV only) is one of ``DELIMITERS`` or None to detect it from the first lines. A table to train
    on (``training``) needs a target and a feature column and ``MIN_ROWS`` rows; rows to score need neither.
    """
    suffix = PurePath(filename).suffix.lower()
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError(f"'{filename}' is larger than {MAX_UPLOAD_MB} MB: sample rows or drop columns first.")
    if not data.strip():
        raise DataError(f"'{filename}' is empty: choose a file with a header row and data rows.")
    if suffix in (".parquet", ".pq"):
        df = _read_parquet(data, filename)
    elif suffix in (".xlsx", ".xlsm"):
        df = _read_excel(data, filename)
    elif suffix == ".xls":
        raise DataError(f"'{filename}' is an old .xls workbook: save it as .xlsx or CSV and upload that.")
    elif suffix in (".csv", ".tsv", ".txt", ""):
        df = _read_csv(data, filename, delimiter, training)
    else:
        raise DataError(f"'{filename}' has an unsupported type '{suffix}': upload one of {', '.join(SUFFIXES)}.")
    return _check_shape(df, filename, training)


def _read_csv(data: bytes, filename: str, delimiter: str | None, training: bool) -> pd.DataFrame:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # every byte sequence decodes; Excel's "CSV" export often is cp1252
    if "\x00" in text[:4096]:
        raise DataError(f"'{filename}' is not a text file: upload CSV, Parquet or Excel (.xlsx).")
    sample = text if len(text) <= SNIFF_CHARS else text[:SNIFF_CHARS].rsplit("\n", 1)[0]
    if delimiter is None:
        delimiter = _sniff_delimiter(sample)
    elif delimiter not in DELIMITERS:
        raise DataError(f"Unknown delimiter {delimiter!r}: choose one of {', '.join(map(repr, DELIMITERS))}.")
    header = _records(sample, delimiter)[0]
    if len(header) < 2 and training:
        others = [d for d in DELIMITERS if d != delimiter and d in header[0]]
        hint = (f"the header contains a {DELIMITERS[others[0]]} ({others[0]!r}): choose it as the delimiter"
                if others else
                "GET needs a target and at least one feature column; check the file's delimiter")
        raise DataError(f"Only one column ('{header[0].strip()[:60]}') was found using the "
                        f"{DELIMITERS[delimiter]} delimiter; {hint}.")
    _check_unique([_column_name(h) for h in header], filename)
    try:
        df = pd.read_csv(io.StringIO(text), sep=delimiter, na_values=MISSING_MARKERS, skipinitialspace=True,
                         nrows=MAX_ROWS + 1, engine="c", low_memory=False)
    except pd.errors.ParserError as exc:
        match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if match:
            expected, line, seen = match.groups()
            raise DataError(f"Row {int(line) - 1} (line {line} of '{filename}') has {seen} fields but the header "
                            f"has {expected}: fix that line, or check the delimiter "
                            f"(now {DELIMITERS[delimiter]}).", row=int(line) - 1) from None
        raise DataError(f"'{filename}' could not be read as {DELIMITERS[delimiter]}-separated text ({exc}); "
                        "check the delimiter and quoting.") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"'{filename}' is empty: choose a file with a header row and data rows.") from None
    df.columns = [_column_name(c) for c in df.columns]
    return _decimal_commas(df) if delimiter != "," else df


def _column_name(name: Any) -> str:
    """A header cell as the app shows it: one line, single spaces (a wrapped spreadsheet header must not break the
    rules, the diagram or generated code comments)."""
    return re.sub(r"\s+", " ", str(name)).strip()


def _decimal_commas(df: pd.DataFrame) -> pd.DataFrame:
    """Columns written with a decimal comma (``1,5``, ``-1.234,5``: the CSV export of European spreadsheets, which
    separate fields with ";") become numbers; their names go to ``df.attrs["decimal_comma"]`` so the page can say
    so. Only for other delimiters than the comma, where ``1,234`` would more likely be a thousands separator."""
    converted = []
    for column in df.columns:
        if pd.api.types.is_numeric_dtype(df[column]):
            continue
        text = df[column].astype("string").str.strip()
        present = text.dropna()
        if len(present) and present.str.contains(",", regex=False).any() and present.str.fullmatch(
                _DECIMAL_COMMA).all():
            numbers = text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
            df[column] = pd.to_numeric(numbers).astype(np.float64)
            converted.append(column)
    df.attrs["decimal_comma"] = converted
    return df


def _sniff_delimiter(sample: str) -> str:
    """The candidate that splits every sampled record into the same number (>1) of fields, most fields first."""
    best, best_fields = ",", 1
    for delimiter in DELIMITERS:
        counts = {len(row) for row in _records(sample, delimiter)}
        if len(counts) == 1 and (fields := counts.pop()) > best_fields:
            best, best_fields = delimiter, fields
    return best


def _records(sample: str, delimiter: str, limit: int = 50) -> list[list[str]]:
    """The first non-blank CSV records of ``sample``; a record may span lines (a quoted header cell that wraps)."""
    records = []
    try:
        for row in csv.reader(io.StringIO(sample), delimiter=delimiter):
            if any(cell.strip() for cell in row):
                records.append(row)
                if len(records) == limit:
                    break
    except csv.Error:  # an unbalanced quote under this delimiter: what was read so far still counts
        pass
    return records or [[""]]


def _read_parquet(data: bytes, filename: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"'{filename}' is not a readable Parquet file ({exc}).") from None
    _check_unique([_column_name(n) for n in table.column_names], filename)
    df = table.to_pandas()
    df.columns = [_column_name(c) for c in df.columns]
    return df.reset_index(drop=True)


def _read_excel(data: bytes, filename: str) -> pd.DataFrame:
    try:
        raw = pd.read_excel(io.BytesIO(data), sheet_name=0, header=None, engine="openpyxl", nrows=MAX_ROWS + 2)
    except Exception as exc:  # openpyxl raises many types for a corrupt workbook; all mean the same to the user
        raise DataError(f"'{filename}' is not a readable Excel workbook ({type(exc).__name__}): "
                        "save it again as .xlsx or CSV.") from None
    raw = raw.dropna(how="all").dropna(axis=1, how="all")
    if raw.empty:
        raise DataError(f"'{filename}' is empty: its first sheet has no header row and data rows.")
    header = [_column_name(v) for v in raw.iloc[0]]
    _check_unique(header, filename)
    df = raw.iloc[1:].reset_index(drop=True)
    df.columns = header
    return df.infer_objects()


def _check_unique(names: Sequence[str], filename: str) -> None:
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(f"Column name '{name}' appears twice in '{filename}' (columns {seen[name]} and "
                            f"{position}): rename one of them.", column=name)
        seen[name] = position


def _check_shape(df: pd.DataFrame, filename: str, training: bool) -> pd.DataFrame:
    if df.shape[1] > MAX_COLUMNS:
        raise DataError(f"'{filename}' has {df.shape[1]} columns; the limit is {MAX_COLUMNS}: "
                        "keep the target and the features you need.")
    if len(df) > MAX_ROWS:
        raise DataError(f"'{filename}' has more than {MAX_ROWS:,} rows: sample it down to at most "
                        f"{MAX_ROWS:,} rows first.")
    if len(df) == 0:
        raise DataError(f"'{filename}' has a header but no data rows: add rows below the header.")
    if len(df) < MIN_ROWS and training:
        raise DataError(f"'{filename}' has only {len(df)} data row{'s' if len(df) > 1 else ''}; "
                        f"GET needs at least {MIN_ROWS}: use a larger table.")
    return df


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
            numbers = _as_float(series)
            finite = numbers[np.isfinite(numbers)]
            if finite.size:
                minimum, maximum = float(finite.min()), float(finite.max())
        values = series.dropna()
        infos.append(ColumnInfo(name=str(name), kind=kind, n_missing=int(series.isna().sum()),
                                n_distinct=int(values.astype(str).nunique()), minimum=minimum, maximum=maximum,
                                example=str(values.iloc[0])[:40] if len(values) else "",
                                row_index=kind is ColumnKind.NUMERIC and _counts_rows(series)))
    return infos


def _counts_rows(series: pd.Series) -> bool:
    """True for 0, 1, 2, ... or 1, 2, 3, ... in file order: what ``DataFrame.to_csv`` writes as its index column. A
    tree split on it learns the file's order, so the Data page does not offer it as a feature by default."""
    numbers = _as_float(series)
    return len(numbers) >= 2 and numbers[0] in (0.0, 1.0) and bool(np.all(np.diff(numbers) == 1.0))


def default_target(infos: Sequence[ColumnInfo]) -> str | None:
    """A column named 'target' if numeric, else the last numeric column (the benchmark files' convention)."""
    numeric = [info.name for info in infos if info.kind is ColumnKind.NUMERIC and info.n_distinct > 1]
    if "target" in numeric:
        return "target"
    return numeric[-1] if numeric else None


# ---------------------------------------------------------------------------------------------------- encoding
@dataclass(frozen=True)
class DataSpec:
    """The user's choices on the Data page; stored with each run so the worker rebuilds X and y exactly."""

    target: str
    features: tuple[str, ...]
    categorical: tuple[str, ...] = ()  # numeric columns the user asked to one-hot encode as well
    missing: str = "drop"  # "drop" rows with a missing feature, or "impute" them

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "features": list(self.features), "categorical": list(self.categorical),
                "missing": self.missing}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DataSpec":
        return cls(target=str(data["target"]), features=tuple(data["features"]),
                   categorical=tuple(data.get("categorical", ())), missing=str(data.get("missing", "drop")))


@dataclass(frozen=True)
class Encoding:
    """How raw columns become model inputs; ``transform`` applies it to new rows (e.g. on the Predict page)."""

    target: str
    numeric: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]  # categorical column -> levels, one input "column=level" each
    impute: Mapping[str, Any]  # column -> fill value (empty when missing rows were dropped)
    feature_names: tuple[str, ...]  # model inputs, in X's column order
    columns: tuple[str, ...]  # raw feature columns, in the order the user chose them

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "numeric": list(self.numeric),
                "categories": {k: list(v) for k, v in self.categories.items()}, "impute": dict(self.impute),
                "feature_names": list(self.feature_names), "columns": list(self.columns)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Encoding":
        return cls(target=data["target"], numeric=tuple(data["numeric"]),
                   categories={k: tuple(v) for k, v in data["categories"].items()}, impute=dict(data["impute"]),
                   feature_names=tuple(data["feature_names"]), columns=tuple(data["columns"]))

    def rows(self, df: pd.DataFrame, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """X and y of the table's rows ``row_ids`` (0-based), encoded exactly as when the run was trained."""
        frame = df.iloc[row_ids].set_axis(np.asarray(row_ids) + 1, axis=0)
        return self.transform(frame), _as_float(frame[self.target])

    def unseen_levels(self, df: pd.DataFrame) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Per categorical column of ``df``: (rows, distinct values) of values the training rows never had; such rows
        are scored with all of that column's indicators at 0, which the user should be told."""
        unseen = {}
        for column, levels in self.categories.items():
            if column in df.columns:
                text = df[column].dropna().astype(str).str.strip()
                new = text[~text.isin(levels)]
                if len(new):
                    unseen[column] = (len(new), tuple(sorted(new.unique())))
        return unseen

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """X (n, len(feature_names)) for new rows; unseen categories get all-zero indicators."""
        missing_columns = [c for c in self.columns if c not in df.columns]
        if missing_columns:
            raise DataError(f"Column '{missing_columns[0]}' is missing: the model was trained with columns "
                            f"{', '.join(self.columns)}.", column=missing_columns[0])
        blocks = []
        for column in self.columns:
            series = df[column]
            if column in self.impute:
                series = series.fillna(self.impute[column])
            if column in self.categories:
                _refuse_missing(series, column, "its value")
                text = series.astype(str).str.strip()
                blocks.extend((text == level).to_numpy(np.float64) for level in self.categories[column])
            else:
                numbers = _numeric_or_refuse(series, column)
                _refuse_missing(pd.Series(numbers, index=series.index), column, "a number")
                blocks.append(numbers)
        return np.column_stack(blocks) if blocks else np.empty((len(df), 0))


@dataclass(frozen=True)
class Prepared:
    """Model-ready data and the bookkeeping shown to the user."""

    X: np.ndarray  # (n, p) float64
    y: np.ndarray  # (n,)
    encoding: Encoding
    row_ids: np.ndarray  # (n,) 0-based positions of the kept rows in the table (row_ids + 1 = "row" numbers)
    n_target_missing: int  # rows dropped because the target was missing
    n_dropped: int  # rows dropped because a feature was missing (policy "drop")
    imputed: Mapping[str, int] = field(default_factory=dict)  # column -> cells filled (policy "impute")

    @property
    def feature_names(self) -> list[str]:
        return list(self.encoding.feature_names)


def prepare(df: pd.DataFrame, spec: DataSpec, fit_rows: np.ndarray | None = None) -> Prepared:
    """Validate the user's choices against the table and encode it; raises DataError naming the problem.

    ``fit_rows`` (positions among the usable rows, i.e. rows of the returned X) are the rows the encoding learns
    from: fill values and category levels. A run passes its training rows, so that nothing about its test rows
    shapes the inputs; by default every usable row (the Data page's preview).
    """
    _check_spec(df, spec)
    kinds = {c: column_kind(df[c]) for c in (spec.target, *spec.features)}
    _check_target_kind(df, spec.target, kinds[spec.target])
    _check_feature_kinds(df, spec, kinds)
    categorical = [c for c in spec.features if kinds[c] is ColumnKind.CATEGORICAL or c in spec.categorical]

    target = _as_float(df[spec.target])
    keep = ~np.isnan(target)
    n_target_missing = int((~keep).sum())
    frame = df.loc[keep, list(spec.features)]
    row_ids = np.flatnonzero(keep)
    n_dropped = 0
    if spec.missing == "drop":
        complete = ~frame.isna().any(axis=1).to_numpy()
        n_dropped = int((~complete).sum())
        frame, row_ids = frame.loc[complete], row_ids[complete]
    y = target[row_ids]
    _check_rows(len(row_ids), n_target_missing, n_dropped)
    if np.ptp(y) == 0:
        raise DataError(f"Target '{spec.target}' has the same value ({y[0]:g}) in every usable row: a tree "
                        "cannot learn anything from it; choose another target.", column=spec.target)

    fit = frame if fit_rows is None else frame.iloc[np.asarray(fit_rows, dtype=np.int64)]
    holes = {c: int(frame[c].isna().sum()) for c in spec.features}
    imputed = {c: n for c, n in holes.items() if n}
    impute = {c: _fill_value(fit[c], c, c in categorical) for c in imputed}
    categories = {c: tuple(sorted(fit[c].dropna().astype(str).str.strip().unique())) for c in categorical}
    for column, levels in categories.items():
        if len(levels) > MAX_CATEGORIES:
            raise DataError(f"Column '{column}' has {len(levels)} distinct values; one-hot encoding allows at most "
                            f"{MAX_CATEGORIES}: deselect it or group its values.", column=column)
    names: list[str] = []
    for column in spec.features:
        names.extend([f"{column}={level}" for level in categories[column]] if column in categories else [column])
    if len(names) > MAX_FEATURES:
        raise DataError(f"The chosen columns make {len(names)} model inputs after one-hot encoding; the limit is "
                        f"{MAX_FEATURES}: deselect some columns or categorical columns with many values.")
    encoding = Encoding(target=spec.target, numeric=tuple(c for c in spec.features if c not in categories),
                        categories=categories, impute=impute, feature_names=tuple(names),
                        columns=tuple(spec.features))
    frame = frame.set_axis(row_ids + 1, axis=0)  # "row" numbers in messages from transform
    X = encoding.transform(frame)
    return Prepared(X=X, y=y, encoding=encoding, row_ids=row_ids, n_target_missing=n_target_missing,
                    n_dropped=n_dropped, imputed=imputed)


def _check_spec(df: pd.DataFrame, spec: DataSpec) -> None:
    for column in (spec.target, *spec.features, *spec.categorical):
        if column not in df.columns:
            raise DataError(f"Column '{column}' is not in the table: choose among {', '.join(df.columns[:20])}.",
                            column=column)
    if not spec.features:
        raise DataError("No feature columns are chosen: pick at least one column besides the target.")
    if spec.target in spec.features:
        raise DataError(f"Column '{spec.target}' is the target and cannot also be a feature: deselect it.",
                        column=spec.target)
    if len(set(spec.features)) != len(spec.features):
        raise DataError("A feature column is chosen twice: choose each column once.")
    if spec.missing not in MISSING_POLICIES:
        raise DataError(f"Missing values policy must be one of {MISSING_POLICIES}; got {spec.missing!r}.")


def _check_target_kind(df: pd.DataFrame, target: str, kind: ColumnKind) -> None:
    if kind is ColumnKind.NUMERIC:
        bad = ~np.isfinite(_as_float(df[target])) & df[target].notna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0]) + 1
            raise DataError(f"Target '{target}' is infinite in row {row}: fix or clear that cell.",
                            column=target, row=row)
        return
    if kind is ColumnKind.MIXED:
        row, value = _first_non_number(df[target])
        raise DataError(f"Target '{target}' holds numbers but row {row} has '{value}': fix or clear the "
                        "non-numeric cells (empty cells count as missing).", column=target, row=row)
    if kind is ColumnKind.EMPTY:
        raise DataError(f"Target '{target}' is empty (every value is missing): choose another target.",
                        column=target)
    example = str(df[target].dropna().iloc[0])[:30]
    raise DataError(f"Target '{target}' is not numeric (it is {kind.value}, e.g. '{example}'); GET fits "
                    "regression trees: choose a numeric target.", column=target)


def _check_feature_kinds(df: pd.DataFrame, spec: DataSpec, kinds: Mapping[str, ColumnKind]) -> None:
    refused = [c for c in spec.features if not kinds[c].usable]
    if refused:
        parts = [f"'{c}' ({kinds[c].value})" for c in refused]
        advice = {ColumnKind.TEXT: "text columns have too many distinct values to one-hot encode",
                  ColumnKind.DATETIME: "derive numbers such as year or day-of-year from dates first",
                  ColumnKind.EMPTY: "an empty column carries no information",
                  ColumnKind.MIXED: "fix or clear the non-numeric cells"}
        reasons = "; ".join(dict.fromkeys(advice[kinds[c]] for c in refused))
        first = refused[0]
        row = _first_non_number(df[first])[0] if kinds[first] is ColumnKind.MIXED else None
        where = f" (first bad cell: row {row})" if row else ""
        raise DataError(f"Column{'s' if len(refused) > 1 else ''} {', '.join(parts)} cannot be used as "
                        f"feature{'s' if len(refused) > 1 else ''}{where}: deselect "
                        f"{'them' if len(refused) > 1 else 'it'} ({reasons}).", column=first, row=row)
    for column in spec.features:
        if kinds[column] is ColumnKind.NUMERIC:
            numbers = _as_float(df[column])
            bad = np.isinf(numbers)
            if bad.any():
                row = int(np.flatnonzero(bad)[0]) + 1
                raise DataError(f"Column '{column}' is infinite in row {row}: fix or clear that cell.",
                                column=column, row=row)


def _check_rows(n: int, n_target_missing: int, n_dropped: int) -> None:
    if n >= MIN_ROWS:
        return
    why = []
    if n_target_missing:
        why.append(f"{n_target_missing} have no target")
    if n_dropped:
        why.append(f"{n_dropped} have a missing feature (choose 'impute' to keep them)")
    reason = f" ({'; '.join(why)})" if why else ""
    raise DataError(f"Only {n} usable row{'s' if n != 1 else ''} left{reason}; GET needs at least {MIN_ROWS}.")


def _fill_value(series: pd.Series, column: str, categorical: bool) -> Any:
    """The most frequent value (categorical) or median (numeric) of ``series``: the rows the encoding learns from."""
    if categorical:
        values = series.dropna().astype(str).str.strip()
        fill = str(values.mode().iloc[0]) if len(values) else None
    else:
        numbers = _as_float(series)
        numbers = numbers[~np.isnan(numbers)]
        fill = float(np.median(numbers)) if len(numbers) else None
    if fill is None:
        raise DataError(f"Column '{column}' has no value in the rows used for training, so its missing cells cannot "
                        "be imputed: deselect it or fill it in.", column=column)
    return fill


def _as_float(series: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(series):
        return series.astype(float).to_numpy()
    if pd.api.types.is_numeric_dtype(series):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.to_numeric(series.astype("string").str.strip(), errors="coerce").to_numpy(dtype=np.float64,
                                                                                         na_value=np.nan)


def _numeric_or_refuse(series: pd.Series, column: str) -> np.ndarray:
    numbers = _as_float(series)
    bad = np.isnan(numbers) & series.notna().to_numpy()
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        row = series.index[position]
        raise DataError(f"Column '{column}' row {row} holds '{series.iloc[position]}', not a number: fix or clear "
                        "that cell.", column=column, row=int(row) if isinstance(row, (int, np.integer)) else None)
    return numbers


def _refuse_missing(series: pd.Series, column: str, what: str) -> None:
    if series.isna().any():
        row = series.index[int(np.flatnonzero(series.isna().to_numpy())[0])]
        raise DataError(f"Column '{column}' is missing {what} in row {row}: fill that cell.", column=column)


def _first_non_number(series: pd.Series) -> tuple[int, str]:
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
