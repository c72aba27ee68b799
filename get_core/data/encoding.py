"""Columns in, model inputs out: the user's choices (``DataSpec``), validated against the table and encoded.

``prepare`` checks the target and the features (every refusal a ``DataError`` naming the column or row), drops rows
with a missing target (a made-up target would be trained on), keeps, drops or imputes rows with a missing feature
(policy "keep": a missing number stays NaN, which the estimators learn where to send per split, and a missing
category sets none of its column's indicators; "impute": median for numeric, most frequent value for categorical)
and hands categorical columns to the estimators as categories (``DataSpec.one_hot`` False, the Data page's default:
X holds each row's raw values, numbers as floats and categories as their labels, and the estimator encodes a column
as one group, ``get_core.model.inputs``) or one-hot encodes them itself ("column=level" inputs; runs stored before
this choice existed). A run
learns its fill values and category levels from its training rows only (``prepare(..., fit_rows=...)``) and stores
that ``Encoding``, which rebuilds its rows and encodes new ones (the Predict page).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from get_core.data.classes import TASKS, as_label_array, check_classes, class_counts, class_labels
from get_core.data.columns import (MAX_CATEGORIES, MAX_FEATURES, MIN_ROWS, ColumnKind, DataError, as_float, column_kind,
                           first_non_number, text_label)
from get_core.model.inputs import RULES
from get_core.model.tree import ObliqueTree, feature_name_problem


MISSING_POLICIES = ("keep", "drop", "impute")
_UNSEEN, _MISSING = -1, -2  # level positions of a value training never had, and of a missing value
MAX_ABS = 1e150  # larger magnitudes overflow min-max ranges and squared errors in float64


@dataclass(frozen=True)
class DataSpec:
    """The user's choices on the Data page; stored with each run so the worker rebuilds X and y exactly."""

    target: str
    features: tuple[str, ...]
    categorical: tuple[str, ...] = ()  # numeric columns the user asked to one-hot encode as well
    missing: str = "drop"  # "keep" missing values for the tree, "drop" rows with one, or "impute" them
    task: str = "regression"  # or "classification": the target's values are classes (``get_core.data.classes``)
    one_hot: bool = True  # the app one-hot encodes categories (runs stored before); False: the estimator's groups

    def to_dict(self) -> dict[str, Any]:
        data = {"target": self.target, "features": list(self.features), "categorical": list(self.categorical),
                "missing": self.missing}
        data = data if self.one_hot else {**data, "one_hot": False}  # runs stored before: one-hot, no field
        return data if self.task == "regression" else {**data, "task": self.task}  # runs stored before: no task

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DataSpec":
        return cls(target=str(data["target"]), features=tuple(data["features"]),
                   categorical=tuple(data.get("categorical", ())), missing=str(data.get("missing", "drop")),
                   task=str(data.get("task", "regression")), one_hot=data.get("one_hot", True) is not False)


@dataclass(frozen=True)
class Encoding:
    """How raw columns become model inputs; ``transform`` applies it to new rows (e.g. on the Predict page). With
    ``one_hot`` False the inputs are the raw columns themselves (``feature_names`` == ``columns``): ``transform``
    gives each row's numbers (float) and category labels (text; None where missing) in an object array, which the
    estimators encode as one group per category column (``model_frame``); the baselines, which need numbers, get
    the one-hot twin's (``for_baselines``)."""

    target: str
    numeric: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]  # categorical column -> levels, one input "column=level" each
    impute: Mapping[str, Any]  # column -> fill value (empty when missing rows were dropped)
    feature_names: tuple[str, ...]  # model inputs, in X's column order
    columns: tuple[str, ...]  # raw feature columns, in the order the user chose them
    task: str = "regression"  # "classification": the target is read as class labels (``rows``)
    keep_missing: bool = False  # policy "keep": a missing number stays NaN, a missing category sets no indicator
    one_hot: bool = True  # False: categories go to the estimator as labels (encodings stored before: one-hot)

    def to_dict(self) -> dict[str, Any]:
        data = {"target": self.target, "numeric": list(self.numeric),
                "categories": {k: list(v) for k, v in self.categories.items()}, "impute": dict(self.impute),
                "feature_names": list(self.feature_names), "columns": list(self.columns)}
        data = data if self.task == "regression" else {**data, "task": self.task}
        data = data if self.one_hot else {**data, "one_hot": False}
        return {**data, "keep_missing": True} if self.keep_missing else data  # encodings stored before: no field

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Encoding":
        return cls(target=data["target"], numeric=tuple(data["numeric"]),
                   categories={k: tuple(v) for k, v in data["categories"].items()}, impute=dict(data["impute"]),
                   feature_names=tuple(data["feature_names"]), columns=tuple(data["columns"]),
                   task=data.get("task", "regression"), keep_missing=data.get("keep_missing", False) is True,
                   one_hot=data.get("one_hot", True) is not False)

    @classmethod
    def from_json(cls, data: Any) -> "Encoding":
        """``from_dict`` for an encoding from a file anyone may have edited (a model JSON): every field is checked,
        so a bad one is refused here by name (ValueError) instead of failing, or mis-encoding, on the Predict page."""
        if not isinstance(data, dict):
            raise ValueError(f"it must be an object; got {type(data).__name__}")
        if not isinstance(data.get("target"), str):
            raise ValueError("field 'target' must be a string")
        columns = _distinct_texts(data.get("columns"), "columns")
        numeric = _distinct_texts(data.get("numeric"), "numeric")
        raw_categories = data.get("categories")
        if not isinstance(raw_categories, dict):
            raise ValueError("field 'categories' must be an object")
        categories = {c: _distinct_texts(levels, f"categories.{c}") for c, levels in raw_categories.items()}
        if not columns or data["target"] in columns:
            raise ValueError("field 'columns' must name at least one column, not the target")
        if sorted([*numeric, *categories]) != sorted(columns):
            raise ValueError("fields 'numeric' and 'categories' must share out the 'columns' between them")
        impute = data.get("impute")
        if not isinstance(impute, dict) or not all(c in columns and _fill_fits(v, categories.get(c))
                                                   for c, v in impute.items()):
            raise ValueError("field 'impute' must map columns to a fill value (a level's text for a categorical "
                             "column, a finite number for a numeric one)")
        if data.get("task", "regression") not in TASKS:
            raise ValueError(f"field 'task' must be one of {', '.join(TASKS)}")
        if not isinstance(data.get("keep_missing", False), bool):
            raise ValueError("field 'keep_missing' must be true or false")
        if not isinstance(data.get("one_hot", True), bool):
            raise ValueError("field 'one_hot' must be true or false")
        if data.get("one_hot", True) is False:
            if data.get("feature_names") != list(columns):
                raise ValueError("field 'feature_names' must repeat 'columns' when 'one_hot' is false (the raw columns "
                                 "are the model's inputs)")
        elif data.get("feature_names") != _input_names(columns, categories):
            raise ValueError("field 'feature_names' must list the model inputs of 'columns': each numeric column, "
                             "and 'column=level' for each level of a categorical one")
        return cls.from_dict(data)

    @classmethod
    def of_model(cls, tree: ObliqueTree) -> "Encoding":
        """The encoding of a model saved without its run's: the raw columns its ``inputs`` read (numbers, whose
        holes the tree fills by its own rule, and category columns as their labels, any level typed), or for a tree
        of plain inputs each input a numeric column of that name, which must be filled."""
        if tree.inputs is None:
            names = tuple(tree.feature_names)
            return cls(target="", numeric=names, categories={}, impute={}, feature_names=names, columns=names)
        columns = tree.inputs.columns
        categories = {c.name: c.categories for c in columns if c.kind == "category"}
        names = tuple(tree.inputs.names)
        return cls(target="", numeric=tuple(c.name for c in columns if c.kind == "number"), categories=categories,
                   impute={}, feature_names=names, columns=names, keep_missing=True, one_hot=not categories)

    @property
    def baseline_names(self) -> tuple[str, ...]:
        """The inputs' names as the baselines see them (``for_baselines``): one-hot "column=level" for categories."""
        return self.feature_names if self.one_hot else tuple(_input_names(self.columns, self.categories))

    def for_baselines(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``transform`` as numbers for the baselines (CART, forest, HistGradientBoosting), which take no
        text: raw rows one-hot encoded with the levels learned from the training rows (a missing or unseen category
        sets none of its column's indicators; a missing number stays NaN, which scikit-learn's trees route); X
        itself for a one-hot encoding."""
        if self.one_hot:
            return X
        return self.as_one_hot().transform(pd.DataFrame(X, columns=list(self.columns)))

    def as_one_hot(self) -> "Encoding":
        """The one-hot twin of an encoding without ``one_hot``: the same columns and levels, a "column=level" input
        each, a missing value kept (NaN for a number, no indicator for a category), as its rows already are."""
        return replace(self, one_hot=True, feature_names=self.baseline_names, keep_missing=True)

    def rows(self, df: pd.DataFrame, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """X and y of the table's rows ``row_ids`` (0-based), encoded exactly as when the run was trained."""
        frame = df.iloc[row_ids].set_axis(np.asarray(row_ids) + 1, axis=0)
        if self.task == "classification":
            return self.transform(frame), as_label_array(class_labels(frame[self.target]))
        return self.transform(frame), as_float(frame[self.target])

    def unseen_levels(self, df: pd.DataFrame) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Per categorical column of ``df``: (rows, distinct values) of values the training rows never had; such rows
        are scored with all of that column's indicators at 0, which the user should be told."""
        unseen = {}
        for column, levels in self.categories.items():
            if column in df.columns:
                codes, labels, legacy = _distinct_labels(df[column])
                new = [i for i, (label, old) in enumerate(zip(labels, legacy))  # a blank label is missing (raw)
                       if label not in levels and old not in levels and (label or self.one_hot)]
                if new:
                    rows = int(np.isin(codes, new).sum())
                    unseen[column] = (rows, tuple(sorted({labels[i] for i in new})))
        return unseen

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """X (n, len(feature_names)) for new rows; raises DataError naming the first row ``encode`` cannot encode
        (rows a run trains on are validated before, so this never refuses them)."""
        X, problems = self.encode(df)
        if problems:
            position, reason = next(iter(problems.items()))
            row = df.index[position]
            raise DataError(f"Column {reason} in row {row}: fix or fill that cell.",
                            row=int(row) if isinstance(row, (int, np.integer)) else None)
        return X

    def encode(self, df: pd.DataFrame) -> tuple[np.ndarray, dict[int, str]]:
        """X (n, len(feature_names)) for new rows, and the rows it cannot encode (0-based position -> reason, in row
        order; their rows of X are NaN): a missing value training did not fill (unless the encoding keeps them), a
        cell that is not a number or one too large to compute with. Unseen categories get all-zero indicators, and
        so do missing ones when the encoding keeps them; without ``one_hot`` a category is its label (an object
        array), which the tree reads by the same rules. Raises DataError only for a missing column."""
        missing_columns = [c for c in self.columns if c not in df.columns]
        if missing_columns:
            raise DataError(f"Column '{missing_columns[0]}' is missing: the model was trained with columns "
                            f"{', '.join(self.columns)}.", column=missing_columns[0])
        first = np.full(len(df), -1)  # per row, its first problem in column order (index in reasons); -1: none
        reasons: list[str] = []
        blocks = []
        for column in self.columns:
            series = df[column]
            if column in self.categories:
                levels = self.categories[column]
                fill = self.impute.get(column)
                if self.one_hot:
                    position = _level_positions(series, levels, None if fill is None else str(fill))
                    absent = position == _MISSING
                    blocks.append((position[:, None] == np.arange(len(levels))).astype(np.float64))
                else:  # the labels; a blank one is missing, as the tree reads it (``inputs.label_of``)
                    labels = _labels(series)
                    blank = labels.fillna("").eq("").to_numpy(dtype=bool)
                    labels = labels.astype(object).to_numpy()
                    absent = blank & (fill is None)
                    blocks.append(np.where(blank, None if fill is None else str(fill), labels))
                if not self.keep_missing:
                    _note(first, reasons, absent, f"'{column}' is empty")
            else:
                numbers, blank = as_float(series), series.isna().to_numpy()
                if column in self.impute:
                    numbers = np.where(blank, float(self.impute[column]), numbers)
                too_large = f"is beyond ±{MAX_ABS:.0e} (too large to compute with)"
                empty = np.isnan(numbers) & ~(blank & self.keep_missing)
                for rows, problem in ((np.isnan(numbers) & ~blank, "is not a number"), (empty, "is empty"),
                                      (np.isinf(numbers), "is infinite"), (np.abs(numbers) > MAX_ABS, too_large)):
                    _note(first, reasons, rows, f"'{column}' {problem}")
                blocks.append(numbers)
        raw = not self.one_hot and bool(self.categories)
        X = (np.column_stack([np.asarray(b, dtype=object) for b in blocks]) if raw
             else np.column_stack(blocks) if blocks else np.empty((len(df), 0)))
        bad = np.flatnonzero(first >= 0)
        X[bad] = np.nan
        return X, {int(i): reasons[first[i]] for i in bad}


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
    kept_missing: Mapping[str, int] = field(default_factory=dict)  # column -> missing cells left to the tree ("keep")

    @property
    def feature_names(self) -> list[str]:
        return list(self.encoding.feature_names)

    @property
    def n_inputs(self) -> int:
        """Numbers the model reads per row: a number column one, a category column one per level (one-hot, or the
        estimator's group), the size training time depends on."""
        return len(self.encoding.baseline_names)

    @property
    def numbers(self) -> np.ndarray:
        """X as numbers (``Encoding.for_baselines``): what numeric checks such as far outliers look at."""
        return self.encoding.for_baselines(self.X)


@dataclass(frozen=True)
class _Usable:
    """The rows a run can use, validated, before anything is learned from them."""

    frame: pd.DataFrame  # the feature columns of those rows, raw
    row_ids: np.ndarray  # their 0-based positions in the table
    y: np.ndarray
    categorical: list[str]  # feature columns to one-hot encode
    n_target_missing: int
    n_dropped: int


def usable_rows(df: pd.DataFrame, spec: DataSpec) -> np.ndarray:
    """The 0-based table positions of the rows ``prepare`` would keep (validated, not encoded): what a run splits
    into train and test before its encoding learns from the training part."""
    return _usable(df, spec).row_ids


def prepare(df: pd.DataFrame, spec: DataSpec, fit_rows: np.ndarray | None = None) -> Prepared:
    """Validate the user's choices against the table and encode it; raises DataError naming the problem.

    ``fit_rows`` (positions among the usable rows, i.e. rows of the returned X) are the rows the encoding learns
    from: fill values and category levels. A run passes its training rows, so that nothing about its test rows
    shapes the inputs; by default every usable row (the Data page's preview).
    """
    usable = _usable(df, spec)
    frame, row_ids, categorical = usable.frame, usable.row_ids, usable.categorical
    fit = frame if fit_rows is None else frame.iloc[np.asarray(fit_rows, dtype=np.int64)]
    holes = {c: n for c in spec.features if (n := int(frame[c].isna().sum()))}
    keep = spec.missing == "keep"
    imputed = {} if keep else holes
    impute = {c: _fill_value(fit[c], c, c in categorical) for c in imputed}
    categories = {c: tuple(sorted(_labels(fit[c]).dropna().unique())) for c in categorical}
    for column, levels in categories.items():
        if len(levels) > MAX_CATEGORIES:
            raise DataError(f"Column '{column}' has {len(levels)} distinct values; a categorical column may have at "
                            f"most {MAX_CATEGORIES}: deselect it or group its values.", column=column)
    names = _input_names(spec.features, categories)
    problem = feature_name_problem(names)
    if problem:  # 'a=b' twice: a numeric column of that name and level 'b' of column 'a'; or a name no file can hold
        raise DataError(f"The model inputs need distinct names that a file can hold, but {problem}: rename that "
                        "column.")
    if len(names) > MAX_FEATURES:
        raise DataError(f"The chosen columns make {len(names)} model inputs (a number each, a category column one "
                        f"per value); the limit is {MAX_FEATURES}: deselect some columns or categorical columns with "
                        "many values.")
    one_hot = spec.one_hot or not categories  # without categories both are the same numbers, stored as before
    encoding = Encoding(target=spec.target, numeric=tuple(c for c in spec.features if c not in categories),
                        categories=categories, impute=impute,
                        feature_names=tuple(names) if one_hot else tuple(spec.features),
                        columns=tuple(spec.features), task=spec.task, keep_missing=keep, one_hot=one_hot)
    X = encoding.transform(frame.set_axis(row_ids + 1, axis=0))  # "row" numbers in messages from transform
    return Prepared(X=X, y=usable.y, encoding=encoding, row_ids=row_ids, n_target_missing=usable.n_target_missing,
                    n_dropped=usable.n_dropped, imputed=imputed, kept_missing=holes if keep else {})


def model_frame(X: np.ndarray, names: Sequence[str]) -> pd.DataFrame:
    """A run's X as the table the estimators fit on: a column of labels (text, None where missing; ``Encoding`` with
    ``one_hot`` False) as pandas categories, so that ``categorical_features="from_dtype"`` reads it as one group even
    where its labels read as numbers (codes such as '1', '2'); numbers as float64."""
    frame = pd.DataFrame(X, columns=list(names))
    if X.dtype != object:
        return frame
    return frame.apply(lambda c: c.astype("category") if any(v is None or isinstance(v, str) for v in c)
                       else c.astype(np.float64))


def category_note(prepared: Prepared) -> str | None:
    """What the tree will do with the category columns the estimator encodes (``Encoding.one_hot`` False), in the
    words of ``get_core.model.inputs.RULES`` (None without such columns)."""
    if prepared.encoding.one_hot:
        return None
    named = _listed([repr(c) for c in prepared.encoding.categories])
    return f"Categories ({named}): {RULES['category']}; {RULES['unseen']}."


def kept_missing_note(prepared: Prepared) -> str | None:
    """What the tree does with the missing values policy "keep" leaves in, in a sentence per kind of column (None
    when nothing is missing): the Data page says it, so that no one imputes by hand what the tree learns."""
    if not prepared.kept_missing:
        return None
    rows = max(1, len(prepared.row_ids))
    parts = [f"{_share(n, rows)} of '{c}'" for c, n in prepared.kept_missing.items()]
    categorical = [c for c in prepared.kept_missing if c in prepared.encoding.categories]
    said = f"{_listed(parts)} {'is' if len(parts) == 1 else 'are'} missing: no row is dropped or filled in; "
    if not prepared.encoding.one_hot:  # the estimator's own rule (get_core.model.inputs)
        return said + RULES["missing"] + "."
    text = said + "each split of the tree learns which way those rows go."
    if categorical:
        text += (f" A missing {_listed([repr(c) for c in categorical], 'or')} sets none of its levels, so it reads "
                 "as a level of its own.")
    return text


def _share(n: int, rows: int) -> str:
    share = 100 * n / rows
    return f"{share:.0f}%" if share >= 1 else f"{n:,} row{'s' * (n != 1)}"


def _listed(parts: Sequence[str], last: str = "and") -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} {last} {parts[-1]}"


def _usable(df: pd.DataFrame, spec: DataSpec) -> _Usable:
    _check_spec(df, spec)
    kinds = {c: column_kind(df[c]) for c in (spec.target, *spec.features)}
    classify = spec.task == "classification"
    if classify:
        _check_class_target_kind(spec.target, kinds[spec.target])
    else:
        _check_target_kind(df, spec.target, kinds[spec.target])
    _check_feature_kinds(df, spec, kinds)
    categorical = [c for c in spec.features if kinds[c] is ColumnKind.CATEGORICAL or c in spec.categorical]

    target = class_labels(df[spec.target]) if classify else as_float(df[spec.target])
    keep = target != None if classify else ~np.isnan(target)  # noqa: E711 (labels: an object array)
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
    if classify:
        check_classes(class_counts(y), spec.target)
        y = as_label_array(y)
    elif np.ptp(y) == 0:
        raise DataError(f"Target '{spec.target}' has the same value ({y[0]:g}) in every usable row: a tree "
                        "cannot learn anything from it; choose another target.", column=spec.target)
    return _Usable(frame=frame, row_ids=row_ids, y=y, categorical=categorical, n_target_missing=n_target_missing,
                   n_dropped=n_dropped)


def _input_names(columns: Sequence[str], categories: Mapping[str, Sequence[str]]) -> list[str]:
    """Model input names: a numeric column's own, one 'column=level' per level of a categorical column."""
    names: list[str] = []
    for column in columns:
        names.extend([f"{column}={level}" for level in categories[column]] if column in categories else [column])
    return names


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
    problem = feature_name_problem([spec.target, *spec.features])  # distinct by now: only unwritable text is left
    if problem:
        raise DataError(f"Column names must be text that a file can hold, but {problem}: rename that column.")
    for column in (spec.target, *spec.features):
        copies = int(np.count_nonzero(df.columns == column))
        if copies > 1:
            raise DataError(f"The table has {copies} columns named '{column}': rename them so that each column has a "
                            "name of its own.", column=column)
        if pd.api.types.is_complex_dtype(df[column]):
            raise DataError(f"Column '{column}' holds complex numbers; GET needs real numbers: put the real and "
                            "imaginary parts in columns of their own, or deselect it.", column=column)
    if spec.missing not in MISSING_POLICIES:
        raise DataError(f"Missing values policy must be one of {MISSING_POLICIES}; got {spec.missing!r}.")
    if spec.task not in TASKS:
        raise DataError(f"The task must be one of {TASKS}; got {spec.task!r}.")


def _check_target_kind(df: pd.DataFrame, target: str, kind: ColumnKind) -> None:
    if kind is ColumnKind.NUMERIC:
        refuse_too_large(as_float(df[target]), np.arange(1, len(df) + 1), target, "Target")
        return
    if kind is ColumnKind.MIXED:
        row, value = first_non_number(df[target])
        raise DataError(f"Target '{target}' holds numbers but row {row} has '{value}': fix or clear the "
                        "non-numeric cells (empty cells count as missing).", column=target, row=row)
    if kind is ColumnKind.EMPTY:
        raise DataError(f"Target '{target}' is empty (every value is missing): choose another target.",
                        column=target)
    example = str(df[target].dropna().iloc[0])[:30]
    raise DataError(f"Target '{target}' is not numeric (it is {kind.value}, e.g. '{example}'); GET fits "
                    "regression trees: choose a numeric target.", column=target)


def _check_class_target_kind(target: str, kind: ColumnKind) -> None:
    if kind is ColumnKind.EMPTY:
        raise DataError(f"Target '{target}' is empty (every value is missing): choose another target.",
                        column=target)
    if kind is ColumnKind.DATETIME:
        raise DataError(f"Target '{target}' holds dates, which are not classes: derive a class (such as the year or "
                        "the month) in a column of its own, or choose another target.", column=target)


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
        row = first_non_number(df[first])[0] if kinds[first] is ColumnKind.MIXED else None
        where = f" (first bad cell: row {row})" if row else ""
        raise DataError(f"Column{'s' if len(refused) > 1 else ''} {', '.join(parts)} cannot be used as "
                        f"feature{'s' if len(refused) > 1 else ''}{where}: deselect "
                        f"{'them' if len(refused) > 1 else 'it'} ({reasons}).", column=first, row=row)
    for column in spec.features:
        if kinds[column] is ColumnKind.NUMERIC:
            refuse_too_large(as_float(df[column]), np.arange(1, len(df) + 1), column)


def refuse_too_large(numbers: np.ndarray, rows: Any, column: str, what: str = "Column") -> None:
    """Infinite values, and finite ones beyond ``MAX_ABS`` (min-max ranges and squared errors overflow), named by
    the row number in ``rows`` of the first one."""
    bad = np.abs(numbers) > MAX_ABS
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        value = numbers[position]
        size = "infinite" if np.isinf(value) else f"{value:.3g}, beyond ±{MAX_ABS:.0e} (too large to compute with)"
        raise DataError(f"{what} '{column}' is {size} in row {rows[position]}: fix or clear that cell.",
                        column=column, row=int(rows[position]))


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
        values = _labels(series).dropna()
        fill = str(values.mode().iloc[0]) if len(values) else None
    else:
        numbers = as_float(series)
        numbers = numbers[~np.isnan(numbers)]
        fill = float(np.median(numbers)) if len(numbers) else None
    if fill is None:
        raise DataError(f"Column '{column}' has no value in the rows used for training, so its missing cells cannot "
                        "be imputed: deselect it or fill it in.", column=column)
    return fill


def _labels(series: pd.Series) -> pd.Series:
    """A categorical column's values as level labels (``_distinct_labels``); missing values stay missing."""
    codes, labels, _ = _distinct_labels(series)
    return pd.Series(np.array(labels + [None], dtype=object)[codes], index=series.index, dtype="string")


def _distinct_labels(series: pd.Series) -> tuple[np.ndarray, list[str], list[str]]:
    """(codes, labels, legacy): per row the index of its distinct value (-1 if missing), and each distinct value as
    a level label and as labels were spelled before (runs stored earlier). Each distinct value is spelled once.

    Labels are stripped text, with whole numbers spelled one way whatever the column's dtype (1, 1.0, a nullable
    Int64 1 and the text '1.0' are all '1'), so rows read from a file with a blank (floats), one without (ints) or
    one where another cell made the column text encode alike; the earlier spelling was ``str(value)`` ('1.0' in a
    float column). Other text is kept as written: '007' and '1.10' stay codes, distinct from '7' and '1.1'."""
    codes, values = pd.factorize(series)
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        spell = text_label
    elif pd.api.types.is_integer_dtype(series):  # exact: IDs beyond 2**53 must not merge through floats
        spell = lambda v: str(int(v))  # noqa: E731
    else:
        spell = lambda v: _number_label(float(v))  # noqa: E731
    return codes, [spell(v) for v in values], [str(v).strip() for v in values]


def _level_positions(series: pd.Series, levels: Sequence[str], fill: str | None) -> np.ndarray:
    """Per row, the position in ``levels`` of its value: -1 (``_UNSEEN``) for a value the training rows never had,
    ``_MISSING`` for a missing one without ``fill``. A level spelled the earlier way (a run stored before) matches
    first, so a row sets at most one indicator."""
    codes, labels, legacy = _distinct_labels(series)
    where = {level: i for i, level in enumerate(levels)}
    per_value = [where.get(old, where.get(label, _UNSEEN)) for label, old in zip(labels, legacy)]
    missing = _MISSING if fill is None else where.get(fill, _UNSEEN)
    return np.array(per_value + [missing], dtype=np.int64)[codes]


def _number_label(value: float) -> str:
    return str(int(value)) if np.isfinite(value) and value.is_integer() else repr(float(value))


def _note(first: np.ndarray, reasons: list[str], rows: np.ndarray, reason: str) -> None:
    """Record ``reason`` as the first problem of ``rows`` (a boolean mask) that have none yet."""
    new = rows & (first < 0)
    if new.any():
        first[new] = len(reasons)
        reasons.append(reason)


def _distinct_texts(value: Any, field_name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(set(value)) != len(value):
        raise ValueError(f"field '{field_name}' must be a list of distinct strings")
    return tuple(value)


def _fill_fits(value: Any, levels: Sequence[str] | None) -> bool:
    """A categorical column's fill is one of its ``levels``; a numeric column's (None) a number within ``MAX_ABS``."""
    if levels is not None:
        return isinstance(value, str) and value in levels
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= MAX_ABS
