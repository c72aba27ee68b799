"""Time budgets and racing starts (``get_core.engine.race``): the race drops starts by hard loss, keeps every tree it saw as a
candidate, never loses to CART, ends near its budget, reports and cancels, and composes with sparse splits."""

import math
import time

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from get_core.config import GETConfig
from get_core.estimator import GETRegressor, GETRegressorCV
from get_core.engine.optimize import CHECKPOINTS_PER_STAGE, _checkpoints, Problems, alpha_schedule, initial_params, run_stages
from get_core.engine.progress import Reporter
import get_core.budget as budget_module
from get_core.budget import refit_seconds, split_budget
from get_core.engine.race import (HARD_LIMIT, MIN_CHECKPOINTS, MIN_EPOCHS, POLISH_EPOCHS_MORE_STARTS, Costs, Race,
                                  RacePlan, plan)
from get_core.engine.train import train
from tests.clock import Clock
from tests.engine.cpu_clock import use_cpu_clock, use_ticking_clock
from tests.planted import noise_ceiling, planted_depth2, planted_oblique

FREE = Costs(((1, 1e-6),), ((1, 1e-6),))
MS = Costs(((1, 1e-3),), ((1, 0.0),))  # a millisecond per start-epoch, free checkpoints


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(budget_module, "time", fake)
    return fake


def race_of(starts: int, clock: Clock, slack: float = 0.01, protected: int = 0) -> Race:
    """A race of 2 stages x 100 epochs that begins at ``Clock.START``, its deadline its plan's cost times
    ``1 + slack`` later."""
    clock.now = Clock.START
    race_plan = RacePlan(starts, 100, 2, CHECKPOINTS_PER_STAGE)
    total = race_plan.seconds(MS)
    return Race(race_plan, MS, clock.now + total * (1.0 + slack), total, protected)


def at_rung(race: Race, clock: Clock, rung: int, pace: float = 1.0) -> int:
    """The position just past rung ``rung``, with the clock where the plan expects it there (its pace x ``pace``)."""
    position = race.plan.rungs()[rung]
    remaining = race.plan.seconds(MS, race.plan.n_starts >> (rung + 1), position)  # as planned: halved there
    clock.now = Clock.START + pace * (race.plan.seconds(MS) - remaining)
    return int(position) + 1


def test_a_rung_keeps_the_better_half_of_each_problems_starts_by_hard_loss_in_their_order(clock):
    race = race_of(8, clock)
    assert race.survivors(int(race.plan.rungs()[0]) - 1, torch.zeros(16), 8) is None  # no rung due yet
    losses = torch.tensor([5., 1., 7., 0., 3., 9., 2., 8.,  # problem 0: best four are starts 3, 1, 6, 4
                           1., 2., 3., 4., 5., 6., 7., 0.])  # problem 1: starts 7, 0, 1, 2
    keep = race.survivors(at_rung(race, clock, 0), losses, 8)
    assert keep.tolist() == [1, 3, 4, 6, 8, 9, 10, 15]
    assert race.ids.tolist() == [1, 3, 4, 6]  # the alive starts' own numbers (problem 0's, as progress shows them)
    keep = race.survivors(at_rung(race, clock, 1), torch.tensor([4., 3., 2., 1., 0., 1., 2., 3.]), 4)
    assert keep.tolist() == [2, 3, 4, 5] and race.ids.tolist() == [4, 6]


def test_the_informed_starts_are_never_dropped_and_the_others_are_halved_among_themselves(clock):
    race = race_of(8, clock, protected=1)  # start 0 is the CART start: kept however it ranks
    losses = torch.tensor([9., 1., 7., 0., 3., 9., 2., 8.,  # problem 0: the best three others are 3, 1, 6
                           9., 2., 3., 4., 5., 6., 7., 0.])  # problem 1: 7, 1, 2
    keep = race.survivors(at_rung(race, clock, 0), losses, 8)
    assert keep.tolist() == [0, 1, 3, 6, 8, 9, 10, 15] and race.ids.tolist() == [0, 1, 3, 6]
    keep = race.survivors(at_rung(race, clock, 1), torch.tensor([9., 3., 2., 1., 9., 1., 2., 3.]), 4)
    assert keep.tolist() == [0, 3, 4, 5] and race.ids.tolist() == [0, 6]
    overrun = race_of(16, clock, slack=-1.0, protected=2)  # out of time: the informed two and the best other remain
    assert overrun.survivors(at_rung(overrun, clock, 0), torch.arange(16.0).flip(0), 16).tolist() == [0, 1, 15]


def test_a_rung_drops_more_than_half_when_the_pace_would_overrun_the_deadline(clock):
    race = race_of(16, clock)
    keep = race.survivors(at_rung(race, clock, 0, pace=1.5), torch.arange(16.0), 16)  # the machine runs slower
    assert keep.tolist() == [0, 1, 2, 3]
    late = race_of(16, clock, slack=-1.0)  # the deadline is now: any work left overruns it
    assert late.survivors(at_rung(late, clock, 0), torch.arange(16.0), 16).tolist() == [0]


def test_a_race_ahead_of_its_plan_keeps_every_start_until_its_last_rung(clock):
    race = race_of(8, clock, slack=1.0)  # twice the plan's seconds: keeping all 8 to the next rung still fits
    assert race.survivors(at_rung(race, clock, 0), torch.arange(8.0), 8) is None and race.ids.tolist() == list(range(8))
    assert race.survivors(at_rung(race, clock, 1), torch.arange(8.0), 8).tolist() == [0, 1, 2, 3]  # the last rung
    quick = race_of(8, clock)  # the first span ran 3x faster than the probe said: the rest will too
    assert quick.survivors(at_rung(quick, clock, 0, pace=1 / 3), torch.arange(8.0), 8) is None


def test_every_rung_is_a_checkpoint_of_its_own():
    race = race_of(128, Clock())  # 2 x 100 epochs; the first rungs fall before the first even checkpoint (epoch 5)
    rungs = race.plan.rungs()
    first, second = _checkpoints(100, 0, race), _checkpoints(100, 1, race)
    assert {math.ceil(r) for r in rungs if r <= 100} <= first and min(first) < 100 / CHECKPOINTS_PER_STAGE
    assert {math.ceil(r - 100) for r in rungs if r > 100} <= second
    assert _checkpoints(100, 0, None) == _checkpoints(100, 1, None) == set(range(5, 101, 5))


def test_rungs_spend_equal_start_epochs_and_end_with_two_starts():
    rungs = RacePlan(32, 100, 2, CHECKPOINTS_PER_STAGE).rungs()
    bounds = [0.0, *rungs, 200.0]
    spent = [(32 >> i) * (b - a) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    assert len(rungs) == 4 and np.allclose(spent, spent[0])


def test_a_plan_buys_more_starts_before_more_epochs_and_stays_within_its_seconds():
    costs = Costs(((1, 1e-4), (8, 8e-4)), ((1, 1e-3), (8, 2e-3)))
    small, large = plan(0.5, costs, 2, CHECKPOINTS_PER_STAGE), plan(200.0, costs, 2, CHECKPOINTS_PER_STAGE)
    assert small.n_starts < large.n_starts and large.n_epochs >= 1000
    for chosen, seconds in ((small, 0.5), (large, 200.0)):
        assert chosen.seconds(costs) <= seconds


def test_a_plan_takes_no_more_starts_than_memory_allows():
    costs = Costs(((1, 1e-4), (8, 8e-4)), ((1, 1e-3), (8, 2e-3)))
    assert plan(200.0, costs, 2, CHECKPOINTS_PER_STAGE).n_starts > 8
    capped = plan(200.0, costs, 2, CHECKPOINTS_PER_STAGE, most_starts=8)
    assert capped.n_starts == 8 and capped.seconds(costs) <= 200.0


def test_a_polish_level_plan_buys_more_starts_with_fewer_epochs_each():
    costs = Costs(((1, 1e-4), (8, 8e-4)), ((1, 1e-3), (8, 2e-3)))
    race, polish = (plan(1.0, costs, 2, CHECKPOINTS_PER_STAGE, epochs) for epochs in (1000, POLISH_EPOCHS_MORE_STARTS))
    assert polish.n_starts > race.n_starts and POLISH_EPOCHS_MORE_STARTS <= polish.n_epochs < race.n_epochs
    assert polish.seconds(costs) <= 1.0 and race == plan(1.0, costs, 2, CHECKPOINTS_PER_STAGE)  # 1000: the default


def test_a_plan_whose_smallest_race_overruns_checks_the_hard_loss_less_often():
    costly = Costs(((1, 1e-3),), ((1, 0.1),))  # a checkpoint costs 100 epochs (a hard evaluation of many rows)
    small = plan(2.0, costly, 2, CHECKPOINTS_PER_STAGE)
    assert small.n_starts == 4 and small.n_epochs >= MIN_EPOCHS
    assert MIN_CHECKPOINTS <= small.checkpoints_per_stage < CHECKPOINTS_PER_STAGE and small.seconds(costly) <= 2.0
    race = Race(small, costly, 2.0, 2.0)
    assert len(_checkpoints(small.n_epochs, 0, None)) == CHECKPOINTS_PER_STAGE
    assert len(_checkpoints(small.n_epochs, 1, race)) <= small.checkpoints_per_stage + len(small.rungs())
    assert plan(200.0, costly, 2, CHECKPOINTS_PER_STAGE).checkpoints_per_stage == CHECKPOINTS_PER_STAGE


def test_a_race_stops_by_its_stop_by_even_within_its_overrun(clock):
    """The passes over every row after a large table's race need the budget's last seconds: the race stops in time
    for them, however much of its overrun allowance is left, and otherwise at that allowance."""
    race_plan = RacePlan(4, 100, 2, CHECKPOINTS_PER_STAGE)
    clock.now = Clock.START
    limited = Race(race_plan, MS, Clock.START + 10.0, 10.0, stop_by=Clock.START + 10.5)
    unlimited = Race(race_plan, MS, Clock.START + 10.0, 10.0)
    clock.now = Clock.START + 10.4
    assert not limited.out_of_time(50) and not unlimited.out_of_time(50)
    clock.now = Clock.START + 10.6
    assert limited.out_of_time(51) and not unlimited.out_of_time(51)
    clock.now = Clock.START + 10.0 + (HARD_LIMIT / budget_module.STRETCH - 1.0) * 10.0 + 0.01
    assert unlimited.out_of_time(52)


class Halving(Race):
    """A race that keeps half of its starts at every rung, however far ahead of its deadline it runs."""

    def _keep(self, position, starts, informed):
        return max(1, (starts - informed) // 2)


class DropFirst(Race):
    """A race that always drops start 0 (the CART start) at its first rung, whatever its loss."""

    def survivors(self, position, losses, starts):
        if starts < 4 or position < self.rungs[0]:
            return None
        self.rungs.pop(0)
        self.ids = self.ids[1:]
        return torch.arange(1, starts)


def test_a_start_the_race_dropped_still_counts_for_the_result():
    """Start 0 is CART; once dropped, the random starts (two epochs each) cannot beat it, so the result must be the
    dropped start's tree, taken from the race's archive."""
    X, y, _ = planted_depth2(600, seed=2)
    config = GETConfig(depth=2, n_starts=4, n_epochs=2, random_state=0)
    problems = Problems.from_arrays([(X, y)], torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    params = initial_params(problems, [(X, y)], config, 2, gen)
    alphas = alpha_schedule(4, config, gen)
    cart = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    race = DropFirst(RacePlan(4, 2, 2, CHECKPOINTS_PER_STAGE), FREE, time.monotonic() + 1e6, 1e6)
    result = run_stages(problems, params, alphas, config, 4, Reporter(None, float(y.var())), race)
    assert race.ids.tolist() == [1, 2, 3]
    assert float(result.best_loss[0]) <= np.mean((cart.predict(X) - y) ** 2) + 1e-6


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_a_budgeted_fit_is_never_worse_than_the_cart_start(leaf, monkeypatch):
    use_cpu_clock(monkeypatch)
    rng = np.random.default_rng(3)
    X = rng.random((800, 5))
    y = np.sin(6 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=800)
    tree = train(X, y, GETConfig(depth=3, leaf=leaf, time_budget=1.0, random_state=0))
    cart_r2 = r2_score(y, DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).predict(X))
    assert tree.meta["train_r2"] >= cart_r2 - 1e-9


def test_a_budgeted_fit_ends_near_its_budget_and_races_several_starts(monkeypatch):
    use_ticking_clock(monkeypatch, 0.01)  # a clock that moves per read: what the budget buys is the code's, not the load's
    X, y, _ = planted_depth2(2000, seed=1)
    events = []
    model = GETRegressor(depth=3, time_budget=2.0, random_state=0).fit(X, y, on_progress=events.append)
    assert model.tree_.meta["fit_seconds"] <= HARD_LIMIT * 2.0  # on the clock the budget reads
    started = model.tree_.meta["config"]["n_starts"]
    assert started > 1 and model.tree_.meta["config"]["time_budget"] == 2.0
    assert {e.phase for e in events} == {"optimize", "polish"}  # polish="auto" polishes a budgeted fit
    racing = [e for e in events if e.phase == "optimize"]
    assert {e.started for e in racing} == {started}
    alive = [len(e.records) for e in racing]
    assert alive[0] == started and alive[-1] < started and alive == sorted(alive, reverse=True)
    assert model.score(X, y) >= r2_score(y, DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).predict(X))
    assert model.tree_.meta["node_refit_passes"] >= 1  # the last tenth refits the best tree's nodes


def test_only_a_budgeted_dense_fit_refits_its_nodes():
    X, y, _ = planted_depth2(600, seed=2)
    fixed = train(X, y, GETConfig(depth=2, n_starts=2, n_epochs=20, random_state=0))
    assert "node_refit_passes" not in fixed.meta  # a fixed budget trains the paper's GET, nothing after


def test_cancelling_mid_race_returns_a_valid_tree_promptly(monkeypatch):
    use_cpu_clock(monkeypatch)
    X, y, _ = planted_depth2(2000, seed=4)
    seen = []

    def cancel_after_a_drop(progress):
        seen.append(len(progress.records))
        return len(progress.records) < progress.started

    start = time.process_time()
    tree = train(X, y, GETConfig(depth=4, time_budget=60.0, random_state=0), on_progress=cancel_after_a_drop)
    assert time.process_time() - start < 30
    assert tree.meta["cancelled"] is True and seen[-1] < seen[0]
    assert np.isfinite(tree.predict(X)).all()


def test_a_budget_composes_with_sparse_splits(monkeypatch):
    use_cpu_clock(monkeypatch)
    X, y, _ = planted_depth2(1500, seed=5)
    tree = train(X, y, GETConfig(depth=3, time_budget=1.5, max_split_features=2, random_state=0))
    assert tree.split_widths.max() <= 2
    assert tree.meta["config"]["n_starts"] > 1


def test_the_search_and_refit_share_the_budget(monkeypatch):
    use_ticking_clock(monkeypatch, 0.01)
    per_fit, base = split_budget(12.0, 4)
    assert per_fit == pytest.approx(2.0) and base == pytest.approx(4.0)
    assert refit_seconds(per_fit, base, 4, 2) == pytest.approx(8.0)  # two fits skipped by the early stop
    assert split_budget(None, 4) == (None, None)
    X, y, _ = planted_depth2(600, seed=6)
    model = GETRegressorCV(depths=[1, 2], time_budget=3.0, random_state=0).fit(X, y)
    fits = [*model.search_trees_, model.tree_]
    assert sum(tree.meta["fit_seconds"] for tree in fits) <= HARD_LIMIT * 3.0  # on the clock the budget reads
    assert model.tree_.meta["config"]["time_budget"] == pytest.approx(1.0)  # a third: both search fits were made


def test_a_negative_budget_is_refused_by_name():
    with pytest.raises(ValueError, match="time_budget"):
        GETConfig(time_budget=-1.0)


def test_a_race_of_many_starts_recovers_most_of_a_planted_dense_depth3_oblique_tree():
    """A fixed race (no clock: it halves at every rung) of 32 starts x 400 epochs, on a dense random depth-3
    oblique tree with noise of known variance: the returned tree's training R2 comes within 10% of the ceiling (the
    paper budget, 15 times the start-epochs, reaches 99% of it in test R2: bench.studies.time_budget) and far
    above CART's."""
    X, y, clean = planted_oblique(3000, 3, seed=0, noise=0.3)
    y = (y - y.min()) / np.ptp(y)  # the trainer's scaling (X is in [0, 1] already)
    config = GETConfig(depth=3, n_starts=32, n_epochs=400, random_state=0)
    problems = Problems.from_arrays([(X, y)], torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    params = initial_params(problems, [(X, y)], config, 3, gen)
    race = Halving(RacePlan(32, 400, 2, CHECKPOINTS_PER_STAGE), FREE, time.monotonic() + 1e6, 1e6, 0)
    result = run_stages(problems, params, alpha_schedule(32, config, gen), config, 32, Reporter(None, 1.0), race)
    assert len(race.ids) == 2  # halved down to the final two
    r2 = 1.0 - float(result.best_loss[0]) / np.var(y)
    cart_r2 = r2_score(y, DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).predict(X))
    assert r2 >= 0.9 * noise_ceiling(clean, 0.3) and r2 >= cart_r2 + 0.1


def test_the_live_curves_note_how_many_starts_the_race_keeps():
    from get_core.runs.store import MetricPoint
    from get_core.views.curves import loss_curves_figure

    def line(start: int, last: int) -> list:
        return [MetricPoint("optimize", start, 0, e, e, 5.0, 0.1, 0.1) for e in range(0, last + 1, 10)]

    raced = loss_curves_figure(line(0, 100) + line(1, 100) + line(2, 30) + line(3, 50))
    assert any("2 of 4 starts alive" in a.text for a in raced.layout.annotations)
    unraced = loss_curves_figure(line(0, 100) + line(1, 100))
    assert not any("alive" in (a.text or "") for a in unraced.layout.annotations)


def test_the_time_estimate_of_a_budgeted_run_is_its_budget_then_the_baselines_and_the_counterparts_share(tmp_path):
    from get_core.budget import COUNTERPART_SHARE
    from get_core.runs import estimate

    config = {"depth": 4, "leaf": "constant", "n_starts": 10, "n_epochs": 3000, "n_alphas": 2, "time_budget": 10.0}
    estimate.save_measurement(tmp_path / "calibration.json", estimate.shape_key(4, "constant", 10, 5, 1000),
                              {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 4.0, "baselines": 1.0, "baselines_per_row": 0.0})
    found = estimate.cached_estimate(1000, 5, config, tmp_path / "calibration.json")
    # the budget is the GET fit's (issue 48): the baselines at their usual settings come after it, uncut, and the
    # counterpart (5 features > 3: a sparse fit beside the dense one) gets its share of the budget
    assert found.training == pytest.approx(10.0)
    assert found.baselines == pytest.approx(1.0 + COUNTERPART_SHARE * 10.0)
    assert found.seconds == pytest.approx(4.0 + 10.0 + found.baselines)
    fixed = estimate.cached_estimate(1000, 5, {**config, "time_budget": None}, tmp_path / "calibration.json")
    assert fixed.training == pytest.approx(2 * (0.5 + 3000 * 0.01))


def test_a_budget_with_polish_shares_it_between_the_optimization_and_the_polish(monkeypatch):
    use_ticking_clock(monkeypatch, 0.01)  # what the budget buys is the code's, not the machine's speed or load
    X, y, _ = planted_depth2(1000, seed=7)
    tree = train(X, y, GETConfig(depth=3, time_budget=3.0, polish=True, random_state=0))
    assert tree.meta["fit_seconds"] <= HARD_LIMIT * 3.0  # on the clock the budget reads
    assert tree.meta["polish_nodes_visited"] > 0
    assert np.isfinite(tree.predict(X)).all()
