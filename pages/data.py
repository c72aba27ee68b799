"""Data page: load a table (upload or bundled example), inspect its columns, choose the target and the features."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from get_core.data import classes, columns, leakage, reading
from get_core.data.encoding import DataSpec, Prepared, category_note, kept_missing_note, prepare
from pages import common

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
DELIMITERS = {"detect": None, ", comma": ",", "; semicolon": ";", "tab": "\t", "| pipe": "|", "spaces": " "}
WHAT_GET_IS = ("GET Explorer trains one **oblique decision tree**, whose splits weigh several features at once "
               "(0.8·temp − 0.3·vacuum ≤ 12), by optimizing the whole tree at once with gradients (GET, Mao & Cao, "
               "arXiv:2411.17003, 2024, a conference submission later withdrawn), and puts a random forest and CART "
               "of the same data beside it: one small tree you can read, often nearly as accurate as the forest. "
               "Start with a table and the number to predict.")
MISSING_LABELS = {"keep": "keep them: the tree learns where they go", "drop": "drop those rows",
                  "impute": "impute (median / most frequent value)"}
CATEGORY_LABELS = {"categories": "as categories: one term per column in a split (the tree's own encoding)",
                   "one-hot": "one-hot: a 0/1 input per value (the app encodes them)"}
# No example until the user picks one: opening the examples must not replace the table already prepared.
CHOICES = {"data_source": "Upload a file", "delimiter": "detect", "example": None}


@st.cache_data(show_spinner=False, max_entries=8)
def _read(content: bytes, name: str, delimiter: str | None) -> pd.DataFrame:
    return reading.read_table_bounded(content, name, delimiter=delimiter)


def data_page() -> None:
    st.title("Data")
    st.caption(WHAT_GET_IS)
    common.remember(list(CHOICES), CHOICES)
    source = st.radio("Source", ["Upload a file", "Example dataset"], horizontal=True, key="data_source")
    loaded = _load_upload() if source == "Upload a file" else _load_example()
    if loaded is not None:
        st.session_state["dataset"] = loaded
    dataset = st.session_state.get("dataset")
    if dataset is None:
        st.info("Upload a table (CSV, Parquet or Excel) or pick an example dataset to begin.")
        return
    if dataset.get("source", source) != source:  # the table came from the other source: not shown under this one
        st.info(f"{'Pick an example' if source == 'Example dataset' else 'Upload a table'} to use it instead. Until "
                f"then the Train page keeps **{common.plain(dataset['name'])}** as prepared before.")
        return
    df = dataset["df"]
    infos = columns.describe_columns(df)
    st.caption(f"**{common.plain(dataset['name'])}**: {len(df):,} rows × {df.shape[1]} columns. Row numbers in "
               "messages count data rows from 1 (the header is not a row).")
    if df.attrs.get("decimal_comma"):
        st.caption("Numbers with a decimal comma were read in "
                   + _names(df.attrs["decimal_comma"]) + " (e.g. 1.234,5 = 1234.5).")
    if df.attrs.get("formatted"):
        st.caption("Formatted numbers were read as numbers in " + _names(df.attrs["formatted"])
                   + ": currency signs, % and thousands separators removed (e.g. \\$1,200 = 1200, 12% = 12).")
    if df.attrs.get("multiline"):
        cells, row, column = df.attrs["multiline"]
        st.warning(f"{cells} cell{'s hold' if cells > 1 else ' holds'} line breaks, the first in row {row}, column "
                   f"{_names([column])}. If the data has no multi-line text, a quote is unbalanced there and the lines "
                   "after it were merged into that cell: fix the quote and upload again.")
    if df.attrs.get("uncached_formulas"):
        st.warning("Column" + ("s " if len(df.attrs["uncached_formulas"]) > 1 else " ")
                   + _names(df.attrs["uncached_formulas"]) + " hold formulas whose values were "
                   "never computed (the workbook was written by a program): open it in Excel or LibreOffice, save "
                   "it, and upload it again.")
    with st.expander("Preview (first 100 rows)", expanded=False):
        st.dataframe(df.head(100), hide_index=True)
    st.dataframe(_column_table(infos), hide_index=True)
    spec = _choose_columns(dataset, infos)
    try:
        prepared = prepare(df, spec)
    except columns.DataError as exc:
        st.session_state.pop("data_ready", None)
        st.error(common.plain(exc))
        return
    _show_prepared(prepared)
    for note in [leakage.dropped_rows_note(df, spec, prepared), *leakage.leak_notes(df, spec, prepared)]:
        if note:
            st.warning(common.plain(note))
    outliers = columns.outlier_notes(prepared.numbers, list(prepared.encoding.baseline_names))
    if outliers:
        st.warning("Far outliers: " + common.plain("; ".join(outliers)) + ". Is a value like 9999 a missing-value "
                   "code? Blank those cells, or choose robust scaling on the Train page.")
    st.session_state["data_ready"] = {
        "name": dataset["name"], "table": df[[spec.target, *spec.features]], "spec": spec.to_dict(),
        "n_rows": len(prepared.y), "n_features": prepared.n_inputs, "token": dataset["token"],
        "outliers": outliers}
    st.page_link("pages/train.py", label="Continue to Train", icon=":material/arrow_forward:")


def _load_upload() -> dict | None:
    delimiter = st.selectbox("Delimiter (text files)", list(DELIMITERS), key="delimiter",
                             help="'detect' tries comma, semicolon, tab, pipe and runs of spaces on the first lines.")
    uploaded = st.file_uploader(f"Upload CSV, Parquet or Excel (at most {reading.MAX_UPLOAD_MB} MB, "
                                f"{reading.limits.MAX_ROWS:,} rows, {reading.limits.MAX_COLUMNS} columns, "
                                f"{reading.limits.MAX_CELLS:,} cells)",
                                type=[suffix.lstrip(".") for suffix in reading.SUFFIXES], key="upload")
    if uploaded is None:
        return None
    return _load(uploaded.getvalue(), uploaded.name, DELIMITERS[delimiter], "Upload a file")


def _load_example() -> dict | None:
    files = sorted(p.name for p in EXAMPLES.glob("*.csv"))
    name = st.selectbox("Example dataset", files, key="example", placeholder="Choose an example",
                        help="Public regression tables bundled with the app; see data/examples/README.md.")
    return _load((EXAMPLES / name).read_bytes(), name, None, "Example dataset") if name else None


def _load(content: bytes, name: str, delimiter: str | None, source: str) -> dict:
    """The table read from ``content``, with the ``source`` (the Source radio's option) it came from."""
    token = f"{columns.fingerprint(content)[:12]}-{delimiter!r}"
    current = st.session_state.get("dataset")
    if current is not None and current["token"] == token:
        return current
    try:
        df = _read(content, name, delimiter)
    except columns.DataError as exc:
        for key in ("dataset", "data_ready"):
            st.session_state.pop(key, None)
        st.error(common.plain(exc))
        st.stop()
    return {"name": name, "df": df, "token": token, "source": source}


def _column_table(infos: list[columns.ColumnInfo]) -> pd.DataFrame:
    return pd.DataFrame({
        "column": [i.name for i in infos], "type": [i.kind.value for i in infos],
        "usable as feature": ["yes" if i.kind.usable else "no" for i in infos],
        "missing": [i.n_missing for i in infos], "distinct": [i.n_distinct for i in infos],
        "min": [i.minimum for i in infos], "max": [i.maximum for i in infos], "example": [i.example for i in infos]})


def _choose_columns(dataset: dict, infos: list[columns.ColumnInfo]) -> DataSpec:
    token, names = dataset["token"], [i.name for i in infos]
    kinds = {i.name: i.kind for i in infos}
    saved = st.session_state.get("data_choices", {})
    saved = saved if saved.get("token") == token else {}
    target_default = saved.get("target") or columns.default_target(infos) or names[-1]
    picked = f"target-picked-{token}"
    target = st.selectbox("Target (what the tree predicts)", names, index=names.index(target_default),
                          key=f"target-{token}", on_change=lambda: st.session_state.__setitem__(picked, True))
    if not st.session_state.get(picked) and target == target_default != "target":
        st.info(common.plain(f"The target was guessed: '{target}', the last numeric column. Choose the column you "
                             "want to predict."))
    task = _choose_task(dataset["df"][target], target, token, saved)
    candidates = [n for n in names if n != target]
    refused = [f"{_names([n])} ({kinds[n].value})" for n in candidates if not kinds[n].usable]
    if refused:
        st.info(f"Not offered by default: {', '.join(refused)}. Text, date, empty and mixed columns cannot be "
                "features; derive numbers from them first.")
    if saved.get("target") != target:  # a new target starts from every usable column again
        saved = {"missing": saved.get("missing", "keep"), "categories": saved.get("categories", "categories")}
    counters = [i.name for i in infos if i.row_index and i.name != target and kinds[i.name].usable]
    if counters:
        names = _names(counters)
        st.info(f"Not offered by default: {names}, which count{'s' * (len(counters) == 1)} the rows (0, 1, 2, ... "
                "or 1, 2, 3, ...): a saved row index, not data. A tree that splits on it learns the order of the "
                "file; add it back below if it really is a feature.")
    default = saved.get("features") or [n for n in candidates if kinds[n].usable and n not in counters]
    features = st.multiselect("Features", candidates, default=[f for f in default if f in candidates],
                              key=f"features-{token}-{target}")
    numeric = [f for f in features if kinds[f] is columns.ColumnKind.NUMERIC]
    categorical = st.multiselect("Also treat these numeric columns as categories (codes rather than quantities)",
                                 numeric, default=[c for c in saved.get("categorical", []) if c in numeric],
                                 key=f"categorical-{token}-{target}")
    has_categories = bool(categorical) or any(kinds[f] is columns.ColumnKind.CATEGORICAL for f in features)
    category_inputs = saved.get("categories", "categories")
    if has_categories:
        category_inputs = st.radio("Category columns", list(CATEGORY_LABELS), format_func=CATEGORY_LABELS.get,
                                   index=list(CATEGORY_LABELS).index(category_inputs), horizontal=True,
                                   key=f"categories-{token}",
                                   help="as categories: each split weighs every category of a column as one term, "
                                        "read as 'colour in {red, blue}'; one-hot: each category is an input of "
                                        "its own ('colour=red'), as runs were trained before")
    missing = st.radio("Rows with a missing feature value", list(MISSING_LABELS), format_func=MISSING_LABELS.get,
                       index=list(MISSING_LABELS).index(saved.get("missing", "keep")), horizontal=True,
                       key=f"missing-{token}",
                       help="keep: each split of the tree learns which way a row with a missing value goes (a "
                            "missing category sets none of its levels); drop: rows with one are left out; impute: "
                            "filled from the run's training rows")
    st.session_state["data_choices"] = {"token": token, "target": target, "features": features,
                                        "categorical": categorical, "missing": missing, "task": task,
                                        "categories": category_inputs}
    return DataSpec(target=target, features=tuple(features), categorical=tuple(categorical), missing=missing,
                    task=task, one_hot=category_inputs == "one-hot")


TASK_LABELS = {"classification": "a class", "regression": "a number"}


def _choose_task(series: pd.Series, target: str, token: str, saved: dict) -> str:
    """The target's task: recognized from the column, and asked in words where a class and a number both make
    sense (booleans, a few whole numbers), with the class counts shown."""
    kind = classes.target_kind(series, target)
    if kind.ask:
        default = saved.get("task") if saved.get("target") == target and saved.get("task") else kind.suggested
        task = st.radio(f"Predict a class or a number? {common.plain(kind.reason)}", list(TASK_LABELS),
                        index=list(TASK_LABELS).index(default), format_func=TASK_LABELS.get, horizontal=True,
                        key=f"task-{token}-{target}",
                        help="a class: the tree sorts rows into these classes and gives each class's probability "
                             "(accuracy, confusion matrix); a number: it predicts a value on a scale (R², RMSE), "
                             "where 2.5 between 2 and 3 means something")
    else:
        task = kind.suggested
        st.caption(common.plain(kind.reason))
    if task == "classification" and kind.counts:
        _show_classes(kind.counts, target)
    return task


def _show_classes(counts: tuple, target: str) -> None:
    """Each class with its rows and share, and a strong imbalance stated with balanced class weights offered."""
    total = sum(n for _, n in counts)
    st.dataframe(pd.DataFrame({"class": [common.plain(str(label)) for label, _ in counts],
                               "rows": [n for _, n in counts],
                               "share": [f"{100 * n / total:.1f}%" for _, n in counts]}),
                 hide_index=True, height=min(35 * (len(counts) + 1) + 3, 300))
    note = classes.imbalance_note(counts)
    if note is not None and len(counts) <= classes.MAX_CLASSES:
        st.info(common.plain(note))
        st.checkbox("Use balanced class weights in training", key="_balanced_offer",
                    value=st.session_state.get("_remembered", {}).get("cfg_class_weight") == "balanced",
                    on_change=_offer_balanced,
                    help="class_weight='balanced': each row weighs total rows / (classes × its class's rows), so "
                         "every class counts as much in training; the Train page shows the choice")


def _offer_balanced() -> None:
    """The Data page's offer of balanced class weights: the Train page's class-weight choice, set."""
    choice = "balanced" if st.session_state.get("_balanced_offer") else "none"
    st.session_state.setdefault("_remembered", {})["cfg_class_weight"] = choice


def _show_prepared(prepared: Prepared) -> None:
    columns = st.columns(4)
    columns[0].metric("Rows used", f"{len(prepared.y):,}")
    columns[1].metric("Dropped: no target", f"{prepared.n_target_missing:,}")
    columns[2].metric("Dropped: missing feature", f"{prepared.n_dropped:,}")
    columns[3].metric("Cells imputed", f"{sum(prepared.imputed.values()):,}")
    note = kept_missing_note(prepared)
    if note is not None:
        st.info(common.plain(note))
    if prepared.imputed:
        st.caption("Imputed: " + ", ".join(f"{_names([c])} {n} cells" for c, n in prepared.imputed.items())
                   + ". Each run fills them from its own training rows, so its test rows never shape the inputs.")
    encoding = prepared.encoding
    note = category_note(prepared)
    if note is not None:
        st.info(common.plain(note))
    for column, levels in encoding.categories.items():
        if encoding.one_hot:
            st.caption(f"One-hot encoded {_names([column])} → "
                       + common.plain(", ".join(f"{column}={level}" for level in levels)))
        else:
            st.caption(f"Categories of {_names([column])}: " + common.plain(", ".join(levels)))
    what = (f"classes of {_names([encoding.target])}" if encoding.task == "classification"
            else f"target {_names([encoding.target])}")
    st.success(f"Ready: {len(prepared.y):,} rows, {prepared.n_inputs} model inputs, {what}.")


def _names(names) -> str:
    """'a', 'b': column names quoted, shown literally."""
    return ", ".join(f"'{common.plain(n)}'" for n in names)


common.guarded(data_page)()
