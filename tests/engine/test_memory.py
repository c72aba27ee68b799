"""A fit's memory is estimated before it allocates: one that cannot fit is refused with a sentence."""

from __future__ import annotations

import numpy as np
import pytest

from get_core import GETRegressor
from get_core.config import GETConfig
from get_core.data.columns import DataError
from get_core.data.confined import run_confined
from get_core.engine.memory import FitTooLarge, available_bytes, fit_bytes, refuse_oversized_fit
from get_core.engine.train import train


def test_a_billion_starts_are_refused_with_a_sentence_before_torch_allocates():
    X = np.random.default_rng(0).random((200, 3))
    with pytest.raises(FitTooLarge, match=r"needs about [\d,.]+ GB of memory \(1,000,000,000 starts of a depth-4 "
                                          r"tree on 200 rows x 3 inputs\) and [\d,.]+ GB is free: use fewer starts"):
        train(X, X[:, 0], GETConfig(depth=4, n_starts=10 ** 9, n_epochs=10))
    with pytest.raises(DataError, match="use fewer starts"):  # the estimator's callers (and the worker) see a DataError
        GETRegressor(n_starts=10 ** 9, n_epochs=10).fit(X, X[:, 0])


def test_the_estimate_grows_with_rows_inputs_starts_and_depth():
    base = fit_bytes(10_000, 10, 4, False, 10)
    assert base < fit_bytes(20_000, 10, 4, False, 10) and base < fit_bytes(10_000, 20, 4, False, 10)
    assert base < fit_bytes(10_000, 10, 4, False, 20) and base < fit_bytes(10_000, 10, 6, False, 10)
    assert base < fit_bytes(10_000, 10, 4, True, 10)


def test_the_issues_table_is_counted_near_what_it_took():
    """1,000,000 rows x 192 inputs at depth 4 with a time budget passed 6 GB: its least race (4 starts) counts
    several GB, so a machine without them refuses it up front."""
    assert fit_bytes(1_000_000, 192, 4, False, 4) > 4 * 2 ** 30


def test_ordinary_fits_pass_and_a_budgeted_fit_is_counted_at_its_fewest_starts():
    refuse_oversized_fit(1_000, 5, GETConfig(depth=4, n_starts=10))
    refuse_oversized_fit(1_000, 5, GETConfig(depth=4, n_starts=10 ** 9, time_budget=1.0))  # the race picks 4-128


def test_an_address_space_limit_counts_as_less_free_memory():
    free = run_confined(available_bytes, memory_mb=512, seconds=60, result_mb=1)
    assert free is not None and free <= 512 * 2 ** 20

