"""A fit's memory is estimated before it allocates: one that cannot fit is refused with a sentence."""

from __future__ import annotations

import numpy as np
import pytest

from get_core import GETRegressor
from get_core.config import GETConfig
from get_core.data.columns import DataError
from get_core.data.confined import run_confined
from get_core.engine import memory
from get_core.engine.memory import FitTooLarge, available_bytes, fit_bytes, refuse_oversized_fit
from get_core.engine.train import train


def test_a_billion_starts_are_refused_with_a_sentence_before_torch_allocates():
    X = np.random.default_rng(0).random((200, 3))
    with pytest.raises(FitTooLarge, match=r"needs about [\d,.]+ GB of memory \(1,000,000,000 starts of a depth-4 "
                                          r"tree on 200 rows x 3 inputs\) and may use [\d,.]+ GB \(at most 50% of this "
                                          r"machine's memory, and what is free\): use fewer starts"):
        train(X, X[:, 0], GETConfig(depth=4, n_starts=10 ** 9, n_epochs=10))
    with pytest.raises(DataError, match="use fewer starts"):  # the estimator's callers (and the worker) see a DataError
        GETRegressor(n_starts=10 ** 9, n_epochs=10).fit(X, X[:, 0])


def test_the_estimate_grows_with_rows_inputs_starts_and_depth():
    base = fit_bytes(10_000, 10, 4, False, 10)
    assert base < fit_bytes(20_000, 10, 4, False, 10) and base < fit_bytes(10_000, 20, 4, False, 10)
    assert base < fit_bytes(10_000, 10, 4, False, 20) and base < fit_bytes(10_000, 10, 6, False, 10)
    assert base < fit_bytes(10_000, 10, 4, True, 10)


def test_the_issues_table_is_counted_near_what_it_took():
    """1,000,000 rows x 192 inputs at depth 4 with a time budget passed 6 GB with the caller's table; the fit itself
    peaked at 4.3 GiB in ``bench.studies.memory_peaks`` (its probe's 8 starts): the estimate counts it within 25%."""
    estimate = memory.config_bytes(1_000_000, 192, GETConfig(depth=4, time_budget=20.0))
    assert 0.75 * 4412 * 2 ** 20 < estimate < 1.25 * 4412 * 2 ** 20


def test_the_class_count_is_in_every_estimate():
    """10,000 classes on 20,000 x 10 at depth 6 passed 6 GB: each checkpoint holds (starts, rows, classes) shares."""
    regression = fit_bytes(20_000, 10, 6, False, 8)
    assert regression < fit_bytes(20_000, 10, 6, False, 8, n_classes=2) < fit_bytes(20_000, 10, 6, False, 8, 50)
    assert fit_bytes(20_000, 10, 6, False, 8, n_classes=10_000) > 6 * 2 ** 30
    config = GETConfig(depth=6, time_budget=20.0)
    assert memory.polish_bytes(20_000, 20_000, 10, config, 50, 1, 8) > memory.polish_bytes(20_000, 20_000, 10, config,
                                                                                             0, 1, 8)
    assert memory.least_bytes(20_000, 10, config, 50) >= memory.config_bytes(20_000, 10, config, 50)


def test_a_fit_past_the_machines_share_is_refused_before_it_starts(monkeypatch):
    """The refusal comes from the estimate, before the fit allocates: here the share allowed is 1 MB."""
    monkeypatch.setattr(memory, "allowed_bytes", lambda: 2 ** 20)
    X = np.random.default_rng(0).random((5_000, 8))
    with pytest.raises(FitTooLarge, match=r"may use 0\.0 GB \(at most 50% of this machine's memory"):
        train(X, X[:, 0], GETConfig(depth=4, n_starts=2, n_epochs=5))


def test_a_budgeted_race_and_each_polish_level_take_no_more_starts_than_memory_allows(monkeypatch):
    config = GETConfig(depth=4, time_budget=10.0)
    eight = memory.config_bytes(50_000, 10, config, 3, 8)
    monkeypatch.setattr(memory, "allowed_bytes", lambda: eight)
    assert memory.max_starts(50_000, 10, config, 3) == 8
    level = memory.polish_bytes(50_000, 100_000, 10, config, 3, 1, 16)
    monkeypatch.setattr(memory, "allowed_bytes", lambda: level)
    assert memory.max_starts(50_000, 10, config, 3, level=(1, 100_000)) == 16
    monkeypatch.setattr(memory, "allowed_bytes", lambda: None)  # unknown: the time alone decides
    assert memory.max_starts(50_000, 10, config, 3) == memory.LADDER[-1]


def test_ordinary_fits_pass_and_a_budgeted_fit_is_counted_at_its_fewest_starts():
    refuse_oversized_fit(1_000, 5, GETConfig(depth=4, n_starts=10))
    refuse_oversized_fit(1_000, 5, GETConfig(depth=4, n_starts=10 ** 9, time_budget=1.0))  # the race picks 4-128


def test_an_address_space_limit_counts_as_less_free_memory():
    free = run_confined(available_bytes, memory_mb=512, seconds=60, result_mb=1)
    assert free is not None and free <= 512 * 2 ** 20

