"""The large-data benchmark: its planted data have the stated noise ceiling, and its table pairs fits by seed."""

from __future__ import annotations

import numpy as np
import pytest

from bench.studies import large_data


def test_the_planted_data_have_the_stated_noise_ceiling():
    X, y = large_data.planted(200_000, seed=3)
    X_again, y_again = large_data.planted(200_000, seed=3)
    assert X.shape == (200_000, large_data.FEATURES) and np.array_equal(y, y_again) and np.array_equal(X, X_again)
    noise = y - large_data.planted_signal(X)
    assert 1 - noise.var() / y.var() == pytest.approx(1 / (1 + large_data.NOISE_SHARE), abs=0.005)


def test_the_table_compares_each_sampled_fit_with_the_full_batch_fit_of_the_same_seed():
    def record(method, seed, r2, cpu):
        return {"n": 100_000, "starts": 10, "epochs": 300, "method": method, "seed": seed, "train_r2": r2,
                "seconds": 10 * cpu, "cpu_seconds": cpu, "rss_mb": 500.0}

    table = large_data.report([record("full", 0, 90.0, 100.0), record("full", 1, 80.0, 100.0),
                               record("8192", 0, 89.5, 20.0), record("8192", 2, 70.0, 20.0)])
    sampled = next(line for line in table.splitlines() if "8192 fresh rows" in line)
    assert "| 0.20 |" in sampled and "| -0.50 |" in sampled  # seed 2 has no full-batch twin: not in the difference
