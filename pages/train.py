"""Train page: GET's parameters, a run-time estimate measured on this machine, launch, and the live run panel."""

from __future__ import annotations

import streamlit as st

from get_core.data import columns
from get_core.config import (ALLOWED, APP_DEFAULTS, APP_SEARCH_CLASS_LEAF, CLASS_LEAVES, SEARCH_CLASS_LEAVES,
                             SEARCH_PATIENCE, SPLIT_FEATURE_PATH, GETConfig, validation_split_words)
from get_core.config import DEFAULTS as GET_DEFAULTS
from get_core.runs import estimate, launch
from get_core.schedule import FIRST_STAGE_SPAN, LAST_STAGE_SPAN, alpha_stage_bounds
from get_core.views.search_chart import ACCURACY, R2, SCORE_NAMES, path_text, tolerance_text
from pages import common, run_panel, session_url

#: The search's split in words (config.VALIDATION_FRACTION), for the text that explains it.
FIT_PART, SCORE_PART = validation_split_words()

# Interactive: a depth-4 tree on 10,000 rows trains in about 10 s here. Paper: the paper's budget per run (GETConfig's
# defaults).
PRESETS = {"interactive": {"cfg_starts": 4, "cfg_epochs": 600, "cfg_n_alphas": 2},
           "paper": {"cfg_starts": GET_DEFAULTS.n_starts, "cfg_epochs": GET_DEFAULTS.n_epochs,
                     "cfg_n_alphas": GET_DEFAULTS.n_alphas}}
#: The budget choice: seconds of a racing fit (get_core.engine.race), or None: starts x epochs (the paper's, or by hand).
BUDGETS = {"about 10 s": APP_DEFAULTS.time_budget, "about a minute": 60.0, "paper budget": None, "manual": None}
DEFAULTS = {
    "cfg_depth": APP_DEFAULTS.depth, "cfg_leaf": APP_DEFAULTS.leaf, "cfg_linear_leaves": GET_DEFAULTS.linear_leaves,
    "cfg_clip_leaves": GET_DEFAULTS.clip_leaves, "cfg_alpha_min": GET_DEFAULTS.alpha_range[0],
    "cfg_alpha_max": GET_DEFAULTS.alpha_range[1], **PRESETS["interactive"], "cfg_lr": GET_DEFAULTS.learning_rate,
    "cfg_l1": GET_DEFAULTS.l1, "cfg_polish": "auto", "cfg_scaling": GET_DEFAULTS.scaling,
    "cfg_test_fraction": 0.25, "cfg_seed": 0, "cfg_depth_mode": "fixed", "cfg_split_features": "any",
    "cfg_budget": "about 10 s", "cfg_class_weight": "none", "cfg_class_leaf": APP_DEFAULTS.class_leaf,
    "cfg_search_class_leaf": APP_SEARCH_CLASS_LEAF,
}
DEPTH_MODES = {"fixed": "fixed", "choose": "choose for me"}
#: The polish choice: GETConfig's ``polish`` for each option of its radio.
POLISH = {"auto": "auto", "on": True, "off": False}
# Features per split: k, "any" (dense splits, GET's default) or "auto" (GETRegressorCV's path of k, issue 20).
SPLIT_FEATURES = (*(str(k) for k in SPLIT_FEATURE_PATH if k is not None), "any", "auto")
#: A class target's leaves for people (config.CLASS_LEAVES, and a search's "auto"), and in a run's name.
CLASS_LEAF_WORDS = {"constant": "class shares", "logistic": "logistic", "auto": "choose for me"}
CLASS_LEAF_NAMES = {"constant": "class shares", "logistic": "logistic", "auto": "and leaves chosen"}


def train_page() -> None:
    st.title("Train")
    common.refresh_queue()
    ready = st.session_state.get("data_ready") or session_url.restore_table()  # a reload: from the URL
    session_url.restore_settings(DEFAULTS)
    st.session_state["data_ready"] = ready
    if ready is None:
        st.info("Choose a dataset and its target on the Data page first.")
        st.page_link("pages/data.py", label="Go to Data", icon=":material/table:")
    else:
        _form(ready)
    # the run just started, not the one last opened elsewhere (issue 35); of the table chosen, not another's (48)
    newest = [run for run in common.get_store().list_runs()
              if ready is None or run.dataset_name == ready["name"]][:1]
    if newest:
        st.divider()
        run_panel.run_panel(newest[0].run_id)


def _apply_preset(name: str) -> None:
    for key, value in PRESETS[name].items():
        st.session_state[key] = value
        st.session_state.setdefault("_remembered", {})[key] = value


def _form(ready: dict) -> None:
    common.remember(list(DEFAULTS), DEFAULTS)
    classify = is_classification(ready)
    what = "classes of" if classify else "target"
    st.caption(f"Dataset **{common.plain(ready['name'])}**: {ready['n_rows']:,} rows, {ready['n_features']} model "
               f"inputs, {what} '{common.plain(ready['spec']['target'])}'.")
    c1, c2, c3 = st.columns(3)
    _budget_choice(c1, c2)
    _depth_widgets(c1, classify)
    _split_features_widget(c1, classify)
    if classify:
        _class_leaf_widget(c1)
        c1.radio("Class weights", ("none", "balanced"), key="cfg_class_weight", horizontal=True,
                 format_func={"none": "as in the data", "balanced": "balanced"}.get,
                 help="balanced: each row weighs total rows / (classes × its class's rows), so a rare class counts "
                      "as much as a common one in training (class_weight='balanced')")
    else:
        c1.radio("Leaves", ALLOWED["leaf"].options, key="cfg_leaf", horizontal=True,
                 help="constant: GET; linear: GET-Linear (a linear model in every leaf)")
    if st.session_state.cfg_leaf == "linear" and not classify:
        c1.radio("Linear leaves", ALLOWED["linear_leaves"].options, key="cfg_linear_leaves", horizontal=True,
                 format_func={"gcv": "where they generalize", "ols": "always (paper)"}.get,
                 help="where they generalize: a leaf keeps its linear model only where generalized cross-validation "
                      "prefers it to the leaf's mean (guards small leaves against over-fitting); always: least "
                      "squares in every leaf of at least p + 2 rows, the paper's plain rule")
        c1.checkbox("Keep each leaf within the targets it saw", key="cfg_clip_leaves",
                    help="a leaf's line is clamped to the range of the training targets in that leaf (for a line, "
                         "without its outliers: Tukey's far fences), so new rows far from the leaf's data cannot get "
                         "extreme predictions (not in the paper)")
    c2.number_input("Alpha stages", ALLOWED["n_alphas"].low, 10, key="cfg_n_alphas",
                     help="one sigmoid sharpness per stage, ascending: the first stage draws it from "
                          f"[min, {FIRST_STAGE_SPAN:g} × min], the last from [max / {LAST_STAGE_SPAN:g}, max] "
                          f"(the defaults give the paper's {_default_stages()})")
    c2.number_input("Alpha min", 0.1, 10000.0, key="cfg_alpha_min")
    c2.number_input("Alpha max", 0.1, 10000.0, key="cfg_alpha_max")
    c3.number_input("Learning rate", 1e-5, 1.0, key="cfg_lr", format="%g")  # %g: 0.00002 shows, not 0.0000
    c3.number_input("L1 penalty", 0.0, 10.0, key="cfg_l1", format="%g")
    c3.radio("Polish subtrees", list(POLISH), key="cfg_polish", horizontal=True,
             format_func={"auto": "with a time budget", "on": "always", "off": "never"}.get,
             help="re-optimize each subtree on the rows that reach it and keep it where the training loss drops "
                  "(the paper's section 4.3). With a time budget it gets half the time and works below the root: "
                  "on planted trees that took a 10 s fit from 78-89% to 94-97% of the best possible test R²; "
                  "without one it doubles the training time. At a depth too deep for the data it fits more noise "
                  "too (depth 8 on abalone, seed 0: training R² up 6 points, test R² down 7); let the app choose the depth")
    c3.radio("Feature scaling", ALLOWED["scaling"].options, key="cfg_scaling", horizontal=True,
             format_func={"minmax": "min-max (paper)", "robust": "robust to outliers"}.get,
             help="min-max maps each input's range to [0, 1], as the paper does; robust maps its 1st-99th "
                  "percentiles, so a few far outliers cannot squeeze the other values together")
    if ready.get("outliers") and st.session_state.cfg_scaling == "minmax":
        c3.warning("Some inputs have far outliers (see the Data page): min-max scaling squeezes their other values "
                   "together, where GET's splits hardly move. Choose robust scaling.")
    c3.slider("Test fraction", 0.1, 0.5, step=0.05, key="cfg_test_fraction")
    c3.number_input("Seed", 0, 2**31 - 1, key="cfg_seed")
    session_url.keep(ready, {key: st.session_state[key] for key in DEFAULTS if key in st.session_state}, DEFAULTS)
    config = _config(classify)
    try:
        GETConfig(**config)  # GET's own check of the settings (alpha min above alpha max, say) before anything runs
    except ValueError as exc:
        st.error(f"These settings cannot train: {common.plain(exc)}.")
        return
    _estimate_panel(ready["n_rows"], ready["n_features"], {"config": config, "search": _search(classify)})
    if st.button("Start training", type="primary", key="start"):
        _submit(ready, config)


def _default_stages() -> str:
    """The default alpha stages' intervals: "[5, 25] and [50, 150]"."""
    bounds = [f"[{lo:g}, {hi:g}]" for lo, hi in alpha_stage_bounds(GET_DEFAULTS.alpha_range, GET_DEFAULTS.n_alphas)]
    return f"{', '.join(bounds[:-1])} and {bounds[-1]}"


def _budget_choice(c1, c2) -> None:
    """The budget: a time budget (racing starts), the paper's 10 starts x 3000 epochs, or starts and epochs by hand
    (with the interactive and paper presets)."""
    c1.radio("Budget", list(BUDGETS), key="cfg_budget", horizontal=True,
             help="about 10 s / about a minute: GET's fit (or its search). GET measures this data and races many "
                  "short starts, dropping the worse half at checkpoints, to end near that time (longer while other "
                  "runs train); the baselines it is compared with follow at their usual settings, uncut, and the "
                  "estimate below counts them; paper budget: "
                  f"{GET_DEFAULTS.n_starts} starts × {GET_DEFAULTS.n_epochs} epochs per stage; manual: your own")
    if st.session_state.cfg_budget != "manual":
        return
    for column, name in zip((c1, c2), PRESETS):
        budget = PRESETS[name]
        column.button(f"{name.capitalize()} ({budget['cfg_starts']} starts × {budget['cfg_epochs']} epochs)",
                      on_click=_apply_preset, args=(name,))
    c1.number_input("Starts", ALLOWED["n_starts"].low, 64, key="cfg_starts",
                    help="independent initial trees, optimized together")
    c2.number_input("Epochs per alpha stage", ALLOWED["n_epochs"].low, 20000, step=100, key="cfg_epochs")


def _budget_settings(s) -> dict:
    """GETConfig's budget settings for the choice in session state ``s``."""
    if s.cfg_budget == "manual":
        return {"n_starts": int(s.cfg_starts), "n_epochs": int(s.cfg_epochs), "time_budget": None}
    return {"n_starts": GET_DEFAULTS.n_starts, "n_epochs": GET_DEFAULTS.n_epochs, "time_budget": BUDGETS[s.cfg_budget]}


def is_classification(ready: dict) -> bool:
    """Whether the Data page's choice is a class target."""
    return ready["spec"].get("task") == "classification"


def class_leaf(searching: bool) -> str:
    """A class run's leaves as set on the page: "constant" or "logistic", or under a search also "auto" (chosen by
    it). A search and a fixed tree keep their own choice, so "choose for me" starts from the search's default."""
    s = st.session_state
    return s.cfg_search_class_leaf if searching else s.cfg_class_leaf


def _class_leaf_widget(column) -> None:
    searching = _searching()
    column.radio("Leaves", SEARCH_CLASS_LEAVES if searching else CLASS_LEAVES, horizontal=True,
                 key="cfg_search_class_leaf" if searching else "cfg_class_leaf", format_func=CLASS_LEAF_WORDS.get,
                 help="class shares: each leaf predicts the share of each class among its training rows (GET); "
                      "logistic: each leaf holds a logistic model of the inputs, trained with the splits, so the "
                      "class can change within a leaf and a shallow tree can follow classes that shade into one "
                      "another; its words say how each input moves the odds. Choose for me (with a search): each "
                      "depth's tree is scored with both kinds of leaves and the better kept, and depth 0 (one "
                      "logistic model, no split) is tried too")


def _config(classify: bool = False) -> dict:
    s = st.session_state
    leaf = class_leaf(_searching()) if classify else None  # a search's "auto" trains logistic leaves (runs.search)
    return {"depth": int(s.cfg_depth), "leaf": "constant" if classify else s.cfg_leaf,
            **({"class_leaf": "logistic" if leaf == "auto" else leaf} if classify else {}),
            "linear_leaves": s.cfg_linear_leaves,
            "clip_leaves": bool(s.cfg_clip_leaves), **_budget_settings(s),
            "alpha_range": [float(s.cfg_alpha_min), float(s.cfg_alpha_max)],
            "n_alphas": int(s.cfg_n_alphas), "learning_rate": float(s.cfg_lr), "l1": float(s.cfg_l1),
            "polish": POLISH[s.cfg_polish], "device": "auto", "scaling": s.cfg_scaling,
            "max_split_features": int(s.cfg_split_features) if s.cfg_split_features.isdigit() else None}


def _depth_widgets(column, classify: bool = False) -> None:
    """A fixed depth, or the depth chosen for the user (the paper's protocol, ``runs.search``) up to a deepest one."""
    score = "accuracy" if classify else "R²"
    column.radio("Depth", list(DEPTH_MODES), key="cfg_depth_mode", horizontal=True, format_func=DEPTH_MODES.get,
                 help=f"choose for me: trees of depth 1, 2, ... are fitted on {FIT_PART} of the training rows and "
                      f"scored ({score}) on {SCORE_PART} until {SEARCH_PATIENCE} depths in a row stop improving it "
                      "(the paper's protocol); the best depth is refit on all training rows. Every depth's tree is "
                      "kept, so you can open a shallower one that is nearly as good.")
    choosing = st.session_state.cfg_depth_mode == "choose"
    column.slider("Deepest depth to try" if choosing else "Fixed depth", ALLOWED["depth"].low,
                  ALLOWED["depth"].high, key="cfg_depth")


def _split_features_widget(column, classify: bool = False) -> None:
    score = ACCURACY if classify else R2
    column.radio("Features per split", SPLIT_FEATURES, key="cfg_split_features", horizontal=True,
                 format_func=lambda v: "choose for me" if v == "auto" else v,
                 help="how many inputs a split may weigh: 1 gives an axis-aligned tree optimized as a whole, any is "
                      f"GET's dense hyperplane. Choose for me tries {path_text()}, and keeps the fewest whose "
                      f"{SCORE_NAMES[score]} is within {tolerance_text(score)} of the best.")


def _searching() -> bool:
    """Whether the run chooses its depth or features per split (a search, ``runs.search``)."""
    return st.session_state.cfg_depth_mode == "choose" or st.session_state.cfg_split_features == "auto"


def _search(classify: bool = False) -> dict | None:
    """The run's search request (``runs.search``): None for one tree of a fixed depth and features per split. A class
    search names its leaves; with logistic leaves (or their choice) its depths start at 0, one logistic model."""
    s = st.session_state
    if not _searching():
        return None
    leaf = class_leaf(True) if classify else None
    low = 0 if leaf in ("auto", "logistic") else ALLOWED["depth"].low
    depths = list(range(low, int(s.cfg_depth) + 1)) if s.cfg_depth_mode == "choose" else [int(s.cfg_depth)]
    return {"depths": depths, "split_features": "auto" if s.cfg_split_features == "auto" else None,
            **({"leaf": leaf} if classify else {})}


def _estimate_panel(n_rows: int, n_features: int, params: dict) -> None:
    path, config = common.calibration_path(), params["config"]
    waiting = estimate.search_estimate(n_rows, n_features, params, path) is None

    @st.fragment(run_every=1.0 if waiting else None)
    @common.guarded
    def panel() -> None:
        found = estimate.search_estimate(n_rows, n_features, params, path)
        if found is None:
            estimate.start_measurement(n_rows, n_features, config, path)  # no-op while another one runs
            st.caption(":material/timer: Measuring this machine for a run-time estimate (up to half a minute, "
                       "once per tree shape)...")
            return
        store = common.get_store()
        busy = store.count_running()
        note = f"; {busy} run(s) are training now, so it will take longer" if busy else ""
        st.caption(f":material/timer: Estimated run time: {found.describe()}{note}.")
        if waiting:
            st.rerun()

    panel()


def _submit(ready: dict, config: dict) -> None:
    s = st.session_state
    classify = is_classification(ready)
    search = _search(classify)
    params = {"config": config, "data": ready["spec"], "test_fraction": float(s.cfg_test_fraction),
              "seed": int(s.cfg_seed), **({"search": search} if search else {})}
    if classify and s.cfg_class_weight == "balanced":
        params["class_weight"] = "balanced"
    found = estimate.search_estimate(ready["n_rows"], ready["n_features"], params, common.calibration_path())
    if found is not None:  # the run's time left counts down from it through every phase (Run.eta_seconds)
        params["estimated_seconds"] = round(found.seconds, 1)
    leaf = CLASS_LEAF_NAMES[search.get("leaf") if search else config["class_leaf"]] if classify else config["leaf"]
    name = f"{ready['name']} · {common.describe_choice(params, leaf=leaf)}"
    st.session_state[common.STARTING] = True  # until selected below: a page left sooner opens the newest run
    run_id = launch.submit_run(common.get_store(), params, columns.to_parquet_bytes(ready["table"]), ready["name"],
                               n_rows=ready["n_rows"], n_features=ready["n_features"], name=name)
    common.select_run(run_id)
    st.session_state.pop(common.STARTING, None)
    st.toast(f"Run #{run_id} started.")
    # The button sits at the bottom of a long form, where a rerun would keep the view: open the run on the Runs page,
    # which starts at the top with the new run's live panel, instead of leaving it below the fold.
    st.switch_page("pages/runs.py", query_params={"run": str(run_id)})


common.guarded(train_page)()
