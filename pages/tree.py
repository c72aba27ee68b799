"""Tree page: the clickable diagram with the selected node's panel beside it (below it in a narrow window), a
link to the Teaching page and the exports.

The selected node lives in the URL (``?node=``), with the expanded subtrees (``?expand=``), so a reload keeps both.
A page link drops the query string, so the session keeps them too, per run, and puts them back.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st

from get_core.model import codegen, model_file, prune
from get_core.model.onnx_graph import to_onnx

from get_core import baselines as baseline_models, export
from get_core.model.tree import ObliqueTree
from get_core.views import class_node, diagram, diagram_content, labels, node, summary
from pages import common, diagram_widget, results_ui, session_url, what_if_ui
from pages.results_ui import ModelSource

MAX_LEVELS = diagram.MAX_OPEN_LEVELS  # more levels than this make an unreadable picture; deeper: "Expand"
FULL_SVG_MAX_DEPTH = 9  # whole-tree SVG downloads up to this depth (depth 12 has 8191 nodes)
VIEWS = common.SAVED_VIEWS
BOX_WIDTH = "tree_box_px"  # session key: the diagram box's width as the browser measured it


def tree_page() -> None:
    st.title("Tree")
    session_url.carry()  # a reload here keeps the dataset (issue 35)
    source = results_ui.choose_model()
    if source is None:
        return
    tree = source.tree
    run_id = source.results.run.run_id if source.results is not None else None  # None: a model file
    if run_id is not None:
        _restore_view(run_id)
    selected = _selected_node(tree)
    options = _diagram_options(tree, selected)
    if run_id is not None:
        _keep_view(run_id)  # after the Expand and Collapse buttons changed it
    _summary(source)
    _diagram(tree, options, selected)  # as wide as the page (issue 35: a 540 px column clipped it)
    st.divider()
    _node_panel(source, selected)
    st.divider()
    _exports(source, options)


# ---------------------------------------------------------------------------------------------- selection
def _restore_view(run_id: int) -> None:
    """Put the run and its last view back into a URL that has none (the page was opened from another page); a node
    or expanded subtrees named in the URL win."""
    if "run" not in st.query_params:
        st.query_params["run"] = str(run_id)
    if not any(name in st.query_params for name in common.VIEW_PARAMS):
        st.query_params.update(st.session_state.get(VIEWS, {}).get(run_id, {}))


def _keep_view(run_id: int) -> None:
    st.session_state.setdefault(VIEWS, {})[run_id] = {
        name: st.query_params[name] for name in common.VIEW_PARAMS if name in st.query_params}


def _selected_node(tree: ObliqueTree) -> int:
    chosen = common.url_int(st.query_params.get("node", 1))
    return prune.shown(tree, chosen if chosen is not None and 1 <= chosen <= tree.n_nodes else 1)  # a pass-through:
    # its live child


def _select(chosen: int) -> None:
    st.query_params["node"] = str(chosen)
    st.session_state["node_pick"] = chosen


def _expanded() -> frozenset[int]:
    raw = st.query_params.get("expand", "")
    return frozenset(int(v) for v in raw.split(",") if re.fullmatch(r"\s*[0-9]+\s*", v))  # not '²': a digit, no int


def _set_expanded(nodes: set[int] | frozenset[int]) -> None:
    if nodes:
        st.query_params["expand"] = ",".join(str(n) for n in sorted(nodes))
    else:
        st.query_params.pop("expand", None)


def _diagram_options(tree: ObliqueTree, selected: int) -> diagram_content.DiagramOptions:
    top = min(tree.depth + 1, MAX_LEVELS)
    cols = st.columns([3, 2, 2])
    levels = cols[0].slider("Levels shown", 1, top, default_levels(tree), key="tree_levels",
                            help="Deeper parts of the tree open with 'Expand below the selected node'.")
    expanded = _expanded()
    if cols[1].button("Expand below the selected node", disabled=tree.is_leaf(selected), key="tree_expand"):
        expanded = expanded | {selected}
        _set_expanded(expanded)
    if cols[2].button("Collapse all", disabled=not expanded, key="tree_collapse"):
        expanded = frozenset()
        _set_expanded(expanded)
    return diagram_content.reveal(tree, diagram_content.DiagramOptions(levels=levels, expanded=expanded), selected)


# ---------------------------------------------------------------------------------------------- summary
def _in_words(source: ModelSource) -> summary.Summary:
    """The plain-language summary with whatever the source has: a run's rows and baselines, or the model alone."""
    results = source.results
    categories = _one_hot_columns(source.tree, results)
    if results is None or not results.has_data:
        return summary.summarize(source.tree, baselines=results.baselines if results is not None else None,
                                 target=results.target if results is not None else None, categories=categories)
    return summary.summarize(source.tree, results.X_test, results.y_test, results.baselines, results.target,
                             categories)


def _one_hot_columns(tree: ObliqueTree, results) -> tuple[str, ...]:
    """The one-hot columns of the run's encoding (or the model file's): their levels count as one feature. (A tree
    that was handed categories groups them itself, ``ObliqueTree.inputs``.)"""
    encoding = results.encoding if results is not None else model_file.model_encoding(tree)
    return tuple(encoding.categories) if encoding is not None and encoding.one_hot else ()


def _summary(source: ModelSource) -> None:
    with st.expander("In plain words", expanded=True):
        st.markdown("\n".join(f"- {common.plain(s)}" for s in _in_words(source).sentences()))


def default_levels(tree: ObliqueTree) -> int:
    """Levels shown when a tree opens (``diagram.readable_levels`` for the diagram's box as the browser measured it,
    drawn through this page's cache); the top four when Graphviz cannot draw it."""
    try:
        return diagram.readable_levels(tree, render=_svg, width_px=_box_width())
    except diagram.GraphvizError:
        return min(tree.depth + 1, 4)


# ---------------------------------------------------------------------------------------------- diagram
@st.cache_data(max_entries=32, show_spinner=False)
def _svg(dot: str) -> str:
    return diagram.render_svg(dot)


def _box_width() -> int:
    """The diagram box's width in px: as the browser last measured it, else the page's guess for a 1,400 px window."""
    return int(st.session_state.get(BOX_WIDTH, diagram.OPEN_WIDTH_PX))


def _measured(width: int) -> None:
    """The browser measured the diagram's box: open the tree again with the levels that stay readable in it."""
    st.session_state[BOX_WIDTH] = width
    st.session_state.pop("tree_levels", None)  # the slider takes the new default


def _diagram(tree: ObliqueTree, options: diagram_content.DiagramOptions, selected: int) -> None:
    dot = diagram.to_dot(tree, options)
    try:
        svg = _svg(dot)
    except diagram.GraphvizError as exc:
        st.warning(f"{exc} Showing a diagram without clicks; pick nodes with the box below.")
        st.graphviz_chart(dot)
    else:
        diagram_widget.tree_diagram(diagram.with_node_names(svg, tree), selected, key="tree_diagram",
                                    on_click=_select, box_width=_box_width(), on_box_width=_measured)
    if st.session_state.get("node_pick") != selected:
        st.session_state["node_pick"] = selected
    cols = st.columns([1, 2])
    cols[0].number_input("Selected node", 1, tree.n_nodes, step=1, key="node_pick",
                         on_change=lambda: st.query_params.__setitem__("node", str(st.session_state["node_pick"])),
                         help="Click a node in the diagram, or type its number (root 1; children of t: 2t, 2t+1).")
    colours = (f"nodes are filled with the colour of their class ({diagram.class_legend(tree).removeprefix('fill: ')}"
               f"), each leaf names its class and the shares of every class ({labels.SMOOTHED_SHARES})"
               if tree.is_classifier else
               "leaves are coloured from low (blue) to high (orange) predictions")
    cols[1].caption("Click a node to select it. A split's rows take its \"yes\" branch when its condition holds, "
                    f"else its \"no\" branch; {common.plain(colours)}. Hover for every term of a split.")
    downloads = st.columns(3)
    common.download(downloads[0], "DOT (this view)", dot, "tree_view.dot", "text/vnd.graphviz", key="dl_dot_view")
    common.download(downloads[1], "SVG (this view)", lambda: export.svg_source(tree, options), "tree_view.svg",
                    "image/svg+xml", key="dl_svg_view")
    common.download(downloads[2], "DOT (whole tree)", lambda: export.dot_source(tree), "tree.dot",
                    "text/vnd.graphviz", key="dl_dot_full")


# ---------------------------------------------------------------------------------------------- node panel
def _node_panel(source: ModelSource, selected: int) -> None:
    tree, results = source.tree, source.results
    kind = labels.node_kind(tree, selected)
    st.subheader(f"Node {selected} ({kind}, level {labels.node_level(tree, selected)})")
    rules = labels.path_rules(tree, selected, digits=4, max_terms=4)
    if rules:
        st.caption("Path from the root (every condition holds for the rows that reach this node):")
        st.code("\n".join(f"{i + 1}. {rule}" for i, rule in enumerate(rules)), language=None)
    if kind == "branch":
        st.markdown("**Split** (left when it holds):")
        st.code(labels.split_text(tree, selected, digits=4, max_terms=None), language=None)
    elif labels.has_logistic_model(tree, selected):
        rows = results is not None and results.has_data
        spans = class_node.leaf_spans(tree, selected, results.X_train) if rows else None
        st.markdown("**Leaf model** (logistic: the class changes with the row):")
        st.markdown("\n".join(f"- {common.plain(labels.odds_sentence(tree, e))}"
                               for e in labels.odds_effects(tree, selected, spans=spans)))
        note = (labels.logistic_note(tree, selected, "their typical range in this leaf (its training rows' 5th-95th "
                                     "percentiles)") if rows else labels.logistic_note(tree, selected))
        shares = labels.shares_text(tree, labels.node_shares(tree, selected), max_classes=None)
        st.caption(common.plain(f"{note} Its training rows' class shares: {shares}."))
    elif tree.is_classifier:
        st.markdown("**Leaf prediction**:")
        st.code("class " + labels.leaf_text(tree, selected) + "\nprobabilities " + labels.shares_text(
            tree, labels.node_shares(tree, selected), max_classes=None), language=None)
        st.caption(labels.SMOOTHED_SHARES[0].upper() + labels.SMOOTHED_SHARES[1:] + ".")
    else:
        st.markdown("**Leaf model**:")
        st.code("y = " + labels.leaf_text(tree, selected, digits=4, max_terms=None), language=None)
    has_data = results is not None and results.has_data
    if tree.is_classifier:
        _class_node(tree, selected, results if has_data else None)
        return
    _node_metrics(tree, selected, results if has_data else None)
    tabs = st.tabs(["Weights", "Projection" if kind == "branch" else "Observed vs fitted", "Random forest"])
    x_std = node.feature_std(results.X_train, tree) if has_data else None
    with tabs[0]:
        if kind == "branch" and has_data:
            _terms_table(tree, selected, results)
        _weights_tab(tree, selected, x_std)
    with tabs[1]:
        if not has_data:
            st.info("This needs the run's rows; " + ("a model file alone has none." if results is None else
                                                     "this run's could not be rebuilt (see the note above)."))
        elif kind == "branch":
            st.plotly_chart(node.projection_figure(tree, selected, results.X_train, results.y_train, results.X_test,
                                                   results.y_test, results.target), key="projection")
        else:
            st.plotly_chart(node.leaf_fit_figure(tree, selected, results.X_train, results.y_train, results.X_test,
                                                 results.y_test, results.target), key="leaf_fit")
    with tabs[2]:
        _forest_tab(tree, selected, results, x_std)
    if kind == "branch":
        _teaching_link()
    else:
        what_if_ui.way_into_leaf(tree, selected, results.X_train if has_data else None,
                                 results.encoding if results is not None else model_file.model_encoding(tree))


def _class_node(tree: ObliqueTree, selected: int, results) -> None:
    """A classification tree's node: its class shares as a bar, its rows' class counts, the tree's accuracy there
    (and the forest's), a branch's rows on its split by class, and the split's weights (the Teaching page shows its
    routing)."""
    st.plotly_chart(class_node.shares_figure(tree, selected), key="class_shares")
    X_train, y_train, X_test, y_test = ((results.X_train, results.y_train, results.X_test, results.y_test)
                                        if results is not None else (None, None, None, None))
    cols = st.columns(3)
    cols[0].metric("Training rows (model)", f"{int(tree.n_samples[selected - 1]):,}")
    for col, part, X, y in ((cols[1], "train", X_train, y_train), (cols[2], "test", X_test, y_test)):
        n, accuracy = class_node.accuracy_at(tree, selected, X, y)
        col.metric(f"Accuracy on {part} rows here", "–" if accuracy is None else f"{accuracy:.1%}",
                   help=f"the share of the {n:,} {part} rows reaching this node that the tree classifies correctly")
    st.markdown("**Class counts** at this node")
    st.dataframe(class_node.class_table(tree, selected, X_train, y_train, X_test, y_test), hide_index=True,
                 key="class_counts")
    tabs = st.tabs(["Weights", "Projection", "Random forest"])
    x_std = node.feature_std(X_train, tree) if results is not None else None
    with tabs[0]:
        if tree.is_leaf(selected):
            st.info("A leaf has no split: its class probabilities are above.")
        else:
            if X_train is not None:
                _class_terms(tree, selected, X_train, _one_hot_columns(tree, results))
            _weights_tab(tree, selected, x_std)
    with tabs[1]:
        if results is None or tree.is_leaf(selected):
            st.info("Select a branch node of a run to see its rows on the split, by class.")
        else:
            st.plotly_chart(class_node.projection_figure(tree, selected, X_train, y_train, results.target),
                            key="class_projection")
    with tabs[2]:
        forest = ((results.baselines or {}).get("models", {}).get("random_forest") if results is not None else None)
        if forest is None or results is None:
            st.info("No random forest for this model.")
        else:
            row = class_node.forest_rows(tree, selected, X_test, y_test, forest["test_predictions"])
            st.dataframe(pd.DataFrame([{k: ("–" if v is None else f"{v:.1%}") if "accuracy" in k else v
                                        for k, v in row.items()}]), hide_index=True, key="class_forest")
    if not tree.is_leaf(selected):
        _teaching_link()


def _class_terms(tree: ObliqueTree, selected: int, X_train, categories: tuple[str, ...]) -> None:
    """A class tree's split terms ranked by their share in standardized units on the rows reaching the node."""
    table = node.ranked_terms(tree, selected, X_train, categories)
    st.markdown("**Terms of the split**, largest share first")
    st.dataframe(pd.DataFrame({TERM_COLUMNS["feature"]: table["feature"],
                               TERM_COLUMNS["weight"]: _term_weights(table),
                               TERM_COLUMNS["share"]: ["\u2013" if pd.isna(v) else f"{v:.1f}%"
                                                       for v in table["share"]]}), hide_index=True, key="class_terms")


def _node_metrics(tree: ObliqueTree, selected: int, results) -> None:
    if results is None:
        st.metric("Training rows (from the model)", f"{int(tree.n_samples[selected - 1]):,}")
        return
    stats = node.node_stats(tree, selected, results.X_train, results.y_train, results.X_test, results.y_test)
    cols = st.columns(3) + st.columns(3)  # one value per metric ("4.365 / 4.…" was cut off), 3 a row: a narrow column
    cols[0].metric("Train rows", f"{stats['n_train']:,}", help="The run's training rows that reach this node")
    cols[1].metric("Test rows", f"{stats['n_test']:,}")
    cols[2].metric(f"Mean {results.target}", common.number(stats["mean_train"]),
                   help="Mean of the target over the training rows at this node")
    cols[3].metric("Spread (SD)", common.number(stats["std_train"]),
                   help="Standard deviation of the target at this node: the error of predicting its mean")
    for col, part in zip(cols[4:], ("train", "test")):
        col.metric(f"RMSE {part}", common.number(stats[f"rmse_{part}"]),
                   help=f"Error of the tree's own predictions on the {part} rows that reach this node")
    if (note := node.train_rows_note(stats)) is not None:
        st.caption(note)
    if stats["kind"] == "branch" and stats["n_train"]:
        st.caption(f"Of its training rows, {stats['n_left_train']:,} go left and {stats['n_right_train']:,} go "
                   f"right (test: {stats['n_left_test']:,} / {stats['n_right_test']:,}).")


TERM_COLUMNS = {"feature": "feature", "weight": "weight (original units)", "share": "share of the split",
                "r2_cost": "R\u00b2 lost if dropped"}


def _term_weights(table: pd.DataFrame) -> list[str]:
    """Each row's weight, or a one-hot column's weight per level (``node.term_table``'s levels)."""
    return [levels or common.number(w) for w, levels in zip(table["weight"], table["levels"])]


def _terms_table(tree: ObliqueTree, selected: int, results) -> None:
    table = node.term_table(tree, selected, results.X_train, results.y_train, _one_hot_columns(tree, results))
    shown = pd.DataFrame({
        TERM_COLUMNS["feature"]: table["feature"],
        TERM_COLUMNS["weight"]: _term_weights(table),
        TERM_COLUMNS["share"]: ["\u2013" if pd.isna(v) else f"{v:.1f}%" for v in table["share"]],
        TERM_COLUMNS["r2_cost"]: ["\u2013" if v is None or pd.isna(v) else f"{v:.3f}" for v in table["r2_cost"]]})
    st.markdown("**Terms of the split**, largest share first")
    st.dataframe(shown, hide_index=True, key="split_terms")
    st.caption("Share: the term's weight times the feature's standard deviation on the training rows that reach "
               "this node (standardized units, so features measured in different units compare), as a percentage "
               "of the split's total. R\u00b2 lost: the tree's R\u00b2 on those rows minus its R\u00b2 when the "
               "feature is held at its mean there (the term folded into the threshold) and the rows re-routed "
               "through the subtree. A one-hot column's levels are one row: their shares summed, their weights "
               "per level, and R\u00b2 lost when all of them are held at their means.")


def _weights_tab(tree: ObliqueTree, selected: int, x_std) -> None:
    if tree.is_leaf(selected) and tree.leaf_type == "constant":
        h, _ = tree.leaf_in_original_units(selected)
        st.metric("Prediction", common.number(h))
        return
    units = ["original", "range"] + (["standardized"] if x_std is not None else [])
    robust = tree.scaling == "robust"  # x_scale: the 1st-99th percentile span
    chosen = st.radio("Units", units, horizontal=True, key="weight_units",
                      format_func={"original": "original units",
                                   "range": "per 1st-99th percentile span" if robust else "per training range",
                                   "standardized": "per standard deviation"}.get)
    st.plotly_chart(node.weights_figure(tree, selected, chosen, x_std), key="weights")
    with st.expander("All weights as a table"):
        st.dataframe(node.weight_table(tree, selected, x_std), hide_index=True)


def _forest_tab(tree: ObliqueTree, selected: int, results, x_std) -> None:
    baselines = results.baselines if results is not None else None
    if not baselines:
        reason = results.baselines_error if results is not None else None
        st.info(f"No random forest for this model{': ' + reason if reason else ''}.")
        return
    forest = baselines["models"]["random_forest"]
    rows = []
    if results.has_data:
        rows.append({"rows": "test", **baseline_models.node_forest_comparison(tree, selected, results.X_test, results.y_test,
                                                                      forest["test_predictions"])})
        oob = baselines.get("forest", {}).get("oob_train_predictions")
        if oob is not None and len(oob) == len(results.y_train):
            rows.append({"rows": "train (forest: out-of-bag)", **baseline_models.node_forest_comparison(
                tree, selected, results.X_train, results.y_train, oob)})
    if rows:
        st.dataframe(_forest_table(rows), hide_index=True)
    importances = baselines.get("forest", {}).get("feature_importances")
    raw = results.encoding is not None and not results.encoding.one_hot  # the forest had one-hot levels of its own
    names = baselines.get("feature_names") if raw else None
    if importances and len(importances) == (len(names) if names else tree.n_features):
        st.plotly_chart(node.forest_importance_figure(tree, selected, importances, x_std, names=names),
                        key="forest_importance")


# The errors first: a narrow panel clipped the last columns, "forest RMSE" among them (issue 35).
FOREST_COLUMNS = {"rows": "rows", "tree_rmse": "tree RMSE", "forest_rmse": "forest RMSE", "tree_mae": "tree MAE",
                  "forest_mae": "forest MAE", "n": "reaching this node"}


def _forest_table(rows: list[dict]) -> pd.DataFrame:
    """``baseline_models.node_forest_comparison``'s rows with readable headers and rounded numbers."""
    shown = [{FOREST_COLUMNS[k]: (f"{v:,}" if k == "n" else common.number(v) if k != "rows" else v)
              for k, v in row.items()} for row in rows]
    return pd.DataFrame(shown, columns=list(FOREST_COLUMNS.values()))


def _teaching_link() -> None:
    st.caption("How GET trained this split, stage by stage: the Teaching page (in the sidebar) shows its soft "
               "routing for the node selected here.")


# ---------------------------------------------------------------------------------------------- exports
def _exports(source: ModelSource, options: diagram_content.DiagramOptions) -> None:
    tree, results = source.tree, source.results
    st.subheader("Export")
    stem = f"get_run{results.run.run_id}{_search_suffix(results, '_')}" if results is not None else "get_model"
    cols = st.columns(3) + st.columns(3)  # 3 a row: six in one row cut their labels in a 1000 px window (issue 35)
    encoding = results.encoding if results is not None else None  # so the file scores the run's raw columns
    common.download(cols[0], "Model JSON", lambda: model_file.model_json(tree, indent=1, encoding=encoding),
                    f"{stem}.json", "application/json", key="dl_json",
                    help="Loads back into GET Explorer and get_core")
    common.download(cols[1], "Rules (text)", lambda: export.rules_text(tree), f"{stem}_rules.txt", "text/plain",
                    key="dl_rules")
    common.download(cols[2], "Python code", lambda: codegen.python_source(tree), f"{stem}.py", "text/x-python",
                    key="dl_py", help="Standalone, no dependencies; equals predict")
    common.download(cols[3], "C code", lambda: codegen.c_source(tree), f"{stem}.c", "text/x-c", key="dl_c",
                    help="Standalone C99; equals predict (compile with -ffp-contract=off"
                    + ("; link with -lm: logistic leaves call exp)" if tree.has_logistic_leaves else ")"))
    common.download(cols[4], "HTML report", lambda: _report(source), f"{stem}_report.html", "text/html",
                    key="dl_report", help="One self-contained page: diagram, rules, metrics, comparison")
    common.download(cols[5], "ONNX model", lambda: to_onnx(tree), f"{stem}.onnx", "application/octet-stream",
                    key="dl_onnx", help="For onnxruntime: input X (rows x the model's features, in order); outputs "
                    "the prediction (a classifier's label and probabilities) and the leaf; float64")
    if tree.depth <= FULL_SVG_MAX_DEPTH:
        common.download(st, "SVG (whole tree)", lambda: export.svg_source(tree), f"{stem}.svg", "image/svg+xml",
                        key="dl_svg_full")


def _search_suffix(results, separator: str) -> str:
    """Names a search fit (``pages.search_ui``) in file names and titles, so it is never taken for the run's tree."""
    return f"{separator}{results.search_point['key']}" if results.search_point else ""


def _report(source: ModelSource) -> str:
    tree, results = source.tree, source.results
    if results is None:
        return export.html_report(tree, title=f"GET oblique tree ({source.label})", in_words=_in_words(source))
    run = results.run
    baselines = dict(results.baselines) if results.baselines else None
    if tree.is_classifier:
        scores = common.get_store().get_json(run.run_id, "class_scores") or {}
        metrics = {"Test accuracy": scores.get("accuracy"), "Balanced accuracy": scores.get("balanced_accuracy"),
                   "Log loss": scores.get("log_loss"), "ROC AUC": scores.get("roc_auc")}
        if baselines is not None and results.has_data:
            baselines["get"] = baseline_models.evaluate_class_tree(tree, results.X_test, results.y_test, n_repeats=3)
    else:
        r2, rmse = results.test_scores  # of the tree shown: the run's, or a search fit's (pages.search_ui)
        metrics = {"Test R\u00b2": r2, "Test RMSE": rmse}
        if baselines is not None and results.has_data:
            baselines["get"] = baseline_models.evaluate_tree(tree, results.X_test, results.y_test, n_repeats=3)
    params = dict(run.params)
    data_info = {"Dataset": run.dataset_name, "Fingerprint (SHA-256)": run.dataset_fingerprint,
                 "Rows": run.n_rows, "Target": results.target,
                 "Train / test rows": (f"{len(results.y_train):,} / {len(results.y_test):,}" if results.has_data
                                       else None)}
    name = common.get_store().get_run(run.run_id).name  # results are cached: the name may have changed since
    title = f"GET oblique tree: run {run.run_id} ({name}){_search_suffix(results, ', search fit ')}"
    return export.html_report(tree, title=title, metrics=metrics,
                              baselines=baselines, data_info=data_info, encoding=results.encoding,
                              in_words=_in_words(source),
                              params={k: json.dumps(v) if isinstance(v, (dict, list)) else v
                                      for k, v in params.items()})


common.guarded(tree_page)()
