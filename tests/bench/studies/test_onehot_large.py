"""python -m bench.studies.onehot_large: a 50,000 x 100 one-hot table of known structure and Bayes accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from bench.studies import onehot_large


@pytest.mark.parametrize("structure", onehot_large.STRUCTURES)
def test_the_table_is_10_numbers_and_90_one_hot_columns_with_a_tenth_of_its_labels_flipped(structure):
    X, y = onehot_large.onehot_table(3, structure, rows=20_000)
    assert X.shape == (20_000, 100) and set(np.unique(y)) == {0, 1}
    numbers, onehot = X[:, :10], X[:, 10:].reshape(-1, 9, 10)
    assert numbers.min() >= 0 and numbers.max() <= 1
    np.testing.assert_array_equal(onehot.sum(axis=2), 1)  # one level per category and row
    clean, _ = onehot_large.onehot_table(3, structure, rows=20_000)
    assert np.array_equal(X, clean)  # a seed gives one table
    if structure == "axis":  # the planted rule, read back from the columns: it misses only the flipped labels
        rule = np.where(numbers[:, 0] <= 0.5, onehot[:, 1, :5].sum(axis=1) > 0, numbers[:, 1] <= 0.5)
        assert abs(np.mean(rule == y) - (1 - onehot_large.FLIP)) < 0.01


def test_the_report_gives_each_method_against_cart_per_structure():
    records = [{"seed": 0, "structure": s, "method": m, "accuracy": a, "fit_seconds": 20.0, "load_before": 1.0}
               for s in onehot_large.STRUCTURES for m, a in zip(onehot_large.METHODS, (80.0, 85.0, 79.5))]
    text = onehot_large.report(records)
    assert "Bayes accuracy 90.0%" in text
    assert text.count("| +5.00 |") == 2 and text.count("| -0.50 |") == 2
