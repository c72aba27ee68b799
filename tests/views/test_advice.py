"""Advice per table (issue 52): made-up comparisons give the verdict their numbers call for, the table's facts say
why an ensemble leads, and a missing baseline gives no sentence."""

from __future__ import annotations

import numpy as np
import pytest

from get_core.views import advice
from get_core.views.advice import TableFacts, advise

WINE = TableFacts(rows=1599, classes=6, ordinal=True, repeated=0.15)


def test_the_forest_far_ahead_is_said_with_the_tables_reasons():
    said = advise({"get": 80.0, "forest": 91.0, "hgb": 90.0, "cart": 78.0, "logistic": 79.0}, WINE)
    assert said.startswith("The forest is 11.0 points ahead on this table (91.0 against 80.0): its classes are "
                           "ordinal")
    assert "its rows repeat (15% repeat an earlier row's features)" in said and "use the ensemble" in said
    assert "Logistic regression" not in said and "CART" not in said


def test_the_better_ensemble_is_the_one_compared_and_a_small_gap_is_a_small_price():
    said = advise({"get": 80.0, "forest": 80.5, "hgb": 81.5, "cart": 79.0})
    assert said == ("HistGradientBoosting is 1.5 points ahead on this table (81.5 against 80.0): a small price for "
                    "one readable tree.")


@pytest.mark.parametrize("forest, words", [(80.2, "level with the forest"), (78.0, "2.0 points ahead of the forest")])
def test_level_or_ahead_is_the_right_tool_unless_a_simple_model_leads(forest, words):
    said = advise({"get": 80.0, "forest": forest, "cart": 79.5})
    assert words in said and "it is the right tool here" in said
    said = advise({"get": 80.0, "forest": forest, "cart": 79.5, "logistic": 83.0})
    assert words in said and "right tool" not in said
    assert said.endswith("Logistic regression is 3.0 points ahead of the tree: the classes look nearly linear in the "
                         "features, so a tree with logistic leaves (leaf='logistic') or logistic regression itself "
                         "fits them better.")
    assert "Depth-tuned CART is 2.5 points ahead" in advise({"get": 80.0, "forest": forest, "cart": 82.5})


@pytest.mark.parametrize("missing", ["get", "forest", "cart"])
def test_no_sentence_when_a_needed_score_is_missing_or_not_a_number(missing):
    scores = {"get": 80.0, "forest": 91.0, "cart": 78.0, "hgb": 90.0, "logistic": 79.0}
    assert advise({k: v for k, v in scores.items() if k != missing}, WINE) is None
    assert advise({**scores, missing: float("nan")}, WINE) is None
    assert advise({**scores, missing: None}, WINE) is None


def test_the_facts_of_a_table():
    X = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, np.nan], [3.0, np.nan], [5.0, 6.0]])
    facts = advice.table_facts(X, [3, 4, 5, 4, 6], is_classifier=True)
    assert facts == TableFacts(rows=5, classes=4, ordinal=True, repeated=pytest.approx(0.4))
    assert advice.table_facts(X, ["a", "b", "c", "a", "b"], True).ordinal is False
    assert advice.table_facts(X, np.arange(5.0), False) == TableFacts(rows=5, repeated=pytest.approx(0.4))
    assert advice.table_facts(np.empty((0, 2)), [], True) == TableFacts(rows=0)
    few = advise({"get": 70.0, "forest": 80.0, "cart": 70.0}, TableFacts(rows=200, classes=2))
    assert "it has only 200 rows" in few


@pytest.mark.parametrize("labels, ordinal", [([3, 4, 5, 6, 7, 8], True), ([1.0, 2.0, 3.0], True), ([0, 1], False),
                                             ([1, 5, 9], False), ([1.5, 2.5, 3.5], False), ([True, False], False)])
def test_ordinal_classes_are_a_run_of_whole_numbers(labels, ordinal):
    assert advice.looks_ordinal(np.asarray(labels)) is ordinal


def test_a_runs_stored_scores_in_points():
    baselines = {"models": {"random_forest": {"accuracy": 0.91}, "cart": {"accuracy": 0.78},
                            "hist_gradient_boosting": {"accuracy": None}, "get_sparse": {"accuracy": 0.5}}}
    assert advice.run_scores(baselines, {"accuracy": 0.8}, "accuracy") == {"get": 80.0, "forest": 91.0,
                                                                         "cart": 78.0}
