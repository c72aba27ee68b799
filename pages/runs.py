"""Runs page: every run in the store; open one, compare two side by side, rename or delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from get_core.runs.estimate import format_seconds
from get_core.runs.results import model_inputs
from get_core.runs.spec import leaves_text
from get_core.runs.store import Run, StoreError
from get_core.views.curves import loss_curves_figure
from pages import common, review_ui, run_panel, session_url

#: Session keys of the Compare and Rename / delete tabs' choices (their pickers' own keys change with the labels).
COMPARE_CHOICE, MANAGE_CHOICE = "compare_choice", "manage_choice"


def runs_page() -> None:
    st.title("Runs")
    session_url.carry()  # a reload here keeps the dataset (issue 35)
    common.refresh_queue()
    store = common.get_store()
    runs = store.list_runs()
    if not runs:
        st.info("No runs yet: choose a dataset on the Data page, then start one on the Train page.")
        st.page_link("pages/data.py", label="Go to Data", icon=":material/table:")
        return
    _runs_table(any(not r.status.is_finished() for r in runs))
    by_id = {r.run_id: r for r in runs}
    open_tab, compare_tab, manage_tab = st.tabs(["Open", "Compare two", "Rename / delete"])
    with open_tab:
        chosen = common.pick_run("Run", runs, common.selected_run_id(), key="open_run")
        common.select_run(chosen)
        run_panel.run_panel(chosen)
        _details(by_id[chosen])
        review_ui.share_panel(by_id[chosen])
    with compare_tab:
        _compare(by_id)
    with manage_tab:
        _manage(by_id)


def _runs_table(active: bool) -> None:
    @st.fragment(run_every=2.0 if active else None)
    @common.guarded
    def table() -> None:
        runs = common.get_store().list_runs()
        # few, narrow columns: all of them fit a 1,400 px window (the last ones were cut, issue 48)
        st.dataframe(pd.DataFrame([_row(r) for r in runs]), hide_index=True, column_config={
            "id": st.column_config.NumberColumn(width=40), "name": st.column_config.TextColumn(width=150),
            "test score": st.column_config.TextColumn(width=165), "status": st.column_config.TextColumn(width=95),
            "dataset": st.column_config.TextColumn(width=140), "tree": st.column_config.TextColumn(width=175),
            "duration": st.column_config.TextColumn(width=70), "created": st.column_config.TextColumn(width=90)})
        if active and all(r.status.is_finished() for r in runs):
            st.rerun()

    table()


def _row(run: Run) -> dict:
    config = run.params.get("config", {})
    duration = run.duration()
    return {"id": run.run_id, "name": run.name,
            "test score": _test_score(run),  # the key column first: clipped last (issue 35)
            # a live run's progress: Run.percent, the run panel's figure
            "status": run.status.value.lower() + ("" if run.status.is_finished() else f" {run.percent}%"),
            "dataset": f"{run.dataset_name} ({run.n_rows:,} rows)",
            "tree": f"{common.describe_choice(run.params)}, {leaves_text(run.params)}; {_budget(config)}",
            "duration": format_seconds(duration) if duration is not None else "",
            "created": pd.Timestamp(run.created_at, unit="s", tz="UTC").tz_convert(None).strftime("%d %b %H:%M")}


def _test_score(run: Run) -> str:
    """``R² 0.8123, RMSE 4.321``, a class run's ``accuracy 92.5%``, or a dash before the run has one (a class run
    has no R²: its empty number columns read "None", issue 48)."""
    if run.test_r2 is not None or run.test_rmse is not None:
        return f"R\u00b2 {common.number(run.test_r2)}, RMSE {common.number(run.test_rmse)}"
    if run.params.get("data", {}).get("task") != "classification" or not run.status.is_finished():
        return "\u2013"  # only a finished class run has test scores to read: no artifact read per row otherwise
    accuracy = (common.get_store().get_json(run.run_id, "class_scores") or {}).get("accuracy")
    return "\u2013" if accuracy is None else f"accuracy {accuracy:.1%}"


def _budget(config: dict) -> str:
    """A time budget's seconds (the race chose its starts and epochs), else the starts × epochs the run was given."""
    if config.get("time_budget") is not None:
        return f"{config['time_budget']:g} s, raced"
    return f"{config.get('n_starts')} × {_thousands(config.get('n_epochs'))}"


def _thousands(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "\u2013" if value is None else str(value)


def _details(run: Run) -> None:
    with st.expander("Parameters and artifacts"):
        st.json(dict(run.params), expanded=False)
        st.write("Artifacts:", ", ".join(common.get_store().list_artifacts(run.run_id)) or "none yet")
        st.caption(f"Dataset fingerprint (SHA-256): {run.dataset_fingerprint}")


def _compare(by_id: dict[int, Run]) -> None:
    ids = list(by_id)
    labels = [common.run_label(run) for run in by_id.values()]
    default = [i for i in st.session_state.get(COMPARE_CHOICE, ids[:2]) if i in by_id]
    chosen = st.multiselect("Two runs", ids, max_selections=2, format_func=lambda i: common.run_label(by_id[i]),
                            default=default, key=common.labelled_key("compare_runs", labels))
    st.session_state[COMPARE_CHOICE] = chosen
    if len(chosen) != 2:
        st.info("Choose two runs to compare.")
        return
    runs = [common.get_store().get_run(i) for i in chosen]
    table = _param_table(runs).rename_axis("setting").reset_index()  # a column of its own: the index was cut
    st.dataframe(table, hide_index=True, column_config={"setting": st.column_config.TextColumn(width="large"),
                                                        "same": st.column_config.CheckboxColumn(width="small")})
    for column, run in zip(st.columns(2), runs):
        with column:
            st.markdown(f"**#{run.run_id} {common.plain(run.name)}**")
            figure = loss_curves_figure(common.get_store().list_metrics(run.run_id),
                                        n_epochs=run.n_epochs, n_stages=run.n_stages, height=380,
                                        y_scale=run_panel.target_scale(common.get_store(), run.run_id))
            st.plotly_chart(figure, key=f"compare-curves-{run.run_id}")


def _param_table(runs: list[Run]) -> pd.DataFrame:
    rows: dict[str, list] = {}
    for i, run in enumerate(runs):
        flat = {"status": run.status.value.lower(), "dataset": run.dataset_name, "rows": _thousands(run.n_rows),
                "model inputs": model_inputs(common.get_store(), run),
                **{common.CONFIG_LABELS.get(k, k.replace("_", " ")): _thousands(v)
                   for k, v in _raced(run, _dense_as_any(run.params.get("config", {}))).items()},
                "depth and features per split": common.describe_choice(run.params),  # as set or chosen for you
                "target": run.params.get("data", {}).get("target"), "test fraction": run.params.get("test_fraction"),
                "seed": run.params.get("seed"), "test score": _test_score(run),
                "duration": format_seconds(run.duration() or 0)}
        for key, value in flat.items():
            rows.setdefault(key, [None] * len(runs))[i] = "\u2013" if value is None else value
    table = pd.DataFrame(rows, index=[f"#{r.run_id}" for r in runs]).T.astype(str)
    table["same"] = table.nunique(axis=1) == 1
    return table.sort_values("same", kind="stable")  # the settings that differ first (issue 35)


def _raced(run: Run, config: dict) -> dict:
    """A budgeted run's settings with the starts and epochs its race ran (its model records them), not the unused
    10 x 3,000 of its config."""
    if config.get("time_budget") is None:
        return config
    model = common.get_store().get_json(run.run_id, "model")
    ran = (model or {}).get("meta", {}).get("config", {})
    if "n_starts" not in ran:
        return {**config, "n_starts": None, "n_epochs": None}
    return {**config, "n_starts": f"{ran['n_starts']} raced", "n_epochs": f"{ran['n_epochs']:,} per stage"}


def _dense_as_any(config: dict) -> dict:
    """The run's settings with features per split as the Train page says it: dense splits (None) are "any"."""
    return {**config, "max_split_features": config.get("max_split_features") or "any"}


def _manage(by_id: dict[int, Run]) -> None:
    store = common.get_store()
    # The picker is drawn afresh when a label changes (a rename, a run that finished): it keeps its own choice, and
    # follows the opened run when that changes.
    chosen_then, opened_then = st.session_state.get(MANAGE_CHOICE, (None, None))
    opened = common.selected_run_id()
    chosen = common.pick_run("Run to rename or delete", list(by_id.values()),
                             chosen_then if opened_then == opened else opened, key="manage_run")
    st.session_state[MANAGE_CHOICE] = (chosen, opened)
    run = by_id[chosen]
    with st.form(f"rename-{chosen}"):
        name = st.text_input("New name", value=run.name, max_chars=200)  # the store keeps 200 characters
        if st.form_submit_button("Rename"):
            try:
                store.rename_run(chosen, name)
            except StoreError as exc:  # shown here, so the delete controls below still render
                st.error(common.plain(str(exc)))
            else:
                st.rerun()
    if not run.status.is_finished():
        st.caption(f"Run #{chosen} is {run.status.value.lower()}: cancel it before deleting it.")
        return
    sure = st.checkbox(f"Yes, delete run #{chosen} with its metrics and model", key=f"confirm-delete-{chosen}")
    if st.button("Delete run", disabled=not sure, key=f"delete-{chosen}"):
        store.delete_run(chosen)
        if common.selected_run_id() == chosen:
            common.select_run(None)
        st.toast(f"Deleted run #{chosen} ({run.name}) with its metrics and model.")  # shown across the rerun
        st.rerun()


common.guarded(runs_page)()
