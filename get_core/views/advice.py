"""Advice per table (issue 52): from one table's comparison, one or two sentences on whether the single tree is the
right tool there, instead of one average over tables that hides it.

Scores are in points (accuracy or R² times 100), the same test rows for every model. The single tree is compared
with the better of the ensembles present (the random forest, and HistGradientBoosting where there is one) and with
the better of the simple models present (depth-tuned CART, and logistic regression where there is one). No sentence
without GET's, the forest's and CART's scores: a verdict against a missing baseline would be a guess. Where an
ensemble leads by more than ``LEVEL`` points, the table's own facts (``TableFacts``) say why a single tree may trail
there: ordered classes, repeated rows, few rows. Pure: the Compare page and ``python -m bench.classify`` both call
``advise``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

#: Points within which two models count as level (the test rows' noise on the shared tables is about this).
LEVEL = 0.5
#: A simple model this many points ahead of the tree is worth saying (issue 52's per-table floor).
FLOOR = 1.0
#: An ensemble ahead by at most this many points is a small price for one readable tree.
SMALL_GAP = 2.0
#: Facts that help explain a gap: rows repeating at least this share, tables of fewer rows than ``FEW_ROWS``.
REPEATED = 0.1
FEW_ROWS = 500
NAMES = {"forest": "the forest", "hgb": "HistGradientBoosting", "cart": "depth-tuned CART",
         "logistic": "logistic regression"}


@dataclass(frozen=True)
class TableFacts:
    """Simple facts of a table: its rows, its classes (None for a numeric target), whether its classes look ordered
    (whole numbers in a run, as ratings and grades are) and the share of its rows that repeat an earlier row."""

    rows: int
    classes: int | None = None
    ordinal: bool = False
    repeated: float = 0.0


def table_facts(X: Any, y: Any, is_classifier: bool) -> TableFacts:
    """``TableFacts`` of feature rows ``X`` and target ``y`` (the rows a run saw, train and test together)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    rows = len(y)
    if rows == 0:
        return TableFacts(rows=0)
    repeated = 1.0 - len(np.unique(np.nan_to_num(X.reshape(rows, -1), nan=np.inf), axis=0)) / rows
    if not is_classifier:
        return TableFacts(rows=rows, repeated=repeated)
    classes = np.unique(y)
    return TableFacts(rows=rows, classes=len(classes), ordinal=looks_ordinal(classes), repeated=repeated)


def looks_ordinal(classes: Any) -> bool:
    """Whether class labels look like an ordered scale: at least 3 of them, all whole numbers (booleans aside), and
    no gap of more than one between neighbours (wine quality 3..9, a 1-5 rating), not names."""
    values = np.asarray(classes)
    if len(values) < 3 or values.dtype.kind not in "iuf":
        return False
    if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        return False
    return bool(np.all(np.diff(np.sort(values)) <= 1))


def advise(scores: Mapping[str, float | None], facts: TableFacts | None = None) -> str | None:
    """One or two sentences on whether the single tree is the right tool on this table, from ``scores`` in points by
    model: ``get``, ``forest``, ``cart`` needed; ``hgb`` and ``logistic`` used where present. None when a needed one
    is missing (or not a number)."""
    have = {k: float(v) for k, v in scores.items() if k in (*NAMES, "get") and _number(v)}
    if not {"get", "forest", "cart"} <= set(have):
        return None
    get = have["get"]
    ensemble = max((k for k in ("forest", "hgb") if k in have), key=lambda k: have[k])
    simple = max((k for k in ("cart", "logistic") if k in have), key=lambda k: have[k])
    gap, behind = have[ensemble] - get, have[simple] - get
    if gap <= LEVEL:
        level = "level with" if gap >= -LEVEL else f"{-gap:.1f} points ahead of"
        first = (f"The single tree is {level} {NAMES[ensemble]} on this table ({get:.1f} against "
                 f"{have[ensemble]:.1f})" + (": it is the right tool here, nothing is given up for a model one can "
                                             "read." if behind <= FLOOR else "."))
    elif gap <= SMALL_GAP:
        first = (f"{_cap(NAMES[ensemble])} is {gap:.1f} points ahead on this table ({have[ensemble]:.1f} against "
                 f"{get:.1f}): a small price for one readable tree.")
    else:
        reasons = _reasons(facts)
        first = (f"{_cap(NAMES[ensemble])} is {gap:.1f} points ahead on this table ({have[ensemble]:.1f} against "
                 f"{get:.1f})" + (f": {reasons}" if reasons else "")
                 + "; where accuracy matters more than reading the model, use the ensemble.")
    if behind <= FLOOR:
        return first
    if simple == "logistic":
        return (first + f" Logistic regression is {behind:.1f} points ahead of the tree: the classes look nearly "
                "linear in the features, so a tree with logistic leaves (leaf='logistic') or logistic regression "
                "itself fits them better.")
    return first + (f" Depth-tuned CART is {behind:.1f} points ahead of the tree: axis-aligned splits suit this "
                    "table; try GET with one feature per split, or a longer time budget.")


#: ``advise``'s names of the models a run stores (``get_core.baselines.BASELINE_MODELS``).
STORED = {"random_forest": "forest", "hist_gradient_boosting": "hgb", "cart": "cart"}


def run_scores(baselines: Mapping[str, Any], get_entry: Mapping[str, Any], score: str) -> dict[str, float]:
    """A run's scores for ``advise``, in points: GET's (``get_entry``, from ``baselines.evaluate_*``) and each stored
    baseline's ``score`` ("accuracy" or "r2", fractions), those without a number left out."""
    models = baselines.get("models", {})
    entries = {"get": get_entry, **{name: models[key] for key, name in STORED.items() if key in models}}
    return {name: 100 * float(entry[score]) for name, entry in entries.items() if _number(entry.get(score))}


def _reasons(facts: TableFacts | None) -> str:
    """Why a single tree may trail an ensemble on this table, from its facts, in words ('' when none applies)."""
    if facts is None:
        return ""
    said = []
    if facts.ordinal:
        said.append("its classes are ordinal (neighbouring grades are easily confused)")
    if facts.repeated >= REPEATED:
        said.append(f"its rows repeat ({100 * facts.repeated:.0f}% repeat an earlier row's features)")
    if 0 < facts.rows < FEW_ROWS:
        said.append(f"it has only {facts.rows:,} rows, so test scores move by points from one split to the next")
    return " and ".join(said)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and bool(np.isfinite(value))


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]
