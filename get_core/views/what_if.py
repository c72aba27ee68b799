"""What would change this prediction: a counterfactual (``get_core.counterfactual``) told as a sentence and a short
table, the old and new paths drawn on the diagram, and the what-if editor's sliders.

The sentence reads as a stakeholder would say it: "raise V by 3.1 to 43.1 and lower AT by 0.8 to 19.2: predicted 452.3,
in leaf 21; this rests on 48 training rows". Each needed value is written with every digit of its grid step, so
typing it back gives the answer (``value_text``). Features are named as the user chose them: a one-hot column by its
own name and levels, never "color=red". No streamlit here: the pages hold the widgets and call these.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from get_core.data.encoding import Encoding
from get_core.model.counterfactual import MIN_SUPPORT, Change, Counterfactual, counterfactual
from get_core.model.counterfactual_programs import decimals
from get_core.model.tree import ObliqueTree, raw_rows
from get_core.model.inputs import MISSING
from get_core.views import diagram_content, labels, node

OLD_PATH_COLOR = "#1f77b4"  # blue: the row as it is
NEW_PATH_COLOR = "#2ca02c"  # green: the row as the answer changes it
DIGITS = 4
GOAL_MODES = ("at least", "at most", "between")


@dataclass(frozen=True)
class Answer:
    """A counterfactual with what the page shows of it."""

    result: Counterfactual
    sentence: str
    table: pd.DataFrame  # feature, now, needed, change, keeps it (text, as shown)
    old_path: tuple[int, ...]
    new_path: tuple[int, ...]


def regression_goal(mode: str, low: float | None, high: float | None) -> tuple[float | None, float | None]:
    """The goal range for the page's choice: "at least" ``low``, "at most" ``high``, or "between" both."""
    if mode not in GOAL_MODES:
        raise ValueError(f"mode must be one of {GOAL_MODES}; got {mode!r}.")
    return {"at least": (low, None), "at most": (None, high), "between": (low, high)}[mode]


def ask(tree: ObliqueTree, x: Sequence[float], goal: Any = None, *, locked: Sequence[str] = (),
        max_changes: int | None = None, encoding: Encoding | None = None, reference: Any = None,
        leaf: int | None = None, directions: dict[str, str] | None = None, integers: Sequence[str] = (),
        min_support: int = MIN_SUPPORT, n: int | None = None) -> Answer | tuple[Answer, ...]:
    """The nearest change of row ``x`` that meets ``goal`` (or reaches ``leaf``), told for the page; with ``n``, the
    ``n`` nearest in distinct leaves, nearest first. Raises ``CounterfactualError`` with the reason when there is
    none. ``directions`` and ``integers`` name columns; a one-hot column takes neither. A tree fitted on raw
    columns is asked over its engine's inputs (``node.engine_view``) with each "is missing" input locked: a missing
    value stays missing (its value with it) and a present one stays present; a category column moves as a whole
    from its category to another (its engine inputs one group)."""
    if tree.inputs is not None and tree.inputs.has_categories:
        encoding = Encoding.of_model(tree).as_one_hot()  # the engine's "column=category" inputs, one group each
    tree, x, locked, reference = _engine_question(tree, x, locked, reference)
    results = counterfactual(tree, x, goal, locked=locked, max_changes=max_changes, encoding=encoding,
                             reference=reference, leaf=leaf, directions=directions, integers=integers,
                             min_support=min_support, n=n)
    told = tuple(Answer(result=result, sentence=sentence(tree, result), table=changes_table(result.changes),
                        old_path=path_of(tree, x), new_path=path_of(tree, result.x))
                 for result in (results if n is not None else (results,)))
    return told if n is not None else told[0]


def _engine_question(tree: ObliqueTree, x: Sequence[float], locked: Sequence[str], reference: Any
                     ) -> tuple[ObliqueTree, np.ndarray, tuple[str, ...], Any]:
    """(tree, row, locked inputs, reference rows) for ``counterfactual``, which reads the engine's inputs."""
    if tree.inputs is None:
        return tree, np.asarray(x, dtype=np.float64), tuple(locked), reference
    plain, row = node.engine_view(tree, np.asarray(x, dtype=object)[None])
    held = [*([locked] if isinstance(locked, str) else locked)]
    for column in tree.inputs.columns:
        if column.missing:
            held.append(f"{column.name}={MISSING}")
            if row[0, plain.feature_names.index(f"{column.name}={MISSING}")] == 1:
                held.append(column.name)
    rows = None if reference is None else node.engine_view(tree, reference)[1]
    return plain, row[0], tuple(dict.fromkeys(held)), rows


def sentence(tree: ObliqueTree, result: Counterfactual) -> str:
    """"raise V by 3.1 to 43.1 and lower AT by 0.8 to 19.2: predicted 452.3, in leaf 21; this rests on 48 training
    rows" (or "already ..." with no change)."""
    outcome = f"predicted {_prediction(tree, result.prediction)}, in leaf {result.leaf}{_support(tree, result)}"
    if not result.changes:
        return f"Nothing needs to change: this row is already {outcome}."
    moves = [_move(change) for change in result.changes]
    said = moves[0] if len(moves) == 1 else ", ".join(moves[:-1]) + " and " + moves[-1]
    return f"{said[0].upper()}{said[1:]}: {outcome}."


def _support(tree: ObliqueTree, result: Counterfactual) -> str:
    """"; this rests on 48 training rows, 87.5% of them 'B'" (or "only 3 ...": fewer than ``MIN_SUPPORT``)."""
    support = result.support
    if support is None or support.rows is None:
        return ""
    said = f"; this rests on {'only ' * support.few}{support.rows:,} training row{'s' * (support.rows != 1)}"
    if support.shares is not None:
        share = support.shares.get(result.prediction)
        if share is not None:
            said += f", {labels.percent(share)} of them '{labels.class_name(result.prediction)}'"
    return said


def support_note(tree: ObliqueTree, result: Counterfactual) -> str:
    """What the answer's leaf holds of the training rows and how near the data it lies: "Leaf 14 holds 41 training
    rows, 90% of them 'B'; the nearest training row the model gives this outcome is 0.31 away (the answer: 0.45)."."""
    support = result.support
    if support is None:
        return ""
    parts = []
    if support.rows is not None:
        held = f"Leaf {result.leaf} holds {support.rows:,} training row{'s' * (support.rows != 1)}"
        if support.shares:
            held += ", " + ", ".join(f"{labels.percent(share)} '{labels.class_name(label)}'"
                                     for label, share in sorted(support.shares.items(), key=lambda kv: -kv[1])[:3])
        elif support.mean is not None:
            held += f", mean target {labels.fmt(support.mean, DIGITS)}"
            if support.spread is not None:
                held += f" (from {labels.fmt(support.spread[0], DIGITS)} to {labels.fmt(support.spread[1], DIGITS)})"
        parts.append(held)
    if support.nearest is not None:
        parts.append(f"the nearest training row the model gives this outcome is {support.nearest:.2g} away (the "
                     f"answer: {result.distance:.2g})")
    said = "; ".join(parts)
    return f"{said[0].upper()}{said[1:]}." if said else ""


def _move(change: Change) -> str:
    if change.change is None:
        was = f"'{change.now}'" if change.now is not None else "a level training never saw"
        return f"switch {change.feature} from {was} to '{change.needed}'"
    verb = "raise" if change.change > 0 else "lower"
    return (f"{verb} {change.feature} by {labels.fmt(abs(change.change), DIGITS)} to "
            f"{value_text(change.needed, change.step)}")


def _prediction(tree: ObliqueTree, value: Any) -> str:
    if getattr(tree, "is_classifier", False):
        return f"'{labels.class_name(value)}'"
    return labels.fmt(float(value), DIGITS)


def value_text(value: float, step: float) -> str:
    """A needed value as the page writes it: with the decimals of its grid ``step`` (every digit it has, so it reads
    back as the same number; no thousands separators, so it can be typed or pasted), in full without a grid."""
    if step > 0:
        return f"{float(value):.{decimals(step)}f}"
    return labels.fmt(value, None, unicode=False)


def changes_table(changes: Sequence[Change]) -> pd.DataFrame:
    """One row per change, as shown: feature, now (``DIGITS`` significant digits), needed (exact, see
    ``value_text``), change, and the values that keep the answer with the other changes made."""
    def shown(value: Any) -> str:
        if value is None:
            return "(unseen level)"
        return value if isinstance(value, str) else labels.fmt(value, DIGITS)

    return pd.DataFrame([{"feature": c.feature, "now": shown(c.now),
                          "needed": shown(c.needed) if c.change is None else value_text(c.needed, c.step),
                          "change": "switch" if c.change is None else ("+" if c.change > 0 else "")
                          + labels.fmt(c.change, DIGITS),
                          "keeps it": "" if c.keeps is None else
                          f"any from {value_text(c.keeps[0], c.step)} to {value_text(c.keeps[1], c.step)}"}
                         for c in changes],
                        columns=["feature", "now", "needed", "change", "keeps it"])


def default_goal(tree: ObliqueTree, x: Sequence[float]) -> tuple[str, float, float] | Any:
    """What the goal widgets start at, never today's prediction: a classifier's first other class that a leaf of at
    least ``MIN_SUPPORT`` training rows gives; for regression (mode, low, high) "at least" a value up to the next
    such leaf's above the row's prediction (else "at most" down to the next below)."""
    now = tree.predict(raw_rows(tree, x)[None])[0]
    rows = tree.n_samples[tree.n_leaves - 1:]  # the leaves an answer may use (a tree without counts: all)
    supported = rows >= MIN_SUPPORT if rows.sum() > 0 else np.ones(tree.n_leaves, dtype=bool)
    if getattr(tree, "is_classifier", False):
        reachable = set(np.asarray(tree.classes)[tree.leaf_class_index[supported]].tolist())
        if tree.has_logistic_leaves and np.any(tree.logit_coefs[supported] != 0):  # a model's class varies by row
            reachable = set(tree.classes)
        others = [c for c in tree.classes if c != now]
        return next((c for c in others if c in reachable), others[0] if others else now)
    if tree.leaf_type == "linear":  # a line gives every value between its ends: a tenth of the target's span up
        values = np.array([now + 0.1 * tree.y_scale])
    else:
        values = np.unique(tree.y_min + tree.y_scale * np.clip(tree.leaf_intercepts, tree.leaf_lower,
                                                                tree.leaf_upper)[supported])
    above, below = values[values > now], values[values < now]
    if len(above):
        return "at least", _goal_end(now, above[0], up=True), float(now)
    if len(below):
        return "at most", float(now), _goal_end(now, below[-1], up=False)
    return "at least", float(now), float(now)


def _goal_end(now: float, value: float, up: bool) -> float:
    """A round number between today's prediction and the next leaf's value: the goal reads short and excludes now."""
    for digits in range(2, 12):
        end = float(f"{(now + value) / 2:.{digits}g}") if not np.isclose(now, value) else value
        if (now < end <= value) if up else (value <= end < now):
            return end
    return float(value)


def whole_columns(tree: ObliqueTree, x: Sequence[float], reference: Any, encoding: Encoding | None = None
                  ) -> list[str]:
    """Numeric columns that hold whole numbers in every ``reference`` row and in ``x``: answers keep them whole."""
    if reference is None:
        return []
    X, x = raw_rows(tree, reference), raw_rows(tree, x)
    names = labels.row_names(tree)
    numeric = encoding.numeric if encoding is not None else names
    found = []
    for column in numeric:
        j = names.index(column)
        values = np.asarray(np.append(X[:, j], x[j]), dtype=np.float64)
        values = values[np.isfinite(values)]
        if len(values) > 1 and np.all(values == np.round(values)):
            found.append(column)
    return found


def path_of(tree: ObliqueTree, x: Sequence[float]) -> tuple[int, ...]:
    return tuple(int(n) for n in tree.decision_path(raw_rows(tree, x)[None])[0])


def paths_options(tree: ObliqueTree, options: diagram_content.DiagramOptions, old_path: Sequence[int],
                  new_path: Sequence[int] | None = None) -> diagram_content.DiagramOptions:
    """``options`` opened down to both leaves, with the old path drawn blue and the new one green."""
    paths = [(tuple(old_path), OLD_PATH_COLOR)] + ([(tuple(new_path), NEW_PATH_COLOR)] if new_path else [])
    for path, _ in paths:
        options = diagram_content.reveal(tree, options, path[-1])
    return replace(options, paths=tuple(paths))


# ---------------------------------------------------------------------------------------------- what-if editor
@dataclass(frozen=True)
class Slider:
    """One control of the what-if editor: a numeric column's slider (``low`` to ``high``, starting at ``value``) or
    a categorical column's choice of ``levels`` (with the row's own value where it is none of them: a category
    training never saw, or ``labels.MISSING_LEVEL``)."""

    column: str
    low: float | None
    high: float | None
    value: float | str
    levels: tuple[str, ...] = ()


def sliders(tree: ObliqueTree, x: Sequence[float], encoding: Encoding | None = None) -> list[Slider]:
    """The editor's controls for row ``x``, in the user's column order: numeric ones span the training range
    (the span the model scales by: 1st-99th percentiles under robust scaling), widened to hold the row's value; a
    missing value starts at the middle of the span."""
    names = labels.row_names(tree)
    encoding = encoding or Encoding.of_model(tree)
    x = raw_rows(tree, x)
    found = []
    for column in encoding.columns:
        if column in encoding.categories:
            levels = tuple(encoding.categories[column])
            if not encoding.one_hot:  # the row's own label; a missing one as the missing level
                now = x[names.index(column)]
                now = labels.MISSING_LEVEL if now is None or now != now else str(now)
                found.append(Slider(column, None, None, now, levels + ((now,) if now not in levels else ())))
                continue
            inputs = [names.index(f"{column}={level}") for level in levels]
            held = [level for level, j in zip(levels, inputs) if x[j] == 1]
            found.append(Slider(column, None, None, held[0] if held else levels[0], levels))
        else:
            j, e = names.index(column), labels.value_input(tree, column)
            low, high = tree.x_min[e], tree.x_min[e] + tree.x_scale[e]
            value = float(x[j]) if np.isfinite(float(x[j])) else low + tree.x_scale[e] / 2
            found.append(Slider(column, float(min(low, value)), float(max(high, value)), float(value)))
    return found


def edited_row(tree: ObliqueTree, values: dict[str, Any], encoding: Encoding | None = None) -> np.ndarray:
    """Model inputs of the editor's values (column -> number or level, ``labels.MISSING_LEVEL`` for a missing
    category), encoded as the run was."""
    encoding = encoding or Encoding.of_model(tree)
    if not encoding.one_hot:
        values = {c: None if c in encoding.categories and v == labels.MISSING_LEVEL else v for c, v in values.items()}
    return encoding.transform(pd.DataFrame([values], columns=list(encoding.columns)))[0]


def typical_row(tree: ObliqueTree, X: Any = None, encoding: Encoding | None = None) -> np.ndarray:
    """A row to start from when none is given: the training rows' median per feature, missing values aside (each
    categorical column at its most frequent level), or without rows the middle of each feature's span (categorical:
    its first level)."""
    if encoding is not None and not encoding.one_hot:
        return _typical_raw_row(tree, X, encoding)
    X = None if X is None else np.asarray(X, dtype=np.float64)
    names = labels.row_names(tree)
    values = [labels.value_input(tree, c) for c in names]  # each row column's scaling (a category's first level)
    middle = (tree.x_min + tree.x_scale / 2)[values]
    row = middle
    if X is not None and len(X):
        with warnings.catch_warnings():  # a column missing in every row: its middle
            warnings.simplefilter("ignore", RuntimeWarning)
            median = np.nanmedian(X, axis=0)
        row = np.where(np.isnan(median), middle, median)
    for column, levels in (encoding.categories.items() if encoding is not None else ()):
        inputs = [names.index(f"{column}={level}") for level in levels]
        counts = X[:, inputs].sum(axis=0) if X is not None and len(X) else np.zeros(len(inputs))
        row[inputs] = np.eye(len(inputs))[int(np.argmax(counts))]
    return row


def _typical_raw_row(tree: ObliqueTree, X: Any, encoding: Encoding) -> np.ndarray:
    """``typical_row`` of raw rows (``encoding`` without ``one_hot``): each number column's median (its middle
    without rows), each category column's most frequent label (its first level without rows)."""
    X = None if X is None or not len(X) else raw_rows(tree, X)
    row = np.empty(len(encoding.columns), dtype=object)
    for j, column in enumerate(encoding.columns):
        if column in encoding.categories:
            seen = pd.Series([] if X is None else X[:, j]).dropna()
            row[j] = str(seen.mode().iloc[0]) if len(seen) else encoding.categories[column][0]
            continue
        e = labels.value_input(tree, column)
        middle = float(tree.x_min[e] + tree.x_scale[e] / 2)
        with warnings.catch_warnings():  # a column missing in every row: its middle
            warnings.simplefilter("ignore", RuntimeWarning)
            median = np.nan if X is None else float(np.nanmedian(np.asarray(X[:, j], dtype=np.float64)))
        row[j] = middle if np.isnan(median) else median
    return row
