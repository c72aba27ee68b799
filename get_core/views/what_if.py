"""What would change this prediction: a counterfactual (``get_core.counterfactual``) told as a sentence and a short
table, the old and new paths drawn on the diagram, and the what-if editor's sliders.

The sentence reads as a stakeholder would say it: "raise V by 3.1 and lower AT by 0.8: predicted 452.3, in leaf 21".
Features are named as the user chose them: a one-hot column by its own name and levels, never "color=red". No
streamlit here: the pages hold the widgets and call these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from get_core.data.encoding import Encoding
from get_core.model.counterfactual import Change, Counterfactual, counterfactual
from get_core.model.tree import ObliqueTree
from get_core.views import diagram_content, labels

OLD_PATH_COLOR = "#1f77b4"  # blue: the row as it is
NEW_PATH_COLOR = "#2ca02c"  # green: the row as the answer changes it
DIGITS = 4
GOAL_MODES = ("at least", "at most", "between")


@dataclass(frozen=True)
class Answer:
    """A counterfactual with what the page shows of it."""

    result: Counterfactual
    sentence: str
    table: pd.DataFrame  # feature, now, needed, change (text, as shown)
    old_path: tuple[int, ...]
    new_path: tuple[int, ...]


def regression_goal(mode: str, low: float | None, high: float | None) -> tuple[float | None, float | None]:
    """The goal range for the page's choice: "at least" ``low``, "at most" ``high``, or "between" both."""
    if mode not in GOAL_MODES:
        raise ValueError(f"mode must be one of {GOAL_MODES}; got {mode!r}.")
    return {"at least": (low, None), "at most": (None, high), "between": (low, high)}[mode]


def ask(tree: ObliqueTree, x: Sequence[float], goal: Any = None, *, locked: Sequence[str] = (),
        max_changes: int | None = None, encoding: Encoding | None = None, reference: Any = None,
        leaf: int | None = None) -> Answer:
    """The nearest change of row ``x`` that meets ``goal`` (or reaches ``leaf``), told for the page; raises
    ``CounterfactualError`` with the reason when there is none."""
    x = np.asarray(x, dtype=np.float64)
    result = counterfactual(tree, x, goal, locked=locked, max_changes=max_changes, encoding=encoding,
                            reference=reference, leaf=leaf)
    return Answer(result=result, sentence=sentence(tree, result), table=changes_table(result.changes),
                  old_path=path_of(tree, x), new_path=path_of(tree, result.x))


def sentence(tree: ObliqueTree, result: Counterfactual) -> str:
    """"raise V by 3.1 and lower AT by 0.8: predicted 452.3, in leaf 21" (or "already ..." with no change)."""
    outcome = f"predicted {_prediction(tree, result.prediction)}, in leaf {result.leaf}"
    if not result.changes:
        return f"Nothing needs to change: this row is already {outcome}."
    moves = [_move(change) for change in result.changes]
    said = moves[0] if len(moves) == 1 else ", ".join(moves[:-1]) + " and " + moves[-1]
    return f"{said[0].upper()}{said[1:]}: {outcome}."


def _move(change: Change) -> str:
    if change.change is None:
        was = f"'{change.now}'" if change.now is not None else "a level training never saw"
        return f"switch {change.feature} from {was} to '{change.needed}'"
    verb = "raise" if change.change > 0 else "lower"
    return f"{verb} {change.feature} by {labels.fmt(abs(change.change), DIGITS)}"


def _prediction(tree: ObliqueTree, value: Any) -> str:
    return repr(value) if getattr(tree, "is_classifier", False) else labels.fmt(float(value), DIGITS)


def changes_table(changes: Sequence[Change]) -> pd.DataFrame:
    """One row per change, as shown: feature, now, needed, change (numbers to ``DIGITS`` significant digits)."""
    def shown(value: Any) -> str:
        if value is None:
            return "(unseen level)"
        return value if isinstance(value, str) else labels.fmt(value, DIGITS)

    return pd.DataFrame([{"feature": c.feature, "now": shown(c.now), "needed": shown(c.needed),
                          "change": "switch" if c.change is None else ("+" if c.change > 0 else "")
                          + labels.fmt(c.change, DIGITS)} for c in changes],
                        columns=["feature", "now", "needed", "change"])


def path_of(tree: ObliqueTree, x: Sequence[float]) -> tuple[int, ...]:
    return tuple(int(n) for n in tree.decision_path(np.asarray(x, dtype=np.float64)[None])[0])


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
    a categorical column's choice of ``levels``."""

    column: str
    low: float | None
    high: float | None
    value: float | str
    levels: tuple[str, ...] = ()


def sliders(tree: ObliqueTree, x: Sequence[float], encoding: Encoding | None = None) -> list[Slider]:
    """The editor's controls for row ``x``, in the user's column order: numeric ones span the training range
    (the span the model scales by: 1st-99th percentiles under robust scaling), widened to hold the row's value."""
    encoding = encoding or Encoding.numbers(tree.feature_names)
    x = np.asarray(x, dtype=np.float64)
    found = []
    for column in encoding.columns:
        if column in encoding.categories:
            levels = tuple(encoding.categories[column])
            inputs = [tree.feature_names.index(f"{column}={level}") for level in levels]
            held = [level for level, j in zip(levels, inputs) if x[j] == 1]
            found.append(Slider(column, None, None, held[0] if held else levels[0], levels))
        else:
            j = tree.feature_names.index(column)
            low, high = tree.x_min[j], tree.x_min[j] + tree.x_scale[j]
            found.append(Slider(column, float(min(low, x[j])), float(max(high, x[j])), float(x[j])))
    return found


def edited_row(tree: ObliqueTree, values: dict[str, Any], encoding: Encoding | None = None) -> np.ndarray:
    """Model inputs of the editor's values (column -> number or level), encoded as the run was."""
    encoding = encoding or Encoding.numbers(tree.feature_names)
    return encoding.transform(pd.DataFrame([values], columns=list(encoding.columns)))[0]


def typical_row(tree: ObliqueTree, X: Any = None, encoding: Encoding | None = None) -> np.ndarray:
    """A row to start from when none is given: the training rows' median per feature (each categorical column at
    its most frequent level), or without rows the middle of each feature's span (categorical: its first level)."""
    X = None if X is None else np.asarray(X, dtype=np.float64)
    row = tree.x_min + tree.x_scale / 2 if X is None or not len(X) else np.median(X, axis=0)
    for column, levels in (encoding.categories.items() if encoding is not None else ()):
        inputs = [tree.feature_names.index(f"{column}={level}") for level in levels]
        counts = X[:, inputs].sum(axis=0) if X is not None and len(X) else np.zeros(len(inputs))
        row[inputs] = np.eye(len(inputs))[int(np.argmax(counts))]
    return row
