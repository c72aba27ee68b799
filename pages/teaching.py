"""Teaching page: how GET trains one oblique tree. The soft split's formula, the scaled sigmoid at each alpha stage
against the hard step, and how a chosen split routes its training rows (for a class tree, the class shares of the
rows going left and right). The figures and tables come from ``get_core.views.teaching``."""

from __future__ import annotations

import streamlit as st

from get_core import schedule
from get_core.config import DEFAULTS
from get_core.model import prune
from get_core.model.tree import ObliqueTree
from get_core.views import labels, teaching
from pages import common, results_ui


def teaching_page() -> None:
    st.title("Teaching")
    st.markdown("GET trains the whole tree at once with **soft** splits: at a split `a·x ≤ b` a row goes left with "
                "a weight between 0 and 1, so every split gets a gradient. The weight is the scaled sigmoid of how "
                "far the row lies on the left side, `m = b − a·x`:")
    st.latex(teaching.FORMULA)
    source = results_ui.choose_model()
    tree = source.tree if source is not None else None
    results = source.results if source is not None else None
    alphas = (results.alphas if results is not None else
              schedule.stage_midpoints(DEFAULTS.alpha_range, DEFAULTS.n_alphas))
    whose = "this run's stages" if results is not None else "the default stages"
    stages = "\n".join(f"- {s}" for s in teaching.stage_labels(alphas))
    st.markdown("Training raises the scale **α** stage by stage, until the soft splits act like the hard splits of "
                f"the tree GET returns ({whose}):\n{stages}")
    st.caption("The plots put the margin a·x − b (that is, −m) on the x axis: the hard split sends a row left when "
               "it is at most 0.")
    st.plotly_chart(teaching.sigmoid_figure(alphas, names=teaching.stage_labels(alphas, roles=False)), key="sigmoid")
    if tree is not None:
        _routing(tree, results)


def _routing(tree: ObliqueTree, results) -> None:
    branches = [int(n) for n in prune.live_branches(tree)]  # a pass-through splits nothing
    if not branches:
        st.info("This tree has no split: it is a single leaf.")
        return
    st.subheader("A split's rows")
    saved = st.session_state.get(common.SAVED_VIEWS, {}).get(results.run.run_id if results is not None else None, {})
    # the Tree page's selected node, when a branch
    node = common.url_int(st.query_params.get("node") or saved.get("node"))
    chosen = st.selectbox("Split", branches, index=branches.index(node) if node in branches else 0,
                          format_func=lambda n: f"node {n}: {labels.split_text(tree, n)}", key="teaching_node")
    if results is None or not results.has_data:
        st.info("Routing needs the run's rows; " + ("a model file alone has none." if results is None else
                                                    "this run's could not be rebuilt."))
        return
    names = teaching.stage_labels(results.alphas, roles=False)
    st.plotly_chart(teaching.soft_routing_figure(tree, chosen, results.X_train, results.alphas, names=names),
                    key="soft_routing")
    if tree.is_classifier:
        st.markdown("**Class shares** of the training rows the (hard) split sends each way")
        st.dataframe(teaching.split_class_shares(tree, chosen, results.X_train, results.y_train), hide_index=True,
                     key="split_classes")


common.guarded(teaching_page)()
