"""Compare page: the run's GET tree beside its baselines at their usual settings (depth-tuned CART, the forest,
HistGradientBoosting) and GET with the other kind of splits, on the same test rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from get_core import baselines as baseline_models
from get_core.runs import results as run_results, spec
from get_core.runs.store import RunStatus
from get_core.views import advice, class_compare, node
from pages import common, results_ui

# The key columns first (the scores, then prediction time): a 1000 px window clipped the last ones (issue 35). The
# size columns go to a second table (``SIZE``): in one, "Size" was cut in a 1,400 px window (issue 48).
COLUMNS = {"name": "Model", "r2": "Test R\u00b2", "rmse": "Test RMSE",
           "predict_ms_per_10k": "Prediction ms / 10,000 rows",
           "n_parameters": "Parameters", "features_per_split": "Features per split (most)",
           "parameter_bytes": "Parameter bytes (8 each)", "size_bytes": "Size (bytes, pickled)",
           "fit_seconds": "Fit seconds"}
SIZE = ("n_parameters", "features_per_split", "parameter_bytes", "size_bytes", "fit_seconds")
PLOTS_PER_ROW = 2  # four side by side were cut in a 1000 px window (issue 35)


CLASS_COLUMNS = {"name": "Model", "accuracy": "Test accuracy", "balanced_accuracy": "Balanced accuracy",
                 "log_loss": "Log loss", "roc_auc": "ROC AUC", **{k: v for k, v in COLUMNS.items()
                                                                 if k not in ("name", "r2", "rmse")}}


@st.cache_data(max_entries=8, show_spinner="Timing the GET tree on 10,000 rows...")
def _get_entry(db_path: str, run_id: int, search_tree: str | None) -> dict:
    results = results_ui.run_results(run_id, search_tree)
    evaluate = baseline_models.evaluate_class_tree if results.tree.is_classifier else baseline_models.evaluate_tree
    return evaluate(results.tree, results.X_test, results.y_test, random_state=0)


def compare_page() -> None:
    st.title("Compare")
    st.caption("GET's single oblique tree against the same GET fit with sparse (or dense) splits and the baselines at "
               "their usual settings, never cut by GET's time budget: CART with its depth tuned on a 2:1 split of the "
               "training rows, a random forest of 100 trees and HistGradientBoosting (scikit-learn's defaults "
               "otherwise), trained and tested on the run's own split, as in the paper's Tables 1 and 5.")
    source = results_ui.choose_model(allow_file=False)
    if source is None:
        return
    results = source.results
    if not results.baselines:
        _offer_baselines(results)
        return
    if not results.has_data:
        st.warning("The run's test rows could not be rebuilt, so GET cannot be put on the same footing.")
        return
    point = results.search_point
    entry = _get_entry(common.get_store().path, results.run.run_id, point["key"] if point else None)
    _advice(results, entry)
    if results.tree.is_classifier:
        _compare_classes(results, entry)
        return
    _tables(baseline_models.comparison_rows(results.baselines, entry), COLUMNS, "scores")
    st.caption("Parameters as the paper counts them: CART, each forest tree and each boosting tree 2 per branch "
               "node (feature and threshold) and 1 per leaf; the oblique tree its non-zero weights and threshold per "
               "branch node (p+1 when dense) and 1 per constant leaf (p+1 per linear leaf). Size: the pickled model object. Prediction time: median of several single-threaded "
               "calls on 10,000 rows drawn from the test rows, measured on this machine.")
    _counterpart_note(results)
    models = {"GET": entry["test_predictions"], **baseline_models.baseline_predictions(results.baselines)}
    st.markdown(f"**Each model's predictions against the actual target, on the {len(results.y_test):,} test rows**")
    cols = [col for _ in range(0, len(models), PLOTS_PER_ROW) for col in st.columns(PLOTS_PER_ROW)]
    for col, (name, predictions) in zip(cols, models.items()):
        figure = node.predicted_actual_figure(results.y_test, {name: predictions}, results.target)
        # half the page: the model's name alone, on two lines after its comma
        figure.update_layout(title={"text": name.replace(", ", ",<br>"), "font": {"size": 14}}, showlegend=False,
                             height=380, margin={"t": 60})
        col.plotly_chart(figure, key=f"pva_{name}")


def _advice(results, entry: dict) -> None:
    """Whether the single tree is the right tool on this table (``views.advice``), when the run has the baselines
    to say it."""
    classes = results.tree.is_classifier
    numbers = results.encoding.for_baselines  # rows with data have their encoding; categories one-hot as numbers
    facts = advice.table_facts(np.vstack([numbers(results.X_train), numbers(results.X_test)]),
                               np.concatenate([results.y_train, results.y_test]), classes)
    sentence = advice.advise(advice.run_scores(results.baselines, entry, "accuracy" if classes else "r2"), facts)
    if sentence:
        st.info(common.plain(sentence))


def dashed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each number column that misses a value (HistGradientBoosting's parameters, a fit's seconds
    not recorded) written as text, a dash where the value is missing: Streamlit writes "None" there."""
    for column in table.columns:
        if pd.api.types.is_numeric_dtype(table[column]) and table[column].isna().any():
            table[column] = ["\u2013" if pd.isna(v) else common.number(v) for v in table[column]]
    return table


def _tables(rows: list[dict], columns: dict[str, str], key: str) -> None:
    """The models' scores and prediction time, then their sizes and fit times: two tables of ``columns`` (their
    labels by entry key), each narrow enough for a 1,400 px window; large counts with thousands separators."""
    table = dashed(pd.DataFrame(rows)[list(columns)].rename(columns=columns))
    large = {COLUMNS[k] for k in ("n_parameters", "parameter_bytes", "size_bytes")}
    config = {c: st.column_config.NumberColumn(format="localized") for c in large
              if c in table.columns and pd.api.types.is_numeric_dtype(table[c])}
    sizes = [columns[k] for k in SIZE]
    st.dataframe(table[[c for c in table.columns if c not in sizes]], hide_index=True, key=key)
    st.dataframe(table[[columns["name"], *sizes]], hide_index=True, key=f"{key}_sizes", column_config=config)


def _compare_classes(results, entry: dict) -> None:
    """A class run: the scores table, the confusion matrices side by side and the reliability chart."""
    _tables(baseline_models.comparison_rows(results.baselines, entry), CLASS_COLUMNS, "class_scores")
    binary = len(results.tree.classes) == 2
    st.caption("Accuracy: the share of test rows classified correctly; balanced accuracy: the mean over classes of "
               "each class's share classified correctly; log loss: how well the class probabilities fit (lower is "
               "better); ROC AUC: how well the probabilities rank the rows "
               + ("(of the second class)" if binary else "(each class against the rest, averaged over classes)")
               + ". Parameters as the paper counts them: CART and each forest and boosting tree 2 per branch node "
               "and 1 per leaf, the oblique tree its non-zero weights and threshold per branch node and C-1 per leaf "
               "(its free class shares).")
    _counterpart_note(results)
    models = baseline_models.BASELINE_MODELS
    stored = results.baselines.get("models", {})
    entries = [entry, *(stored[k] for k in models if k in stored)]
    classes = results.tree.classes
    st.markdown(f"**Confusion matrices on the {len(results.y_test):,} test rows** (rows: the true class; columns: "
                "the predicted one; the diagonal is right)")
    per_row = 3
    for start in range(0, len(entries), per_row):
        cols = st.columns(per_row)
        for col, model in zip(cols, entries[start:start + per_row]):
            col.plotly_chart(class_compare.confusion_figure(model["confusion"], classes,
                                                            model["name"].replace(", ", ",<br>")),
                             key=f"confusion_{model['name']}")
    probas = {model["name"]: np.asarray(model["test_proba"]) for model in entries if model.get("test_proba")}
    st.plotly_chart(class_compare.reliability_figure(results.y_test, probas, classes), key="reliability")
    st.caption("Rows are grouped by the probability each model gives its predicted class; a point below the "
               "diagonal means the model is right less often than it claims (over-confident).")


def _counterpart_note(results) -> None:
    """Why the table has no sparse (or dense) GET row, when it has none."""
    stored = results.baselines.get("models", {})
    if "get_sparse" in stored or "get_dense" in stored:
        st.caption("The second GET row is the same fit (depth, leaves, budget, seed, training rows) with the other "
                   "kind of splits: at most 3 features per split beside a dense run, dense beside a sparse one.")
        return
    if results.tree.meta.get("single_model"):
        st.caption("This run's model is one logistic model with no split (depth 0, chosen by the search), so no GET "
                   "fit with another kind of splits is fitted beside it.")
    elif not spec.has_counterpart(results.run.params["config"].get("max_split_features"), results.tree.n_features):
        st.caption("A sparse (or dense) GET fit would be this same tree: its data has too few features for the "
                   "limit to change any split, so none is fitted beside it.")
    else:
        st.caption("This run has no sparse (or dense) GET tree beside it: its baselines were fitted before that "
                   "comparison existed, after a cancel, or the second fit was cancelled.")


def _offer_baselines(results) -> None:
    """No baselines stored: say why, and for a run that stopped before them, offer to fit them now."""
    if results.baselines_error:
        st.info("No baselines (CART, random forest, HistGradientBoosting) for this run: "
                f"{common.plain(results.baselines_error)}.")
        return
    if results.run.status is RunStatus.FINISHED or not results.has_data:
        st.info("No baselines (CART, random forest, HistGradientBoosting) for this run: "
                + ("this run did not store them." if results.has_data else "its rows could not be rebuilt."))
        return
    st.info(f"Run #{results.run.run_id} ended before its baselines (CART, random forest, HistGradientBoosting) were "
            "fitted. They can be fitted now on the run's own train/test split (as the worker would have; usually a "
            "few seconds).")
    if st.button("Fit the baselines now", key="fit_baselines", type="primary"):
        with st.spinner("Fitting CART and a random forest on the run's training rows..."):
            run_results.fit_missing_baselines(common.get_store(), results.run.run_id)
        results_ui.forget_results()
        st.rerun()


common.guarded(compare_page)()
