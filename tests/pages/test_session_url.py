"""A reload keeps the session's dataset and choices (issue 22, item 4): the Train page's address names the stored
table, the data choices and the settings; a new session restores them, and a wrong address is said in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from pages import common, session_url
from pages.train import DEFAULTS
from tests.pages.test_app import EXAMPLE, TARGET_LABEL, assert_no_traceback, texts, upload, widget

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    (tmp_path / "calibration.measuring").write_text("held by the test")  # no run-time measurement starts
    return path


def _train_page(**params) -> AppTest:
    """A new session opening the Train page with ``params`` in its address (through the router, as a reload does)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at.switch_page("pages/train.py").run()


def _address_after_choosing(db) -> dict[str, str]:
    """Upload, choose a target, features and one-hot, set two Train settings; the Train page's query parameters."""
    table = pd.read_csv(EXAMPLE).head(80)
    columns = list(table.columns)
    at = upload(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run(), "noise.csv",
                table.to_csv(index=False).encode())
    widget(at.selectbox, TARGET_LABEL).set_value("target").run()
    widget(at.multiselect, "Features").set_value(columns[1:3]).run()
    at.switch_page("pages/train.py").run()
    at.slider(key="cfg_depth").set_value(3).run()  # not the default depth (config.APP_DEFAULTS)
    at.radio(key="cfg_scaling").set_value("robust").run()
    assert_no_traceback(at)
    return {key: (value[0] if isinstance(value, list) else value) for key, value in at.query_params.items()}


def test_a_new_session_on_the_train_pages_address_gets_the_dataset_choices_and_settings_back(db):
    address = _address_after_choosing(db)
    assert len(address["data"]) == session_url.FINGERPRINT_CHARS and address["train"] == "depth:3,scaling:robust"

    at = _train_page(**address)  # a reload: a new session with the same URL
    assert_no_traceback(at)
    assert not any("Data page first" in i for i in texts(at, "info"))
    assert any("Dataset **noise.csv**: 80 rows, 2 model inputs, target 'target'" in c for c in texts(at, "caption"))
    assert at.slider(key="cfg_depth").value == 3 and at.radio(key="cfg_scaling").value == "robust"
    assert at.radio(key="cfg_budget").value == DEFAULTS["cfg_budget"]
    assert at.query_params["data"] in (address["data"], [address["data"]])  # the same stored table, not a copy

    at.switch_page("pages/data.py").run()  # the Data page shows the same table and choices
    assert_no_traceback(at)
    assert widget(at.selectbox, TARGET_LABEL).value == "target"
    assert any("Ready: 80 rows, 2 model inputs" in s for s in texts(at, "success"))


@pytest.mark.parametrize("fingerprint, said", [("not-hex!", "is not a dataset fingerprint"),
                                               ("0123456789abcdef", "may have been deleted with its runs")])
def test_a_wrong_or_unknown_dataset_in_the_address_is_said_in_words(db, fingerprint, said):
    at = _train_page(data=fingerprint, train="depth:3")
    assert_no_traceback(at)
    assert any(said in w for w in texts(at, "warning")), texts(at, "warning")
    assert any("Data page first" in i for i in texts(at, "info"))


def test_settings_a_widget_cannot_take_are_dropped_in_words():
    values, problems = session_url.decode_settings("depth:99,leaf:oak,lr:nan,polish:maybe,colour:red,,starts:8",
                                                   DEFAULTS)
    assert values == {"cfg_starts": 8}
    assert problems == ["depth cannot be '99'", "leaf cannot be 'oak'", "lr cannot be 'nan'",
                        "polish cannot be 'maybe'", "'colour' is not a Train setting"]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_settings_text_gives_only_values_the_widgets_take(text):
    values, problems = session_url.decode_settings(text, DEFAULTS)
    for key, value in values.items():
        allowed = session_url.SETTINGS[key]
        assert type(value) is type(DEFAULTS[key])
        assert value in allowed if isinstance(value, (bool, str)) else allowed[0] <= value <= allowed[1]
    assert all(isinstance(p, str) for p in problems)


def _setting(key: str):
    allowed = session_url.SETTINGS[key]
    default = DEFAULTS[key]
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, str):
        return st.sampled_from(allowed)
    if isinstance(default, int):
        return st.integers(*allowed)
    return st.floats(*allowed, allow_nan=False)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.fixed_dictionaries({}, optional={key: _setting(key) for key in session_url.SETTINGS}))
def test_settings_read_back_as_written(values):
    text = session_url.encode_settings(values, DEFAULTS)
    decoded, problems = session_url.decode_settings(text, DEFAULTS)
    assert not problems
    assert decoded == {k: v for k, v in values.items() if v != DEFAULTS[k]}


def test_the_settings_ranges_are_the_train_widgets_own(db):
    address = _address_after_choosing(db)
    at = _train_page(**address)
    at.radio(key="cfg_leaf").set_value("linear").run()  # shows the linear-leaf widgets too
    at.radio(key="cfg_budget").set_value("manual").run()  # and the starts and epochs
    for key, allowed in session_url.SETTINGS.items():
        if key in ("cfg_class_weight", "cfg_class_leaf", "cfg_search_class_leaf"):  # a class target's only:
            # tests/pages/test_classes_pages.py
            continue
        element = next(e for e in at.main if getattr(e, "key", None) == key)
        if isinstance(DEFAULTS[key], bool):
            continue
        if isinstance(DEFAULTS[key], str):
            assert len(element.options) == len(allowed), key  # shown through format_func; the values are ALLOWED's
        else:
            assert (element.min, element.max) == pytest.approx(allowed), key


def test_hostile_train_settings_in_the_address_are_said_and_the_page_still_renders(db):
    address = _address_after_choosing(db)
    at = _train_page(**{**address, "train": "depth:64,n_starts:1000000000,time_budget:-1"})
    assert_no_traceback(at)
    assert not texts(at, "error"), texts(at, "error")
    said = " ".join(texts(at, "warning"))
    assert "depth cannot be '64'" in said and "'n_starts' is not a Train setting" in said
    assert "'time_budget' is not a Train setting" in said
    assert at.slider(key="cfg_depth").value == DEFAULTS["cfg_depth"]
    assert any("Dataset **noise.csv**" in c for c in texts(at, "caption"))


def test_a_deeply_nested_onehot_in_the_address_is_said_in_words_not_a_recursion_error(db):
    address = _address_after_choosing(db)
    at = _train_page(**{**address, "onehot": "[" * 5000 + "]" * 5000})
    assert_no_traceback(at)
    assert not any("went wrong" in e for e in texts(at, "error")), texts(at, "error")
    assert any("'onehot' must list some of the table's feature columns" in w for w in texts(at, "warning")), \
        texts(at, "warning")


@pytest.mark.parametrize("page", ["pages/runs.py", "pages/tree.py"])
def test_a_reload_on_runs_or_tree_keeps_the_dataset_and_settings(db, page):
    """Issue 35: Start opened Runs with only ``?run=`` in the URL, so a reload there (or on Tree) lost the table."""
    address = _address_after_choosing(db)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in address.items():
        at.query_params[key] = value
    at.switch_page("pages/train.py").run()
    at.query_params.clear()  # what Start's switch to Runs, or a click in the sidebar, leaves of the address
    at.switch_page(page).run()  # the page writes the dataset and settings back
    assert at.query_params["data"] in (address["data"], [address["data"]])
    kept = {key: (value[0] if isinstance(value, list) else value) for key, value in at.query_params.items()}

    reloaded = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)  # a reload there: a new session
    for key, value in kept.items():
        reloaded.query_params[key] = value
    reloaded.switch_page(page).run()
    assert_no_traceback(reloaded)
    reloaded.switch_page("pages/train.py").run()
    assert_no_traceback(reloaded)
    assert not any("Data page first" in i for i in texts(reloaded, "info"))
    assert any("Dataset **noise.csv**: 80 rows, 2 model inputs" in c for c in texts(reloaded, "caption"))
    assert reloaded.slider(key="cfg_depth").value == 3 and reloaded.radio(key="cfg_scaling").value == "robust"


@pytest.mark.parametrize("raw", ["1_0", " 10", "10 ", "+10", "\u0661\u0660", "1e1", "10.0", "", "0x10"])
def test_a_run_or_node_in_the_address_is_ascii_digits_only(raw):
    """``?run=1_0`` was read as run 10: Python's int() takes underscores, spaces, a plus and other scripts'
    digits."""
    assert common.url_int(raw) is None


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789_-+. eE\u0661\u00b2x"), max_size=12) | st.text(max_size=12))
def test_url_numbers_read_only_what_a_url_writes(raw):
    whole, number = common.url_number(raw, whole=True), common.url_number(raw, whole=False)
    plain = raw.isascii() and "_" not in raw and raw.strip() == raw and not raw.startswith("+")
    if whole is not None:
        assert plain and whole == int(raw) and str(whole).lstrip("-").lstrip("0") in raw
    if number is not None:
        assert plain and number == float(raw)


def test_a_reload_keeps_category_columns_handed_to_the_estimator(db):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"colour": rng.choice(["red", "blue"], 60), "x": rng.random(60), "y": rng.random(60)})
    at = upload(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run(), "colours.csv",
                table.to_csv(index=False).encode())
    assert at.session_state["data_ready"]["spec"]["one_hot"] is False  # the Data page's default
    at.switch_page("pages/train.py").run()
    address = {key: (value[0] if isinstance(value, list) else value) for key, value in at.query_params.items()}
    assert address["categories"] == "groups"
    at = _train_page(**address)  # a reload
    assert_no_traceback(at)
    assert at.session_state["data_ready"]["spec"]["one_hot"] is False
    at.switch_page("pages/data.py").run()
    assert_no_traceback(at)
    assert widget(at.radio, "Category columns").value == "categories"
    old = _train_page(**{k: v for k, v in address.items() if k != "categories"})  # an address from before
    assert "one_hot" not in old.session_state["data_ready"]["spec"]
