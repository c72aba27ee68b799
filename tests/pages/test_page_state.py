"""What a page shows survives a visit to another page: Streamlit forgets a widget's state, and a page link drops the
query string, as soon as the page is left."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from get_core.config import APP_DEFAULTS, ALLOWED, DEFAULTS
from get_core.runs.store import RunStore, default_db_path
from pages import common
from tests.explorer_runs import finished_run
from tests.pages.test_app import app, assert_no_traceback, db, texts, upload, widget  # noqa: F401 (db: a fixture)

pytestmark = pytest.mark.usefixtures("db")  # a fresh run database per test
NAMES = ["temp", "pressure", "wind"]


def go(at: AppTest, page: str) -> AppTest:
    """Open ``page`` as the sidebar does: without the current page's query string."""
    at.query_params.clear()
    at.switch_page(page).run()
    assert_no_traceback(at)
    return at


def small_table() -> bytes:
    return pd.DataFrame({"x": [7 * i % 13 for i in range(30)], "y": range(30)}).to_csv(index=False).encode()


def query(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_the_data_page_keeps_its_source_example_and_features_across_pages():
    at = app()
    widget(at.radio, "Source").set_value("Example dataset").run()
    widget(at.selectbox, "Example dataset").set_value("delta_elevators.csv").run()
    features = widget(at.multiselect, "Features")
    kept = features.value[:3]
    features.set_value(kept).run()
    go(go(at, "pages/train.py"), "pages/data.py")
    assert widget(at.radio, "Source").value == "Example dataset"
    assert widget(at.selectbox, "Example dataset").value == "delta_elevators.csv"
    assert widget(at.multiselect, "Features").value == kept
    ready = at.session_state["data_ready"]
    assert ready["name"] == "delta_elevators.csv" and ready["n_features"] == 3


def test_switching_to_the_examples_loads_none_until_one_is_picked():
    at = upload(app(), "mine.csv", small_table())
    widget(at.radio, "Source").set_value("Example dataset").run()
    assert_no_traceback(at)
    assert widget(at.selectbox, "Example dataset").value is None
    assert at.session_state["data_ready"]["name"] == "mine.csv"


def test_the_examples_do_not_show_the_old_upload_and_name_their_columns():
    """Issue 35: with "Example dataset" chosen the uploaded table stayed on screen; airfoil's columns were in1...in5."""
    at = upload(app(), "mine.csv", small_table())
    assert any("**mine.csv**" in c for c in texts(at, "caption")) and at.dataframe
    widget(at.radio, "Source").set_value("Example dataset").run()
    assert not any("**mine.csv**" in c for c in texts(at, "caption")) and not at.dataframe
    assert any("Pick an example" in i and "mine.csv" in i for i in texts(at, "info"))
    widget(at.selectbox, "Example dataset").set_value("airfoil_self_noise.csv").run()
    assert_no_traceback(at)
    features = widget(at.multiselect, "Features").options
    assert "frequency_hz" in features and not any(name.startswith("in") and name[2:].isdigit() for name in features)
    widget(at.radio, "Source").set_value("Upload a file").run()  # the uploader is empty: the example is not shown
    assert not any("**airfoil_self_noise.csv**" in c for c in texts(at, "caption"))


def test_the_chosen_delimiter_survives_other_pages():
    at = app()
    widget(at.selectbox, "Delimiter (text files)").set_value("; semicolon").run()
    go(go(at, "pages/train.py"), "pages/data.py")
    assert widget(at.selectbox, "Delimiter (text files)").value == "; semicolon"


def test_the_linear_leaf_options_survive_other_pages():
    at = go(upload(app(), "t.csv", small_table()), "pages/train.py")  # they are hidden, and set, on the first run
    at.radio(key="cfg_leaf").set_value("linear").run()
    at.radio(key="cfg_linear_leaves").set_value("ols").run()
    at.checkbox(key="cfg_clip_leaves").uncheck().run()
    go(go(at, "pages/data.py"), "pages/train.py")
    assert at.radio(key="cfg_linear_leaves").value == "ols" and at.checkbox(key="cfg_clip_leaves").value is False


def test_the_tree_page_gets_its_run_node_and_expanded_subtrees_back_after_another_page():
    store = RunStore(default_db_path())
    run_id = finished_run(store, depth=6, names=NAMES, n_rows=400)
    at = app()
    at.query_params["run"] = str(run_id)
    at.switch_page("pages/tree.py").run()
    at.number_input(key="node_pick").set_value(8).run()
    at.button(key="tree_expand").click().run()
    at.number_input(key="node_pick").set_value(5).run()
    go(go(at, "pages/predict.py"), "pages/tree.py")
    assert at.subheader[0].value.startswith("Node 5 ")
    assert (query(at, "run"), query(at, "node"), query(at, "expand")) == (str(run_id), "5", "8")


def test_an_explicit_node_in_the_url_wins_over_the_remembered_one():
    store = RunStore(default_db_path())
    run_id = finished_run(store, depth=3, names=NAMES)
    at = app()
    at.query_params.update(run=str(run_id), node="5")
    at.switch_page("pages/tree.py").run()
    at.query_params["node"] = "3"
    at.run()
    assert_no_traceback(at)
    assert at.subheader[0].value.startswith("Node 3 ") and query(at, "node") == "3"


def test_small_learning_rates_and_penalties_are_shown_as_set():
    at = go(upload(app(), "t.csv", small_table()), "pages/train.py")
    for key, value in (("cfg_lr", 0.00002), ("cfg_l1", 0.00001)):
        box = at.number_input(key=key)
        box.set_value(value).run()
        box = at.number_input(key=key)
        assert float(box.format % box.value) == pytest.approx(value)  # not "0.0000"


def test_the_run_caption_names_a_learning_rate_and_l1_that_are_not_the_defaults():
    store = RunStore(default_db_path())
    config = {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1, "learning_rate": 0.00002,
              "l1": 0.00001}
    params = {"config": config, "seed": 0, "data": {"target": "y", "features": ["x"]}}
    run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1)
    at = app()
    at.query_params["run"] = str(run_id)
    at.switch_page("pages/train.py").run()
    assert any("learning rate 2e-05, L1 1e-05" in c for c in texts(at, "caption"))
    assert "learning rate" not in common.describe_params({"config": dict(common.OPTIMIZER_DEFAULTS)})


def test_the_train_page_starts_from_gets_defaults_and_refuses_settings_get_refuses():
    at = go(upload(app(), "t.csv", small_table()), "pages/train.py")
    depth = at.slider(key="cfg_depth")
    assert (depth.value, depth.max) == (APP_DEFAULTS.depth, ALLOWED["depth"].high)  # the app's default run
    assert at.radio(key="cfg_leaf").value == APP_DEFAULTS.leaf
    assert at.number_input(key="cfg_lr").value == DEFAULTS.learning_rate
    assert any(b.key == "start" for b in at.button)
    at.number_input(key="cfg_alpha_min").set_value(200.0).run()  # above alpha max
    assert any("alpha_range must be (min, max) with 0 < min <= max" in e.value.replace("\\", "") for e in at.error)
    assert not any(b.key == "start" for b in at.button)
