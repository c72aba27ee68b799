"""The run-time measurement: one real measuring subprocess at a time, however long it takes."""

from __future__ import annotations

import os
import threading
import time

import pytest

from get_core.runs import estimate, launch, measure
from get_core.budget import COUNTERPART_SHARE
from tests.runs.test_worker import wait_for

CONFIG = {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 20, "n_alphas": 1}


@pytest.mark.slow
def test_a_measurement_running_longer_than_the_timeout_is_not_started_twice(tmp_path, monkeypatch):
    monkeypatch.setenv(launch.MAX_RUNNING_ENV, "2")
    cache = tmp_path / "calibration.json"
    marker = tmp_path / "calibration.measuring"
    assert estimate.start_measurement(200, 3, CONFIG, cache)
    assert not estimate.start_measurement(200, 3, CONFIG, cache)  # under way
    old = time.time() - estimate.MEASURE_TIMEOUT_S - 60  # as if it had been measuring for three minutes
    os.utime(marker, (old, old))
    # it beats (every MARKER_BEAT_S once started: its interpreter's start-up is seconds on a busy machine)
    wait_for(lambda: marker.exists() and marker.stat().st_mtime > old + 60, 60)
    assert not estimate.start_measurement(200, 3, CONFIG, cache)  # still one measurement, not a second alongside
    wait_for(lambda: not marker.exists(), 120, interval=0.2)  # it ends on its own and writes the cache
    assert estimate.cached_estimate(200, 3, CONFIG, cache) is not None


@pytest.mark.slow
def test_a_marker_left_by_a_killed_measurement_does_not_block_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv(launch.MAX_RUNNING_ENV, "2")
    cache = tmp_path / "calibration.json"
    marker = tmp_path / "calibration.measuring"
    marker.write_text("left behind")
    old = time.time() - estimate.MEASURE_TIMEOUT_S - 1
    os.utime(marker, (old, old))
    assert estimate.start_measurement(200, 3, CONFIG, cache)
    wait_for(lambda: not marker.exists(), 120, interval=0.2)


def test_a_hung_measurement_stops_refreshing_its_marker_after_the_limit(tmp_path):
    marker = tmp_path / "calibration.measuring"
    marker.write_text("pid")
    os.utime(marker, (time.time() - 600, time.time() - 600))
    measure._keep_fresh(marker, threading.Event(), limit_s=0.0)  # never done: returns at the limit
    assert time.time() - marker.stat().st_mtime > 500  # left to go stale
    done = threading.Event()
    done.set()
    measure._keep_fresh(marker, done, limit_s=60.0)
    assert time.time() - marker.stat().st_mtime < 60  # a live one is touched


def test_a_search_is_estimated_as_at_most_its_fits_of_the_deepest_depth_plus_a_stage_when_sparse(tmp_path):
    cache = tmp_path / "calibration.json"
    config = {"depth": 4, "leaf": "constant", "n_starts": 2, "n_epochs": 100, "n_alphas": 2}
    estimate.save_measurement(cache, estimate.shape_key(4, "constant", 2, 6, 500), {"per_epoch": 0.01,
                                                                                    "per_stage": 0.5},
                              {"startup": 3.0, "baselines": 1.0, "baselines_per_row": 0.0})
    one = estimate.search_estimate(500, 6, {"config": config}, cache)
    assert one.training == 2 * (0.5 + 100 * 0.01) and one.n_fits == 1 and one.describe().startswith("about")
    depths = estimate.search_estimate(500, 6, {"config": config, "search": {"depths": [1, 2, 3, 4]}}, cache)
    assert depths.n_fits == 5 and depths.training == 5 * one.training  # four depths and the refit
    assert depths.describe().startswith("at most")
    assert one.baselines == 1.0 + one.training  # CART, the forest and the 3-feature GET fit beside a dense run
    assert depths.seconds == pytest.approx(3.0 + 5 * one.training + one.baselines)
    path = estimate.search_estimate(500, 6, {"config": config, "search": {"depths": [4], "split_features": "auto"}},
                                    cache)
    assert path.n_fits == 5 + 1 and path.training == pytest.approx(6 * one.training * 3 / 2)  # k = 1, 2, 3, 5, any
    sparse = estimate.search_estimate(500, 6, {"config": {**config, "max_split_features": 2}}, cache)
    assert sparse.training == pytest.approx(3 * (0.5 + 100 * 0.01))  # the masked stage of a k-sparse fit


def budgeted_calibration(tmp_path, depth: int) -> tuple:
    """A calibration cache measured for a depth-``depth`` fit on 500 x 6, and a 10-second budgeted config of it."""
    cache = tmp_path / "calibration.json"
    config = {"depth": depth, "leaf": "constant", "n_starts": 2, "n_epochs": 100, "n_alphas": 2, "time_budget": 10.0}
    estimate.save_measurement(cache, estimate.shape_key(depth, "constant", 2, 6, 500),
                              {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 3.0, "baselines": 1.0, "baselines_per_row": 0.0})
    return cache, config


def test_a_budgeted_search_is_estimated_as_its_budget_shared_over_its_fits(tmp_path):
    cache, config = budgeted_calibration(tmp_path, 3)
    found = estimate.search_estimate(500, 6, {"config": config, "search": {"depths": [1, 2, 3]}}, cache)
    # GETRegressorCV shares the run's budget over its fits (the baselines come after it, uncut); it is not per fit
    assert found.training == pytest.approx(10.0) and found.n_fits == 4


def test_the_estimate_of_a_large_table_counts_its_soft_epochs_at_the_sampled_rows(tmp_path):
    cache = tmp_path / "calibration.json"
    config = {**CONFIG, "n_epochs": 3000, "n_alphas": 2}
    key = estimate.shape_key(2, "constant", 1, 10, 1_000_000)
    estimate.save_measurement(cache, key, {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 4.0, "baselines": 1.0, "baselines_per_row": 0.0})
    sampled = estimate.cached_estimate(1_000_000, 10, config, cache)
    full = estimate.cached_estimate(1_000_000, 10, {**config, "batch_rows": 0}, cache)
    scale = 1_000_000 / estimate.MEASURE_ROWS  # per_stage (checkpoints on every row) scales with the rows either way
    assert full.training == pytest.approx(2 * (0.5 + 3000 * 0.01) * scale)
    assert sampled.training == pytest.approx(2 * (0.5 * scale + 3000 * 0.01))  # 8,192 rows per epoch: under 10,000


def test_a_long_budgeted_search_is_estimated_at_its_fits_least_share_not_at_the_budget(tmp_path):
    cache, config = budgeted_calibration(tmp_path, 4)
    search = {"depths": [1, 2, 3, 4], "split_features": "auto"}  # 4 depths x 5 k: 20 search fits and the refit
    found = estimate.search_estimate(500, 6, {"config": config, "search": search}, cache)
    assert found.n_fits == 21 and found.training == pytest.approx(20 * 1.0 + 10.0 / 3)  # a second each
    assert found.seconds == pytest.approx(found.startup + found.training + found.baselines)


def test_a_budgeted_run_is_estimated_at_its_budget_then_its_uncut_baselines(tmp_path):
    """Issue 48: the budget is the GET fit's; the baselines are fitted at their usual settings after it (a slow
    forest makes the run longer, and the estimate says so) and the counterpart gets its share of the budget."""
    cache, config = budgeted_calibration(tmp_path, 3)
    found = estimate.search_estimate(500, 6, {"config": config}, cache)
    assert found.training == pytest.approx(10.0)
    assert found.baselines == pytest.approx(1.0 + COUNTERPART_SHARE * 10.0)  # 6 features > 3: a sparse counterpart
    assert found.seconds == pytest.approx(found.startup + found.training + found.baselines)
    assert 0.5 < found.training_share < 0.7  # the bar's share for the GET fit
    estimate.save_measurement(cache, estimate.shape_key(3, "constant", 2, 6, 500), {"per_epoch": 0.01,
                              "per_stage": 0.5}, {"startup": 3.0, "baselines": 100.0, "baselines_per_row": 0.0})
    slow = estimate.search_estimate(500, 6, {"config": config}, cache)
    assert slow.baselines == pytest.approx(100.0 + COUNTERPART_SHARE * 10.0)  # a slow forest: said, not hidden
