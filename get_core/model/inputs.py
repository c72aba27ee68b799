"""The raw inputs of a tree fitted on a table as it comes: numbers with holes and columns of categories.

``Inputs`` describes each raw column (``RawColumn``) and ``encode`` turns raw rows into the engine's float64 matrix,
so training, ``predict`` and every export see the same numbers:

- a number column is one engine column; a missing value (NaN, None, an empty string, ±inf) counts as the training
  mean there (``fill``). A column that had missing values in training adds one more engine column, 1.0 where the
  value is missing, in the same group: its learned weight is each split's "if missing" term, so the tree learns per
  split where a missing value goes (read: "income, if missing: counts as 42,000"). A column never missing in
  training has no such column, and a value missing at predict time counts as the training mean.
- a category column is one engine column per category seen in training (1.0 for the row's category), all in one
  group: a split holds one learned weight per category. A column that had missing values in training adds a
  "missing" column to the group (so missing is one more category); a category never seen in training, or a missing
  value where training had none, is 0.0 in every column of the group: it adds nothing to any split.

Why indicators and one-hot weights rather than a learned default direction per split (gradient boosting): an oblique
split adds terms, so a missing value's term is simply one more weight trained by gradient with the rest of the tree;
a direction would be a discrete choice outside the gradient. The direction still seeds it: the CART start grows its
tree on the values with holes and writes each split's "if missing" weight so missing rows go the side CART chose
(``engine.starts``), and training moves it from there. ``groups`` maps engine columns to raw columns, so a
category column (or a number and its indicator) counts as one feature of a split (``max_split_features``, feature
importance). Plain numpy, JSON-serialisable (``to_dict`` / ``from_dict``, checked like the rest of the model file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

KINDS = ("number", "category")
#: At most this many categories per column (as HistGradientBoosting's 255 bins): each is a weight in every split.
MAX_CATEGORIES = 255
#: The suffix of a number column's "is missing" engine column, and the name of a category column's missing level.
MISSING = "missing"
#: The rules above in a reader's words, one home for every page that says them (the app's Data and Predict pages).
RULES = {
    "category": "a category column is one term of a split, with one learned weight per category, read as "
                "\"colour in {red, blue}\" where the split sends those categories one way",
    "unseen": "a category never seen in training adds nothing to any split",
    "missing": "a missing value is a learned \"if missing\" term in each split (a number then counts as a learned "
               "value; for a category column, missing is one more category), where training had missing values; "
               "elsewhere a missing number counts as its training mean and a missing category adds nothing",
}


@dataclass(frozen=True)
class RawColumn:
    """One raw column: ``kind`` "number" (``fill``: what a missing value counts as, the training mean) or
    "category" (``categories``: the labels seen in training, sorted); ``missing``: it had missing values in
    training, so it has a learned "if missing" column."""

    name: str
    kind: str
    missing: bool = False
    fill: float = 0.0
    categories: tuple[str, ...] = ()

    @property
    def input_names(self) -> list[str]:
        """The names of this column's engine columns, in order."""
        if self.kind == "number":
            return [self.name] + ([f"{self.name}={MISSING}"] if self.missing else [])
        return [f"{self.name}={c}" for c in self.categories] + ([f"{self.name}={MISSING}"] if self.missing else [])


@dataclass(frozen=True)
class Inputs:
    """The raw columns of a fitted tree, in the order rows hold them; ``encode`` makes the engine's matrix."""

    columns: tuple[RawColumn, ...]

    def __post_init__(self) -> None:
        check(self)

    # ------------------------------------------------------------------ structure
    @property
    def names(self) -> list[str]:
        """The raw columns' names."""
        return [c.name for c in self.columns]

    @property
    def feature_names(self) -> list[str]:
        """The engine columns' names (the tree's ``feature_names``)."""
        return [name for c in self.columns for name in c.input_names]

    @property
    def groups(self) -> np.ndarray:
        """Engine column -> index of its raw column, shape (p,)."""
        return np.repeat(np.arange(len(self.columns)), [len(c.input_names) for c in self.columns])

    @property
    def has_categories(self) -> bool:
        return any(c.kind == "category" for c in self.columns)

    # ------------------------------------------------------------------ encoding
    def encode(self, X: Any) -> np.ndarray:
        """Raw rows (a 2-D array, or a table whose columns are ``names`` in order) as the engine's float64 matrix
        (n, p). A number that is not a number (text that does not read as one) is refused with a ValueError naming
        its column and row."""
        n = _n_rows(X, len(self.columns))
        parts = []
        for j, column in enumerate(self.columns):
            values = _raw_column(X, j)
            if column.kind == "number":
                numbers = numbers_of(values, column.name)
                missing = ~np.isfinite(numbers)
                parts.append(np.where(missing, column.fill, numbers))
                if column.missing:
                    parts.append(missing.astype(np.float64))
            else:
                codes = category_codes(values, column)
                levels = len(column.categories) + column.missing
                onehot = np.zeros((n, levels))
                seen = codes >= 0
                onehot[np.flatnonzero(seen), codes[seen]] = 1.0
                parts.extend(onehot.T)
        return np.column_stack(parts) if parts else np.zeros((n, 0))

    # ------------------------------------------------------------------ file form
    def to_dict(self) -> dict[str, Any]:
        return {"columns": [_column_dict(c) for c in self.columns]}

    @classmethod
    def from_dict(cls, data: Any) -> "Inputs":
        """An ``Inputs`` from ``to_dict``'s form, every field checked (ValueError naming it)."""
        if not isinstance(data, dict) or not isinstance(data.get("columns"), list) or not data["columns"]:
            raise ValueError("'inputs' must be an object whose 'columns' is a non-empty list.")
        return cls(tuple(_column_from(c, i) for i, c in enumerate(data["columns"])))


def learn(columns: Sequence[Any], names: Sequence[str], categorical: Sequence[bool]) -> Inputs:
    """The ``Inputs`` of training columns ``columns`` (each 1-D), named ``names``, categories where
    ``categorical``: each number column's mean and each category column's labels, and which had missing values."""
    learned = []
    for values, name, is_category in zip(columns, names, categorical):
        name = str(name)
        if is_category:
            labels = [label_of(v) for v in np.asarray(values, dtype=object)]
            seen = sorted({v for v in labels if v is not None})
            if len(seen) > MAX_CATEGORIES:
                raise ValueError(f"Column '{name}' has {len(seen):,} categories; GET takes at most {MAX_CATEGORIES} "
                                 "per column: group rare ones into one (such as 'other'), or pass it as numbers.")
            learned.append(RawColumn(name, "category", missing=None in labels, categories=tuple(seen)))
        else:
            numbers = numbers_of(values, name)
            finite = numbers[np.isfinite(numbers)]
            fill = float(np.mean(finite)) if finite.size else 0.0
            learned.append(RawColumn(name, "number", missing=finite.size < numbers.size,
                                     fill=fill if math.isfinite(fill) else float(np.median(finite))))
    return Inputs(tuple(learned))


def label_of(value: Any) -> str | None:
    """A category value as its label, None when missing (None, NaN, pandas' NA, an empty or blank string): text
    stripped, a whole number written as a float spelled as an integer (1.0 and "1.0" are "1")."""
    if value is None or _is_nan(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = str(value).strip()
    if text.endswith(".0") and text[:-2].lstrip("+-").isdigit():
        text = str(int(text[:-2]))
    return text or None


def numbers_of(values: Any, name: str) -> np.ndarray:
    """A number column as float64: missing (None, NaN, NA, empty text) as NaN; text must read as a number."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array.astype(np.float64)
    out = np.empty(array.shape[0])
    for i, value in enumerate(array.astype(object)):
        if value is None or _is_nan(value):
            out[i] = np.nan
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if isinstance(value, str) and not value.strip():
            out[i] = np.nan
            continue
        try:
            out[i] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"Column '{name}' holds numbers, but row {i + 1} holds {str(value)[:30]!r}: write a "
                             "number there, leave it empty (missing), or pass the column as categories.") from None
    return out


def category_codes(values: Any, column: RawColumn) -> np.ndarray:
    """Each value's index among the column's engine columns: its category's, the missing column's (missing values
    of a column that had some in training), or -1 (an unseen category, or missing where training had none)."""
    index = {c: i for i, c in enumerate(column.categories)}
    absent = len(column.categories) if column.missing else -1
    return np.array([absent if (label := label_of(v)) is None else index.get(label, -1)
                     for v in np.asarray(values, dtype=object)], dtype=np.int64)


def check(inputs: Inputs) -> None:
    """Names distinct, kinds known, a finite fill, categories distinct, sorted and at most ``MAX_CATEGORIES``."""
    names = inputs.names
    if not inputs.columns or len(set(names)) != len(names):
        raise ValueError("The inputs need at least one column, with distinct names.")
    for column in inputs.columns:
        if not isinstance(column.name, str) or column.kind not in KINDS or not isinstance(column.missing, bool):
            raise ValueError(f"Input column {column.name!r}: a text name, a kind among {KINDS} and a true/false "
                             "'missing' are needed.")
        if column.kind == "number" and (column.categories or not math.isfinite(column.fill)):
            raise ValueError(f"Number column '{column.name}' needs a finite fill value and no categories.")
        cats = column.categories
        if column.kind == "category" and (not (cats or column.missing) or len(cats) > MAX_CATEGORIES
                                          or list(cats) != sorted(set(cats))
                                          or not all(isinstance(c, str) and c for c in cats)):
            raise ValueError(f"Category column '{column.name}' needs up to {MAX_CATEGORIES} distinct, sorted, "
                             "non-empty text categories, at least one unless it is missing in training.")
    engine = inputs.feature_names
    if len(set(engine)) != len(engine):
        clash = next(n for n in engine if engine.count(n) > 1)
        raise ValueError(f"Two inputs would both be named {clash!r} (a column's category and another column): "
                         "rename one of the columns.")


def _column_dict(column: RawColumn) -> dict[str, Any]:
    data: dict[str, Any] = {"name": column.name, "kind": column.kind, "missing": column.missing}
    if column.kind == "number":
        data["fill"] = column.fill
    else:
        data["categories"] = list(column.categories)
    return data


def _column_from(data: Any, i: int) -> RawColumn:
    if not isinstance(data, dict):
        raise ValueError(f"'inputs' column {i + 1} must be an object.")
    fill = data.get("fill", 0.0)
    categories = data.get("categories", [])
    if (isinstance(fill, bool) or not isinstance(fill, (int, float)) or not isinstance(categories, list)
            or len(categories) > MAX_CATEGORIES):
        raise ValueError(f"'inputs' column {i + 1}: 'fill' must be a number and 'categories' a list of at most "
                         f"{MAX_CATEGORIES} texts.")
    return RawColumn(name=data.get("name"), kind=data.get("kind"), missing=data.get("missing", False),
                     fill=float(fill), categories=tuple(categories))


def _n_rows(X: Any, p: int) -> int:
    shape = getattr(X, "shape", None) or np.shape(np.asarray(X, dtype=object))
    if len(shape) != 2 or shape[1] != p:
        raise ValueError(f"X must be a 2-D table with {p} columns; got shape {tuple(shape)}.")
    return int(shape[0])


def _raw_column(X: Any, j: int) -> np.ndarray:
    """Column ``j`` of a table (by position; pandas' NA as None; booleans as True/False, so a category label reads
    'True' as in a list) or of a 2-D array."""
    if hasattr(X, "iloc"):
        series = X.iloc[:, j]
        if series.dtype.kind in "iuf":
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        return series.astype(object).where(series.notna(), None).to_numpy()
    return np.asarray(X, dtype=None if hasattr(X, "dtype") else object)[:, j]


def _is_nan(value: Any) -> bool:
    """True for NaN and pandas' NA / NaT, by their own test (no pandas import here)."""
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")
