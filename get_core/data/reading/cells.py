"""The clean-up every table read goes through, whatever its format: cells of only spaces missing, numbers formatted
for display read as numbers, empty rows at the end dropped, header cells on one line."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

_FORMATTED = re.compile(r"[$€£¥]?\s?[-+]?\s?[$€£¥]?\s?([1-9][0-9]{0,2}(,[0-9]{3})+|[0-9]+)(\.[0-9]+)?\s?[%$€£¥]?")


def text_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if df[c].dtype == object or isinstance(df[c].dtype, pd.StringDtype)]


def per_row(codes: np.ndarray, per_value: np.ndarray) -> np.ndarray:
    """A per-distinct-value flag spread over the rows (``codes`` from ``pd.factorize``; -1, missing, is False).
    The checks below look at each distinct cell once: a 100,000-row column usually holds a few dozen."""
    return np.append(per_value, False)[codes]


def blank_cells_missing(df: pd.DataFrame) -> pd.DataFrame:
    """Cells holding only spaces are missing values, as an unquoted empty CSV field is (a spreadsheet shows both
    as empty), never a category '' or a non-number. A TRUE/FALSE column with empty cells (pandas reads it as
    objects) becomes nullable booleans, numeric like the same column without gaps."""
    for column in text_columns(df):
        codes, values = pd.factorize(df[column])
        blank = np.array([isinstance(v, str) and not v.strip() for v in values], dtype=bool)
        if blank.any():
            df[column] = df[column].mask(per_row(codes, blank)).infer_objects()
        kept = [v for v, b in zip(values, blank) if not b]
        # factorize takes 0 == False and 1 == True as one value: only a column of real booleans is converted
        if kept and all(isinstance(v, (bool, np.bool_)) for v in kept) and \
                all(isinstance(v, (bool, np.bool_)) for v in df[column].dropna()):
            df[column] = df[column].astype("boolean")
    return df


def formatted_numbers(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns whose every cell is a number formatted for display (``$1,200.50``, ``12%``, ``-€3.5``, ``1,234``:
    a spreadsheet's CSV export of formatted cells) become those numbers, as written (12% -> 12); their names go to
    ``df.attrs["formatted"]`` so the page can say so. Otherwise they would be one-hot encoded as categories or
    refused as text. Not where a comma may be a decimal comma (";"-separated files)."""
    converted = []
    for column in text_columns(df):
        codes, values = pd.factorize(df[column])
        present = pd.Series(values, dtype=object).astype("string").str.strip()
        european = df.attrs.get("delimiter") == ";" and present.str.contains(",", regex=False).any()
        if len(present) and not european and present.str.fullmatch(_FORMATTED).all() and present.str.contains(
                r"[,%$€£¥]").any():
            numbers = pd.to_numeric(present.str.replace(r"[\s,%$€£¥]", "", regex=True)).to_numpy(np.float64)
            df[column] = np.append(numbers, np.nan)[codes]
            converted.append(column)
    df.attrs["formatted"] = converted
    return df


def without_empty_tail(df: pd.DataFrame) -> pd.DataFrame:
    """Without the rows at the end where every cell is missing (";;;" lines below a spreadsheet's export): they
    carry no data, and scored on Predict they would get imputed values. Rows above keep their numbers."""
    filled = np.flatnonzero(df.notna().any(axis=1).to_numpy())
    return df.iloc[:filled[-1] + 1] if len(filled) else df.iloc[:0]


def column_name(name: Any) -> str:
    """A header cell as the app shows it: one line, single spaces (a wrapped spreadsheet header must not break the
    rules, the diagram or generated code comments)."""
    return re.sub(r"\s+", " ", str(name)).strip()
