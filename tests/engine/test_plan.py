"""The plan of a time-budgeted fit (``get_core.engine.plan``): a budgeted fit records every decision it took from the
clock, and a fit given that record replays it bit for bit, whatever its own clock says; a plan of another fit is
refused with a sentence, and the plan travels in the model file.

The fits here run under a ``Ticking`` clock (every read moves it on by a fixed step), so what a budget decides is a
function of the code alone, never of the machine's speed or load; a replay runs under a clock ten times slower or
faster, which makes a fit that read it decide otherwise (each test checks that too).
"""

import copy
import json

import numpy as np
import pytest
import torch
from sklearn.base import clone

from get_core import GETClassifier, GETClassifierCV, GETRegressor, GETRegressorCV
from get_core.budget import split_budget
from get_core.config import GETConfig
from get_core.engine.node_refit import refit_nodes
from get_core.engine.optimize import CHECKPOINTS_PER_STAGE
from get_core.engine.plan import Plan, PlanError
from get_core.engine.race import Race, RacePlan
from get_core.engine.train import train
from get_core.model.model_file import load_model_json, model_json
from tests.clock import Clock
from tests.engine.cpu_clock import use_ticking_clock
from tests.engine.test_node_refit import tree_with_splits
from tests.engine.test_race import MS
from tests.planted import planted_classes, planted_depth2

#: The recording clock's step: the race stops at its hard limit in a polish level, a rung drops starts, the node
#: refit's deadline stops its second pass, and the polish still runs (``test_the_recording_clock_makes_every_kind``).
RECORD_TICK = 0.02
#: The replays' clocks: a fit that read them would decide otherwise (the race runs out of time sooner or later).
OTHER_TICKS = (0.05, 0.2)


def same_tree(a, b) -> None:
    """Every array of two fitted trees is equal, bit for bit."""
    for name in ("weights", "thresholds", "leaf_intercepts", "leaf_coefs", "leaf_lower", "leaf_upper", "n_samples",
                 "node_values", "x_min", "x_scale"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.y_min, a.y_scale) == (b.y_min, b.y_scale)
    if a.is_classifier:
        np.testing.assert_array_equal(a.leaf_proba, b.leaf_proba)


def recorded(monkeypatch, estimator, X, y):
    """``estimator`` fitted under the recording clock."""
    use_ticking_clock(monkeypatch, RECORD_TICK)
    return clone(estimator).fit(X, y)


@pytest.fixture(scope="module")
def data():
    return planted_depth2(300, seed=1)


def test_the_recording_clock_makes_every_kind_of_decision(monkeypatch, data):
    """The recording clock of these tests drives a fit through every kind of decision, so the replays below replay
    them all."""
    X, y, _ = data
    plan = recorded(monkeypatch, GETRegressor(depth=3, time_budget=2.0, random_state=7), X, y).tree_.meta["plan"]
    kinds = {question for question, _ in plan["decisions"]}
    assert kinds == {"race", "keep", "stop", "refit_stop", "polish"}
    assert json.loads(json.dumps(plan)) == plan  # plain JSON


@pytest.mark.parametrize("settings", [
    dict(leaf="constant"), dict(leaf="linear"), dict(max_split_features=2), dict(polish=True, leaf="linear"),
    dict(polish=False)], ids=["constant", "linear", "k-sparse", "polish-on", "no-polish"])
def test_a_budgeted_fit_replayed_from_its_plan_is_the_same_tree_bit_for_bit(monkeypatch, data, settings):
    X, y, _ = data
    model = GETRegressor(depth=3, time_budget=2.0, random_state=7, **settings)
    first = recorded(monkeypatch, model, X, y)
    plan = first.tree_.meta["plan"]
    for tick in OTHER_TICKS:
        use_ticking_clock(monkeypatch, tick)
        assert clone(model).fit(X, y).tree_.meta["plan"]["decisions"] != plan["decisions"]  # the clock decides
        use_ticking_clock(monkeypatch, tick)
        again = clone(model).set_params(replay_plan=plan).fit(X, y)
        same_tree(first.tree_, again.tree_)
        np.testing.assert_array_equal(first.predict(X), again.predict(X))
        assert again.tree_.meta["plan"] == plan  # a replay records the plan it followed: it replays again


def test_a_fit_whose_budget_ran_out_before_a_polish_level_replays_that_stop(monkeypatch, data):
    """A slower recording clock: the spent budget keeps a polish level from starting ("polish_stop")."""
    X, y, _ = data
    model = GETRegressor(depth=3, time_budget=2.0, random_state=7)
    use_ticking_clock(monkeypatch, 0.05)
    first = clone(model).fit(X, y)
    assert "polish_stop" in {question for question, _ in first.tree_.meta["plan"]["decisions"]}
    use_ticking_clock(monkeypatch, OTHER_TICKS[1])
    same_tree(first.tree_, clone(model).set_params(replay_plan=first.tree_.meta["plan"]).fit(X, y).tree_)


def test_a_budgeted_classifier_replayed_from_its_plan_is_the_same_tree_bit_for_bit(monkeypatch):
    X, labels, _ = planted_classes(400, 2, seed=3, n_classes=3)
    y = np.array(["low", "mid", "high"])[labels]
    model = GETClassifier(depth=3, time_budget=2.0, random_state=7, class_weight="balanced")
    first = recorded(monkeypatch, model, X, y)
    use_ticking_clock(monkeypatch, OTHER_TICKS[0])
    again = clone(model).set_params(time_budget=None, replay_plan=first.tree_.meta["plan"]).fit(X, y)
    same_tree(first.tree_, again.tree_)
    np.testing.assert_array_equal(first.predict_proba(X), again.predict_proba(X))
    np.testing.assert_array_equal(first.predict(X), again.predict(X))


def test_a_replay_takes_the_budget_and_the_seed_from_the_plan_when_left_none(monkeypatch, data):
    """A budgeted fit without a seed draws one and records it, so it too can be replayed."""
    X, y, _ = data
    first = recorded(monkeypatch, GETRegressor(depth=2, time_budget=1.5), X, y)
    seed = first.tree_.meta["plan"]["seed"]
    assert isinstance(seed, int) and first.tree_.meta["config"]["random_state"] == seed
    use_ticking_clock(monkeypatch, OTHER_TICKS[1])
    again = GETRegressor(depth=2, replay_plan=first.tree_.meta["plan"]).fit(X, y)
    same_tree(first.tree_, again.tree_)
    assert again.tree_.meta["config"]["time_budget"] == 1.5


def test_the_plan_survives_the_model_file_and_replays_from_it(monkeypatch, data):
    X, y, _ = data
    first = recorded(monkeypatch, GETRegressor(depth=3, time_budget=2.0, random_state=7), X, y)
    loaded = load_model_json(model_json(first.tree_))
    assert loaded.meta["plan"] == first.tree_.meta["plan"]
    use_ticking_clock(monkeypatch, OTHER_TICKS[0])
    same_tree(first.tree_, GETRegressor(depth=3, random_state=7, replay_plan=loaded.meta["plan"]).fit(X, y).tree_)


@pytest.fixture(scope="module")
def plan_of_7():
    """The plan of a depth-3 budgeted fit with seed 7 on ``planted_depth2(300, seed=1)``."""
    X, y, _ = planted_depth2(300, seed=1)
    with pytest.MonkeyPatch.context() as patch:
        return recorded(patch, GETRegressor(depth=3, time_budget=2.0, random_state=7), X, y).tree_.meta["plan"]


def edited(plan: dict, **changes) -> dict:
    return {**copy.deepcopy(plan), **changes}


@pytest.mark.parametrize("change, data_change, words", [
    (dict(depth=2), None, "other settings (depth=3 there, 2 here)"),
    (dict(leaf="linear"), None, "leaf='constant' there, 'linear' here"),
    (dict(random_state=8), None, "random_state=7; this fit has random_state=8"),
    (dict(time_budget=3.0), None, "time_budget=2.0; this fit has time_budget=3.0"),
    ({}, "rows", "recorded on 300 rows x 4 features; this fit has 299 x 4"),
    ({}, "values", "recorded on other data (the same shape, other values or weights)"),
    ({}, "order", "in the same order"),
])
def test_a_plan_of_another_fit_is_refused_with_a_sentence(plan_of_7, change, data_change, words):
    X, y, _ = planted_depth2(300, seed=1)
    if data_change == "rows":
        X, y = X[1:], y[1:]
    elif data_change == "values":
        y = y + 1e-9
    elif data_change == "order":
        X, y = X[::-1], y[::-1]
    model = GETRegressor(depth=3, random_state=7, replay_plan=plan_of_7).set_params(**change)
    with pytest.raises(PlanError, match="recorded") as refused:
        model.fit(X, y)
    assert words in str(refused.value)


@pytest.mark.parametrize("replay, words", [
    ("plan.json", "must be a recorded plan (a fitted tree's meta['plan'], a dict); got str"),
    ({"decisions": []}, "it has no 'version'"),
])
def test_something_that_is_no_plan_is_refused_by_name(replay, words):
    X, y, _ = planted_depth2(100, seed=1)
    with pytest.raises(PlanError) as refused:
        train(X, y, GETConfig(depth=2, random_state=0), replay_plan=replay)
    assert words in str(refused.value)


@pytest.mark.parametrize("edit, words", [
    (lambda d: d[:-2], "decision 8 should answer 'race', but the plan has its end there"),
    (lambda d: d + [["keep", 1]], "made 9 of its 10 decisions and ended"),
    (lambda d: [["keep", 1]] + d[1:], "decision 1 should answer 'race', but the plan has 'keep' there"),
    (lambda d: [["race", [5, 100]]] + d[1:], "decision 1 ('race') is [5, 100], which this fit cannot take"),
    (lambda d: [["race", [4, 10 ** 9]]] + d[1:], "which this fit cannot take"),
    (lambda d: [d[0], ["keep", 0]] + d[2:], "decision 2 ('keep') is 0"),
    (lambda d: [d[0], ["keep", True]] + d[2:], "decision 2 ('keep') is True"),
    (lambda d: d[:2] + [["shrug", 1]] + d[3:], "replay_plan's 'decisions' is"),
    (lambda d: "all of them", "replay_plan's 'decisions' is 'all of them', which no recorded plan holds"),
])
def test_an_edited_plan_is_refused_with_a_sentence_never_a_traceback(monkeypatch, plan_of_7, edit, words):
    X, y, _ = planted_depth2(300, seed=1)
    assert [q for q, _ in plan_of_7["decisions"]] == ["race", "keep", "stop", "refit_stop", "polish", "race", "stop",
                                                     "race", "stop"]  # the record these edits expect
    use_ticking_clock(monkeypatch, RECORD_TICK)
    with pytest.raises(PlanError) as refused:
        GETRegressor(depth=3, random_state=7, replay_plan=edited(plan_of_7, decisions=edit(plan_of_7["decisions"]))
                     ).fit(X, y)
    assert words in str(refused.value)


def test_a_plan_of_another_engine_version_is_refused_by_name(plan_of_7):
    X, y, _ = planted_depth2(300, seed=1)
    with pytest.raises(PlanError, match="'engine' is 3, which no recorded plan holds .this engine replays plans of"):
        GETRegressor(depth=3, replay_plan=edited(plan_of_7, engine=3)).fit(X, y)


def test_a_replay_on_another_thread_count_warns_that_its_floats_may_differ(monkeypatch, plan_of_7):
    X, y, _ = planted_depth2(300, seed=1)
    use_ticking_clock(monkeypatch, RECORD_TICK)
    with pytest.warns(RuntimeWarning, match="thread"):
        GETRegressor(depth=3, replay_plan=edited(plan_of_7, threads=plan_of_7["threads"] + 1)).fit(X, y)


def test_an_unbudgeted_fit_records_no_plan():
    X, y, _ = planted_depth2(100, seed=1)
    assert "plan" not in train(X, y, GETConfig(depth=2, n_starts=2, n_epochs=5, random_state=0)).meta


def test_replay_plan_is_a_parameter_stored_as_given(plan_of_7):
    model = GETRegressor(replay_plan=plan_of_7)
    assert model.get_params()["replay_plan"] is plan_of_7
    assert clone(model).get_params()["replay_plan"] == plan_of_7


# --- a depth search: each fit's plan and the refit's, replayed in order --------------------------------------------
def same_search(a, b) -> None:
    """Two fitted searches chose and scored alike, and every tree (each search fit's and the refit) is equal."""
    assert a.cv_results_ == b.cv_results_ and a.best_depth_ == b.best_depth_
    for first, again in zip(a.search_trees_, b.search_trees_, strict=True):
        same_tree(first, again)
    same_tree(a.tree_, b.tree_)


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_a_budgeted_search_replayed_from_its_plan_is_the_same_search_bit_for_bit(monkeypatch, data, kind):
    if kind == "regressor":
        X, y, _ = data
        model = GETRegressorCV(depths=(1, 2, 3), time_budget=6.0, random_state=7)
    else:
        X, labels, _ = planted_classes(300, 2, seed=3, n_classes=3)
        y = np.array(["low", "mid", "high"])[labels]
        model = GETClassifierCV(depths=(1, 2, 3), time_budget=6.0, random_state=7)
    first = recorded(monkeypatch, model, X, y)
    plan = first.plan_
    assert [p["budget"] for p in plan["search"]] == [split_budget(6.0, 3)[0]] * len(first.cv_results_)
    assert first.tree_.meta["search_plan"] == plan and plan["refit"] == first.tree_.meta["plan"]
    assert json.loads(json.dumps(plan)) == plan
    use_ticking_clock(monkeypatch, OTHER_TICKS[1])
    assert [p["decisions"] for p in clone(model).fit(X, y).plan_["search"]] != [
        p["decisions"] for p in plan["search"]]  # the clock decides
    use_ticking_clock(monkeypatch, OTHER_TICKS[1])
    again = clone(model).set_params(time_budget=None, random_state=None, replay_plan=plan).fit(X, y)
    same_search(first, again)
    np.testing.assert_array_equal(first.predict(X), again.predict(X))
    assert again.plan_ == plan  # a replay records the plan it followed


def test_a_search_plan_survives_the_model_file_and_replays_from_it(monkeypatch, data):
    X, y, _ = data
    model = GETRegressorCV(depths=(1, 2), time_budget=4.0, random_state=3)
    first = recorded(monkeypatch, model, X, y)
    loaded = load_model_json(model_json(first.tree_))
    use_ticking_clock(monkeypatch, OTHER_TICKS[0])
    same_search(first, clone(model).set_params(replay_plan=loaded.meta["search_plan"]).fit(X, y))


def test_an_unbudgeted_search_records_no_plan(data):
    X, y, _ = data
    model = GETRegressorCV(depths=(1,), n_starts=2, n_epochs=5, random_state=0).fit(X, y)
    assert model.plan_ is None and "search_plan" not in model.tree_.meta


@pytest.fixture(scope="module")
def search_plan_of_7():
    """The plan of a budgeted search of depths 1-3 with seed 7 on ``planted_depth2(300, seed=1)``."""
    X, y, _ = planted_depth2(300, seed=1)
    with pytest.MonkeyPatch.context() as patch:
        return recorded(patch, GETRegressorCV(depths=(1, 2, 3), time_budget=6.0, random_state=7), X, y).plan_


@pytest.mark.parametrize("change, replay_edit, words", [
    ({}, lambda p: p["refit"], "the plan of a single fit (a tree's meta['plan']); a depth search replays"),
    ({}, lambda p: edited(p, version=1), "not a recorded search plan of this engine"),
    ({}, lambda p: edited(p, search=[]), "'search' must be a non-empty list"),
    ({}, lambda p: edited(p, search=p["search"][:1]), "it recorded 1 search fit(s), and this search makes more"),
    ({}, lambda p: edited(p, search=p["search"] + p["search"][-1:]), "and this search stopped after"),
    (dict(time_budget=5.0), lambda p: p, "recorded with time_budget=6.0; this search has time_budget=5.0"),
    (dict(random_state=8), lambda p: p, "recorded with random_state=7; this search has random_state=8"),
    (dict(depths=(2, 3)), lambda p: p, "other settings (depths=[1, 2, 3] there, [2, 3] here)"),
    (dict(leaf="linear"), lambda p: p, "other settings (leaf='constant' there, 'linear' here)"),
])
def test_a_search_plan_of_another_search_is_refused_with_a_sentence(monkeypatch, search_plan_of_7, change,
                                                                     replay_edit, words):
    X, y, _ = planted_depth2(300, seed=1)
    use_ticking_clock(monkeypatch, RECORD_TICK)
    model = GETRegressorCV(depths=(1, 2, 3), replay_plan=replay_edit(search_plan_of_7)).set_params(**change)
    with pytest.raises(PlanError) as refused:
        model.fit(X, y)
    assert words in str(refused.value)


# --- the decision points, one at a time, under the race tests' fake clock --------------------------------------------
@pytest.fixture
def clock(monkeypatch) -> Clock:
    return Clock().install(monkeypatch)  # the race reads budget.now


def race_at(clock: Clock, decisions: Plan) -> Race:
    """A race of 16 starts x 2 stages of 100 epochs that starts now, its deadline what its plan costs at ``MS``."""
    race_plan = RacePlan(16, 100, 2, CHECKPOINTS_PER_STAGE)
    return Race(race_plan, MS, clock.now + race_plan.seconds(MS), race_plan.seconds(MS), 0, decisions)


def test_a_rung_keeps_what_the_record_says_whatever_the_clock(clock):
    losses = torch.arange(16, dtype=torch.float64)
    recording = Plan()
    late = race_at(clock, recording)
    position = int(late.plan.rungs()[0]) + 1
    clock.now += 100.0  # far behind its pace: the rung drops all but one
    late_ids = late.survivors(position, losses, 16)
    assert recording.decisions == [["keep", 1]]
    clock.now = Clock.START
    replay = race_at(clock, Plan(recording.decisions))  # on time now: read, the clock would keep more
    assert torch.equal(replay.survivors(position, losses, 16), late_ids)
    clock.now = Clock.START
    assert race_at(clock, Plan()).survivors(position, losses, 16) is None  # read, the clock keeps them all


def test_a_race_stops_where_the_record_says_whatever_the_clock(clock):
    recording = Plan()
    race = race_at(clock, recording)
    assert not race.out_of_time(5) and recording.decisions == []  # only stops are written
    clock.now += 1e6
    assert race.out_of_time(6) and recording.decisions == [["stop", 6]]
    replay = race_at(clock, Plan(recording.decisions))  # the clock long past the limit
    assert [replay.out_of_time(p) for p in range(1, 8)] == [False] * 5 + [True, False]


def test_the_node_refit_stops_where_the_record_says_whatever_the_deadline():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=400)
    tree, ys = tree_with_splits(X, y, rng.normal(size=(7, 5)), np.zeros(7))
    recording = Plan()
    late = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=0.0, decisions=recording)  # long past
    assert recording.decisions == [["refit_stop", 1]] and late.meta["node_refit_passes"] == 1
    replay = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=float("inf"),
                         decisions=Plan(recording.decisions))
    same_tree(late, replay)
    free = refit_nodes(copy.deepcopy(tree), X, ys, 5, passes=8, deadline=0.0, decisions=Plan([]))
    assert free.meta["node_refit_passes"] > 1  # a record without that stop: the passes run, the deadline unread
