"""A class target on the Data and Train pages (AppTest): recognized, asked in words where it could be a number too,
counted, refused with what to do, its imbalance stated, and the task carried to the Train page and the URL."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pages import session_url
from tests.pages.test_app import TARGET_LABEL, app, assert_no_traceback, db, texts, upload, widget  # noqa: F401

ASK = "Predict a class or a number?"


def csv(target: list, name: str = "y") -> bytes:
    n = len(target)
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), name: target}).to_csv(
        index=False).encode()


def choose(at, target: str):
    widget(at.selectbox, TARGET_LABEL).set_value(target).run()
    assert_no_traceback(at)
    return at


def ask(at):
    return next((r for r in at.radio if r.label.startswith(ASK)), None)


def test_a_text_target_is_a_class_target_with_its_counts_and_travels_to_train(db):
    at = choose(upload(app(), "penguins.csv", csv(["Adelie"] * 20 + ["Gentoo"] * 15 + ["Chinstrap"] * 10,
                                                  "species")), "species")
    assert ask(at) is None  # text can only be classes: nothing to ask
    assert any("'species' holds text, so the tree predicts a class: one of its 3 distinct values" in c
               for c in texts(at, "caption"))
    counts = at.dataframe[-1].value
    assert counts["class"].tolist() == ["Adelie", "Chinstrap", "Gentoo"] and counts["rows"].tolist() == [20, 10, 15]
    assert any("Ready: 45 rows, 2 model inputs, classes of 'species'" in s for s in texts(at, "success"))
    at.switch_page("pages/train.py").run()
    assert_no_traceback(at)
    assert at.query_params["task"] in (["classification"], "classification")
    assert any("classes of 'species'" in c for c in texts(at, "caption"))
    assert at.radio(key="cfg_class_weight").value == "none"
    assert tuple(at.radio(key="cfg_class_weight").options) == ("as in the data", "balanced")
    assert len(session_url.SETTINGS["cfg_class_weight"]) == 2  # the URL takes the widget's values
    leaves = [r for r in at.radio if r.label == "Leaves"]  # a class target's leaves, not regression's
    assert [r.key for r in leaves] == ["cfg_class_leaf"] and tuple(leaves[0].options) == ("class shares", "logistic")
    assert leaves[0].value == "constant" and len(session_url.SETTINGS["cfg_class_leaf"]) == 2


def test_a_class_targets_leaves_are_chosen_under_choose_for_me_and_kept_in_the_address(db):
    """Issue 52: a fixed tree's leaves are class shares or logistic; under "choose for me" the search chooses them by
    default (from depth 0, one logistic model), and a choice travels through the URL to a new session."""
    from pages import train

    at = choose(upload(app(), "kinds.csv", three_class_csv()), "kind")
    at.switch_page("pages/train.py").run()
    at.radio(key="cfg_class_leaf").set_value("logistic").run()
    assert "class_leaf:logistic" in at.query_params["train"]
    at.radio(key="cfg_depth_mode").set_value("choose").run()
    assert_no_traceback(at)
    leaves = next(r for r in at.radio if r.label == "Leaves")
    assert leaves.key == "cfg_search_class_leaf" and leaves.value == "auto"
    assert tuple(leaves.options) == ("choose for me", "class shares", "logistic")
    leaves.set_value("constant").run()
    assert "search_class_leaf:constant" in at.query_params["train"]
    values, problems = session_url.decode_settings(at.query_params["train"], train.DEFAULTS)
    assert not problems and values["cfg_class_leaf"] == "logistic" and values["cfg_search_class_leaf"] == "constant"


def test_a_0_1_target_asks_a_class_or_a_number_and_the_answer_decides(db):
    at = choose(upload(app(), "titanic.csv", csv([0, 1, 1, 0, 0] * 8, "survived")), "survived")
    question = ask(at)
    assert question is not None and "'survived' holds 2 whole-number values" in question.label
    assert question.value == "classification"
    assert any("classes of 'survived'" in s for s in texts(at, "success"))
    question.set_value("regression").run()
    assert_no_traceback(at)
    assert any("target 'survived'" in s for s in texts(at, "success"))


def test_a_number_with_many_values_is_a_regression_target_without_a_question(db):
    at = choose(upload(app(), "numbers.csv", csv(list(np.linspace(0, 1, 40)), "strength")), "strength")
    assert ask(at) is None and any("target 'strength'" in s for s in texts(at, "success"))


@pytest.mark.parametrize("target, message", [
    (["same"] * 30, "has a single class ('same') in the usable rows: a tree cannot learn to tell classes apart"),
    (["a", "b"] * 15 + ["lonely"], "class 'lonely' with a single row: a class needs at least 2 rows"),
    ([f"c{i:02d}" for i in range(60)] * 2, "has 60 classes; GET Explorer classifies at most 50: group rare classes"),
])
def test_classes_a_tree_cannot_learn_from_are_refused_with_what_to_do(db, target, message):
    at = choose(upload(app(), "bad.csv", csv(target, "label")), "label")
    assert any(message in e for e in texts(at, "error")), texts(at, "error")
    assert not texts(at, "success")


def test_a_strong_imbalance_is_stated_and_balanced_weights_offered_for_the_train_page(db):
    at = choose(upload(app(), "fraud.csv", csv(["ok"] * 98 + ["fraud"] * 2, "label")), "label")
    assert any("The classes are imbalanced: 'fraud' has 2 rows (2.0%)" in i for i in texts(at, "info"))
    at.checkbox(key="_balanced_offer").check().run()
    at.switch_page("pages/train.py").run()
    assert_no_traceback(at)
    assert at.radio(key="cfg_class_weight").value == "balanced"


def three_class_csv() -> bytes:
    from tests.runs.test_class_run import three_classes

    return three_classes(120).to_csv(index=False).encode()


def test_a_class_run_trains_from_the_pages_and_its_panel_speaks_of_accuracy(db):
    from get_core.runs.store import RunStore
    from tests.pages.test_app import train_tiny_run

    at = choose(upload(app(), "kinds.csv", three_class_csv()), "kind")
    at.switch_page("pages/train.py").run()
    at.radio(key="cfg_depth_mode").set_value("choose").run()  # a class target's depth can be chosen too
    assert_no_traceback(at)
    assert at.button(key="start") and not texts(at, "warning")
    at.radio(key="cfg_depth_mode").set_value("fixed").run()
    store = train_tiny_run(at, db, depth=2)
    run = store.get_run(1)
    assert run.params["data"]["task"] == "classification" and run.status.is_finished()
    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    labels = [m.label for m in at.metric]
    assert {"Train accuracy", "Test accuracy", "Balanced accuracy", "Log loss"} <= set(labels)
    assert "Test R²" not in labels
    accuracy = next(m for m in at.metric if m.label == "Test accuracy").value
    assert accuracy.endswith("%") and float(accuracy[:-1]) == pytest.approx(
        100 * RunStore(db).get_json(1, "class_scores")["accuracy"], abs=0.06)
    assert any("Brier score on the training rows" in c for c in texts(at, "caption"))
    curves = next(c for c in at.get("plotly_chart") if "curves" in c.proto.id)
    assert "training accuracy of the tree's own (hard) splits" in curves.proto.spec
    assert "accuracy (%)" in curves.proto.spec and "RMSE" not in curves.proto.spec
