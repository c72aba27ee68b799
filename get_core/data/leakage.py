"""What a user should hear before training on a table (issue 35): a feature that gives the target away, features that
add up to it, and missing values that drop a large share of the rows. Each note names the column and says what to do.

Why: Titanic's ``alive`` (the target in words) was a default feature, the run scored test R2 1.00 and the summary
called it "as accurate as the forest"; 709 of 891 rows were dropped because ``deck`` is mostly empty, under a green
"Ready"; a taxi table's ``fare``, ``tip`` and ``tolls`` add up to its ``total``. The checks look at the raw columns of
the rows a run would use, at most ``SAMPLE_ROWS`` of them (seeded), so the Data page stays quick on large tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from get_core.data.encoding import DataSpec, Prepared

LEAK_R2 = 0.999  # a feature (or a weighted sum of them) this close to the target alone gives it away
MANY_DROPPED = 0.2  # a share of the table's rows dropped for a missing feature value worth a warning
NEAR_ONE = 0.02  # a weight within this of +-1 reads as "a part of the total"
MAX_LEVELS = 50  # a column with more distinct values is not checked as a relabelling of the target
SAMPLE_ROWS = 20_000


def dropped_rows_note(df: pd.DataFrame, spec: DataSpec, prepared: Prepared) -> str | None:
    """A sentence when missing feature values drop at least ``MANY_DROPPED`` of the table's rows, naming the
    columns that are missing most often among the rows that have a target, or None."""
    if prepared.n_dropped < MANY_DROPPED * len(df):
        return None
    with_target = df[df[spec.target].notna()]
    missing = with_target[list(spec.features)].isna().sum().sort_values(ascending=False, kind="stable")
    worst = [(name, int(n)) for name, n in missing.items() if n > 0][:3]
    named = ", ".join(f"'{name}' (empty in {n:,} rows)" for name, n in worst)
    first = f"'{worst[0][0]}'" if worst else "those columns"
    return (f"{prepared.n_dropped:,} of {len(df):,} rows are left out because a feature is missing in them, mostly "
            f"in {named}. Leave {first} out of the features, or choose to impute missing values, so the tree "
            "learns from all the rows.")


def leak_notes(df: pd.DataFrame, spec: DataSpec, prepared: Prepared) -> list[str]:
    """A sentence for each feature that alone predicts the target (almost) exactly, and one when the numeric features
    together add up to it (a linear fit with R2 >= ``LEAK_R2``); empty when none does. A class target (labels, not
    numbers) is checked for relabellings alone: an R2 of class codes would mean nothing."""
    rows = prepared.row_ids
    if len(rows) > SAMPLE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(rows, SAMPLE_ROWS, replace=False))
        y = pd.Series(prepared.y, index=prepared.row_ids).loc[rows].to_numpy()
    else:
        y = prepared.y
    frame = df.iloc[rows][list(spec.features)].reset_index(drop=True)
    classes = spec.task == "classification"
    if classes:
        y = np.unique(np.asarray(y, dtype=str), return_inverse=True)[1]
    if len(y) < 3 or np.ptp(y) == 0:
        return []
    notes = [note for name in spec.features if (note := _single_leak(frame[name], y, name, spec.target, classes))]
    if not notes and not classes:
        total = _sum_leak(frame, y, spec.target)
        if total:
            notes.append(total)
    return notes


def _single_leak(column: pd.Series, y: np.ndarray, name: str, target: str, classes: bool = False) -> str | None:
    known = column.notna().to_numpy()
    x, yk = column[known], y[known]
    if len(yk) < 3 or x.nunique() < 2:
        return None
    advice = (f"A tree given it scores near-perfectly on the test rows and learns nothing you can use: leave '{name}' "
              f"out of the features unless its value is known before '{target}' is.")
    if x.nunique() <= MAX_LEVELS and len(np.unique(yk)) <= MAX_LEVELS:
        pairs = pd.DataFrame({"x": x.to_numpy(), "y": yk}).drop_duplicates()
        if len(pairs) == x.nunique() == pairs["y"].nunique():
            return (f"'{name}' gives the target away: it is '{target}' under other names (each of its values goes "
                    f"with one value of '{target}' and back). {advice}")
    if classes:
        return None
    if pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x):
        r2 = np.corrcoef(x.to_numpy(dtype=float), yk)[0, 1] ** 2
    elif x.nunique() <= len(yk) / 2:  # a category's mean target: only a code shared by many rows can explain it
        means = pd.Series(yk).groupby(x.to_numpy()).transform("mean").to_numpy()
        r2 = 1 - np.sum((yk - means) ** 2) / np.sum((yk - yk.mean()) ** 2)
    else:
        return None
    if np.isfinite(r2) and r2 >= LEAK_R2:
        return f"'{name}' alone predicts '{target}' almost exactly (R² {r2:.4f} from it alone). {advice}"
    return None


def _sum_leak(frame: pd.DataFrame, y: np.ndarray, target: str) -> str | None:
    numeric = [c for c in frame.columns
               if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
    if len(numeric) < 2:
        return None
    X = frame[numeric].to_numpy(dtype=float)
    known = np.isfinite(X).all(axis=1)
    X, yk = X[known], y[known]
    if len(yk) <= len(numeric) + 1 or np.ptp(yk) == 0:
        return None
    design = np.column_stack([X, np.ones(len(yk))])
    coef, *_ = np.linalg.lstsq(design, yk, rcond=None)
    r2 = 1 - np.sum((yk - design @ coef) ** 2) / np.sum((yk - yk.mean()) ** 2)
    if not r2 >= LEAK_R2:
        return None
    weights = coef[:-1]
    parts = [name for name, w in zip(numeric, weights) if abs(abs(w) - 1) <= NEAR_ONE]
    if parts:
        named = ", ".join(f"'{p}'" for p in parts)
        what = f"{named} add up to '{target}' (each with a weight of about 1, as parts of a total)"
    else:
        contribution = np.abs(weights) * X.std(axis=0)
        top = [numeric[j] for j in np.argsort(-contribution)[:4] if contribution[j] > 0]
        what = f"a weighted sum of {', '.join(repr(str(t)) for t in top)} gives '{target}'"
    return (f"The features give the target away: {what}, R² {r2:.4f} from a straight-line fit. A tree given them "
            "learns arithmetic, not the data: leave out the ones that are not known before the target is.")
