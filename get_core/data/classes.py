"""A class target: what kind of target a column is, its class labels, and the refusals and notes about its classes.

``target_kind`` recognizes a column as a number to predict (regression) or classes (classification), and says when
both readings make sense, so the Data page asks the user: booleans and whole numbers with at most ``FEW_VALUES``
distinct values (0/1 survived, 1-5 stars) could be either; text can only be classes; other numbers are a number.
``class_labels`` reads a column as labels of one type (text, integer, number or boolean: the type a fitted
classifier's ``classes_`` and ``predict`` give back), ``check_classes`` refuses what a classifier cannot learn from,
each with a sentence that says what to do, and ``imbalance_note`` states a strong imbalance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from get_core.data.columns import ColumnKind, DataError, as_float, column_kind, text_label

TASKS = ("regression", "classification")
#: The most classes a target may have: beyond, a class has too few rows for a tree of a readable depth to give it a
#: leaf of its own (a depth-6 tree has 64 leaves).
MAX_CLASSES = 50
#: The fewest rows a class needs: one to train on and one to test.
MIN_CLASS_ROWS = 2
#: Whole numbers with at most this many distinct values could be classes or a number: the page asks.
FEW_VALUES = 10
#: The smallest class below this share of the largest is a strong imbalance, stated with its consequence.
IMBALANCE_RATIO = 0.2


@dataclass(frozen=True)
class TargetKind:
    """How a target column reads: the task it suggests, whether the other task makes sense too (``ask``), why, in
    words, and for a column that can be classes its class counts (label, rows), in label order."""

    suggested: str
    ask: bool
    reason: str
    counts: tuple[tuple[Any, int], ...] = ()


def target_kind(series: pd.Series, name: str) -> TargetKind:
    """What ``series`` (the target column ``name``) can be predicted as; see the module docstring."""
    kind = column_kind(series)
    quoted = f"'{name}'"
    if _boolean(series):
        return TargetKind("classification", True, f"{quoted} holds yes/no values (true or false).",
                          class_counts(class_labels(series)))
    if kind in (ColumnKind.EMPTY, ColumnKind.DATETIME):
        return TargetKind("regression", False, f"{quoted} is {kind.value}.")
    if kind is not ColumnKind.NUMERIC:
        counts = class_counts(class_labels(series))
        return TargetKind("classification", False, f"{quoted} holds text, so the tree predicts a class: one of its "
                          f"{len(counts):,} distinct values.", counts)
    numbers = as_float(series)
    numbers = numbers[~np.isnan(numbers)]
    distinct = np.unique(numbers)
    whole = bool(np.all(np.isfinite(distinct)) and np.all(distinct == np.round(distinct)))
    if whole and 2 <= len(distinct) <= FEW_VALUES:  # one value: neither a class nor a number to learn (prepare says)
        return TargetKind("classification", True, f"{quoted} holds {len(distinct)} whole-number value"
                          f"{'s' if len(distinct) != 1 else ''}: classes (such as 0 = no, 1 = yes) or a count or "
                          "score to predict as a number.", class_counts(class_labels(series)))
    return TargetKind("regression", False, f"{quoted} holds numbers with {len(distinct):,} distinct values: the "
                      "tree predicts a number.")


def class_labels(series: pd.Series) -> np.ndarray:
    """The column's values as class labels of one type, an object array with None where a value is missing:
    booleans as bool, whole numbers as int, other numbers as float, anything else as its stripped text (whole
    numbers written as text spelled one way, '1.0' as '1', as categorical levels are)."""
    missing = series.isna().to_numpy()
    if _boolean(series):
        values = [bool(v) for v in series.to_numpy(dtype=object)[~missing]]
    elif pd.api.types.is_integer_dtype(series):  # exact beyond 2**53
        values = [int(v) for v in series.to_numpy(dtype=object)[~missing]]
    elif column_kind(series) is ColumnKind.NUMERIC:
        numbers = as_float(series)[~missing]
        whole = bool(np.all(np.abs(numbers) < 2 ** 53) and np.all(numbers == np.round(numbers)))
        values = [int(v) for v in numbers] if whole else [float(v) for v in numbers]
    else:
        values = [text_label(v) for v in series.to_numpy(dtype=object)[~missing]]
    labels = np.full(len(series), None, dtype=object)
    labels[np.flatnonzero(~missing)] = values
    return labels


def _boolean(series: pd.Series) -> bool:
    """A boolean column, or one of booleans and missing values (pandas reads True/False with blanks as objects)."""
    if pd.api.types.is_bool_dtype(series):
        return True
    values = series.dropna()
    return series.dtype == object and len(values) > 0 and all(isinstance(v, (bool, np.bool_)) for v in values)


def class_counts(labels: np.ndarray) -> tuple[tuple[Any, int], ...]:
    """(label, rows) for every class among ``labels`` (missing ones left out), in label order (``np.unique``'s)."""
    present = [v for v in labels if v is not None]
    if not present:
        return ()
    classes, counts = np.unique(np.asarray(present), return_counts=True)
    return tuple((value.item() if isinstance(value, np.generic) else value, int(n))
                 for value, n in zip(classes, counts))


def as_label_array(labels: np.ndarray) -> np.ndarray:
    """Labels (no missing one) as a plain numpy array of their own type, as a classifier's ``predict`` gives them."""
    return np.asarray(list(labels))


def check_classes(counts: tuple[tuple[Any, int], ...], target: str) -> None:
    """Refuse classes a classifier cannot learn from, each with what to do: a single class, a class with fewer than
    ``MIN_CLASS_ROWS`` rows, more than ``MAX_CLASSES`` classes."""
    if len(counts) < 2:
        only = f" ('{counts[0][0]}')" if counts else ""
        raise DataError(f"Target '{target}' has a single class{only} in the usable rows: a tree cannot learn to tell "
                        "classes apart; choose another target.", column=target)
    if len(counts) > MAX_CLASSES:
        raise DataError(f"Target '{target}' has {len(counts):,} classes; GET Explorer classifies at most {MAX_CLASSES}: "
                        "group rare classes into one (such as 'other'), or predict a number instead.", column=target)
    rare = [f"'{label}'" for label, n in counts if n < MIN_CLASS_ROWS]
    if rare:
        listed = ", ".join(rare[:5]) + (f" and {len(rare) - 5} more" if len(rare) > 5 else "")
        raise DataError(f"Target '{target}' has class{'es' if len(rare) > 1 else ''} {listed} with a single row: a "
                        f"class needs at least {MIN_CLASS_ROWS} rows (one to train on, one to test): merge "
                        f"{'them' if len(rare) > 1 else 'it'} into another class or remove "
                        f"{'those rows' if len(rare) > 1 else 'that row'}.", column=target)


def imbalance_note(counts: tuple[tuple[Any, int], ...]) -> str | None:
    """A sentence when the smallest class has less than ``IMBALANCE_RATIO`` of the largest's rows: what always
    predicting the largest class would score, and what balanced class weights do; None otherwise."""
    if len(counts) < 2:
        return None
    (small, n_small), (large, n_large) = min(counts, key=lambda c: c[1]), max(counts, key=lambda c: c[1])
    if n_small >= IMBALANCE_RATIO * n_large:
        return None
    total = sum(n for _, n in counts)
    return (f"The classes are imbalanced: '{small}' has {n_small:,} rows ({100 * n_small / total:.1f}%), '{large}' "
            f"{n_large:,} ({100 * n_large / total:.1f}%). A tree that always predicts '{large}' is right "
            f"{100 * n_large / total:.1f}% of the time, so judge it by balanced accuracy too. Balanced class weights "
            "make every class count as much as the others in training.")
