"""Predict page: score uploaded rows or one typed row, and show each row's decision path with margins and the
largest contributions; download the scored rows as CSV. Works with a run's model or a model JSON file."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd
import streamlit as st

from get_core.data import csv_out, reading

from get_core.model import model_file
from get_core.data.encoding import Encoding
from get_core.errors import GETExplorerError
from get_core.model.inputs import RULES
from get_core.model.tree import ObliqueTree
from get_core.views import class_node, explain, labels
from pages import common, results_ui, what_if_ui

MAX_SHOWN = 1000  # rows displayed; the CSV download holds all of them
MAX_LISTED = 10  # rows that cannot be scored named one by one


def predict_page() -> None:
    st.title("Predict")
    source = results_ui.choose_model()
    if source is None:
        return
    tree = source.tree
    encoding = source.results.encoding if source.results is not None else model_file.model_encoding(tree)
    target = source.results.target if source.results is not None else encoding.target if encoding else None
    if encoding is None and tree.inputs is not None:  # a bare model file fitted on raw columns (categories, holes)
        encoding = Encoding.of_model(tree)
    columns = list(encoding.columns) if encoding is not None else list(tree.feature_names)
    st.caption(f"The rows need the model's {len(columns)} input columns: "
               + ", ".join(f"'{common.plain(c)}'" for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
               + (f" (a '{common.plain(target)}' column may be present; it is ignored)." if target else "."))
    reference = source.results.X_train if source.results is not None and source.results.has_data else None
    scope = hashlib.sha1(source.label.encode()).hexdigest()[:10]
    upload_tab, form_tab = st.tabs(["Upload rows", "Type one row"])
    with upload_tab:
        _upload(tree, encoding, target, reference, scope)
    with form_tab:
        _one_row(tree, encoding, scope, reference)


def _upload(tree: ObliqueTree, encoding: Encoding | None, target: str | None, reference, scope: str) -> None:
    upload = st.file_uploader("Rows to score (CSV, Parquet or Excel)", key="predict_file",
                              type=["csv", "tsv", "txt", "parquet", "pq", "xlsx", "xlsm"])
    if upload is None:
        return
    try:
        table = reading.read_table_bounded(upload.getvalue(), upload.name, training=False)
        explain.check_scorable(tree, len(table), table.shape[1], upload.name)
        rows = explain.rows_to_X(tree, table, encoding)
    except GETExplorerError as exc:
        st.error(common.plain(f"{upload.name}: {exc}"))
        return
    scored = explain.scored_table(tree, table, rows)
    _say_what_was_left_out(rows, target)
    for column, (n, values) in (encoding.unseen_levels(table) if encoding is not None else {}).items():
        rule = RULES["unseen"] if not encoding.one_hot else f"scored with every '{column}=...' input at 0"
        st.warning(common.plain(f"Column '{column}': {n:,} row{'s' * (n > 1)} hold{'s' * (n == 1)} "
                                + ", ".join(f"'{v}'" for v in values[:5]) + (" ..." if len(values) > 5 else "")
                                + f", never seen in training; {rule}."))
    st.dataframe(scored.head(MAX_SHOWN), hide_index=True)
    if len(scored) > MAX_SHOWN:
        st.caption(f"Showing the first {MAX_SHOWN:,} rows; the CSV has all {len(scored):,}.")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", upload.name.rsplit(".", 1)[0]) or "rows"
    common.download(st, "Download predictions (CSV)", csv_out.csv_bytes(scored),
                    f"{stem}_predictions.csv", "text/csv", key="dl_predictions")
    row = st.number_input("Explain row", 1, len(scored), 1, step=1, key="explain_row",
                          help="Row number in the uploaded file (1 = first data row)")
    if int(row) in rows.problems:
        st.info(common.plain(f"Row {int(row)} cannot be scored: {rows.problems[int(row)]}."))
    else:
        x = rows.X[int(row) - 1]
        _explanation(tree, x)
        _what_if(tree, x, encoding, reference, f"{scope}_file_{int(row)}")


def _say_what_was_left_out(rows: explain.Rows, target: str | None) -> None:
    """Rows the model cannot score, and columns it does not use, do not refuse the file: say which they are."""
    n, bad = len(rows.X), sorted(rows.problems.items())
    if bad:
        listed = "; ".join(f"row {row}: {reason}" for row, reason in bad[:MAX_LISTED])
        more = f"; and {len(bad) - MAX_LISTED:,} more" if len(bad) > MAX_LISTED else ""
        st.warning(common.plain(f"Scored {n - len(bad):,} of {n:,} rows. {len(bad):,} cannot be scored and are left "
                                f"empty in the predictions ({listed}{more})."))
    else:
        st.success(f"Scored {n:,} rows.")
    ignored = [c for c in rows.ignored if c != target]  # the caption above already says the target is ignored
    if ignored:
        st.info(common.plain(f"Ignored column{'s' * (len(ignored) > 1)} the model does not use: "
                             f"{explain.quoted(ignored)}."))


def _one_row(tree: ObliqueTree, encoding: Encoding | None, scope: str, reference) -> None:
    """``scope`` names the model: each keeps its own typed values, and shows a result only once Predict is pressed
    for it."""
    with st.form(f"one_row_{scope}"):
        values = {}
        if encoding is not None:
            for i, column in enumerate(encoding.columns):
                key = f"one_row_{scope}_{i}"
                if column in encoding.categories and not encoding.one_hot:  # a level, a new value, or missing
                    levels = list(encoding.categories[column])
                    values[column] = st.selectbox(
                        common.plain(column), levels + [labels.MISSING_LEVEL] * encoding.keep_missing, key=key,
                        accept_new_options=True, help=f"one of its training categories, {labels.MISSING_LEVEL}, or "
                                                      f"type another ({RULES['unseen']})")
                    values[column] = None if values[column] == labels.MISSING_LEVEL else values[column]
                elif column in encoding.categories:
                    values[column] = st.selectbox(common.plain(column), encoding.categories[column], key=key)
                else:
                    values[column] = st.number_input(common.plain(column), value=_middle(tree, column), format="%g",
                                                     key=key)
        else:
            for j, name in enumerate(tree.feature_names):
                values[name] = st.number_input(common.plain(name), value=_middle(tree, name), format="%g",
                                               key=f"one_row_{scope}_{j}")
        submitted = st.form_submit_button("Predict")
    if not submitted and f"one_row_done_{scope}" not in st.session_state:
        st.caption("Values start at the middle of each feature's training "
                   + ("1st-99th percentiles." if tree.scaling == "robust" else "range."))
        return
    st.session_state[f"one_row_done_{scope}"] = True
    table = pd.DataFrame([values])
    try:
        rows = explain.rows_to_X(tree, table, encoding)
    except explain.ColumnMismatch as exc:
        st.error(common.plain(exc))
        return
    if rows.problems:
        st.error(common.plain(f"This row cannot be scored: {rows.problems[1]}."))
        return
    _explanation(tree, rows.X[0])
    typed = hashlib.sha1(repr(rows.X[0].tolist()).encode()).hexdigest()[:8]
    _what_if(tree, rows.X[0], encoding, reference, f"{scope}_typed_{typed}")


def _what_if(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, reference, scope: str) -> None:
    """The two what-if tools for the row explained above; ``scope`` keeps each row's own answers."""
    change_tab, edit_tab = st.tabs(["What would change this?", "What if?"])
    with change_tab:
        what_if_ui.what_would_change(tree, x, encoding, reference, scope)
    with edit_tab:
        what_if_ui.what_if_editor(tree, x, encoding, scope)


def _explanation(tree: ObliqueTree, x: np.ndarray) -> None:
    result = explain.explain_row(tree, x)
    cols = st.columns(3)
    if tree.is_classifier:
        cols[0].metric("Predicted class", labels.class_name(result["prediction"]))
    else:
        cols[0].metric("Prediction", common.number(result["prediction"], 6))
    cols[1].metric("Leaf", result["leaf"])
    cols[2].markdown("Path  \n" + " \u2192 ".join(map(str, result["path"])))  # wraps: a metric cut it to "1 → 2 → …"
    steps = pd.DataFrame([{
        "node": s["node"], "goes": s["direction"], "condition it meets": s["rule"],
        "margin (a\u00b7x \u2212 b)": s["margin"], "weighted sum": s["lhs"], "threshold": s["threshold"],
        "largest contributions": "; ".join(f"{c['feature']}: {c['weight']:.4g} \u00d7 ({c['value']:.4g} \u2212 "
                                          f"{c['reference']:.4g}) = {c['term']:+.4g}" for c in s["contributions"]),
    } for s in result["steps"]])
    st.dataframe(steps, hide_index=True)
    middle = "1st\u201399th percentiles" if tree.scaling == "robust" else "range"
    st.caption("At each node the row goes left when the margin is \u2264 0. Contributions are weight \u00d7 (value "
               f"\u2212 the middle of the feature's training {middle}): how far this row's value moves the weighted "
               "sum from a mid-range row's, largest first. A feature that barely varies contributes little, however "
               "large its values.")
    if tree.is_classifier:
        st.code(f"leaf {result['leaf']}: class {result['leaf_model']}", language=None)
        st.dataframe(pd.DataFrame({"class": [labels.class_name(c) for c in tree.classes],
                                   "probability": [labels.percent(p) for p in result["probabilities"]]}),
                     hide_index=True)
        st.plotly_chart(class_node.shares_figure(tree, result["leaf"]), key=f"row_shares_{result['leaf']}")
        return
    st.code(f"leaf {result['leaf']}: y = {result['leaf_model']}", language=None)
    if result["clamped"]:
        st.caption("This row's value of the leaf's line lies outside the range of targets the leaf saw in training, "
                   "so the prediction is that range's nearer end.")


def _middle(tree: ObliqueTree, name: str) -> float:
    if name not in tree.feature_names:
        return 0.0
    j = tree.feature_names.index(name)
    return float(f"{tree.x_min[j] + tree.x_scale[j] / 2:.4g}")


common.guarded(predict_page)()
