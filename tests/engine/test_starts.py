"""The start trees: the CART start's learned default direction for missing values, and plain tables unchanged."""

import numpy as np
import pytest
import torch
from sklearn.tree import DecisionTreeRegressor

from get_core import GETRegressor
from get_core.engine import starts
from get_core.engine.starts import cart_splits, missing_pairs, random_splits
from get_core.model.model_file import to_dict


def _with_holes(seed: int, n: int = 500) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(engine matrix as ``inputs.encode`` lays it out: x0, x0=missing, x1; the raw x0 with NaN; y; groups),
    x0 missing more often the larger it is, so where a missing row belongs is not where its mean falls."""
    rng = np.random.default_rng(seed)
    x0, x1 = rng.random(n), rng.random(n)
    holes = rng.random(n) < 0.8 * x0
    y = (x0 > 0.6) * 2.0 + x1 + rng.normal(scale=0.05, size=n)
    encoded = np.column_stack([np.where(holes, x0[~holes].mean(), x0), holes.astype(float), x1])
    raw = np.column_stack([np.where(holes, np.nan, x0), holes.astype(float), x1])
    return encoded, raw, y, np.array([0, 0, 1])


def _leaves(X: np.ndarray, weights: np.ndarray, thresholds: np.ndarray, depth: int) -> np.ndarray:
    """Each row's heap leaf under hard splits ``w . x <= t`` (left)."""
    node = np.ones(len(X), dtype=int)
    for _ in range(depth):
        node = 2 * node + ((X * weights[node - 1]).sum(axis=1) > thresholds[node - 1])
    return node


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_cart_start_routes_missing_rows_where_a_cart_grown_on_nan_sends_them(seed):
    encoded, raw, y, groups = _with_holes(seed)
    weights, thresholds = cart_splits(encoded, y, 3, 0, groups=groups)
    cart = DecisionTreeRegressor(max_depth=3, random_state=0).fit(raw, y)
    ours = _leaves(encoded, weights, thresholds, 3)
    # same partition: every CART leaf is exactly one of ours
    pairs = set(zip(cart.apply(raw), ours))
    assert len(pairs) == len(set(ours)) == len(set(cart.apply(raw)))
    assert np.any(weights[:, 1] != 0)  # some split learned where the missing x0 goes


def test_a_split_of_missing_rows_apart_becomes_a_split_on_is_missing():
    n = 200
    holes = np.arange(n) % 3 == 0
    encoded = np.column_stack([np.where(holes, 0.5, 0.5), holes.astype(float)])  # x0 is the same number everywhere
    weights, thresholds = cart_splits(encoded, holes * 1.0, 1, 0, groups=np.array([0, 0]))
    assert weights[0, 0] == 0 and np.isfinite(thresholds).all()
    left = encoded @ weights[0] <= thresholds[0]
    assert (left == ~holes).all() or (left == holes).all()


def test_missing_pairs_are_numbers_with_their_indicator_not_categories_or_plain_columns():
    encoded, _, _, groups = _with_holes(0)
    assert missing_pairs(encoded, groups) == {0: 1}
    levels = np.eye(3)[np.arange(90) % 3]  # a three-level category: one group of three
    assert missing_pairs(np.column_stack([levels, encoded[:90, 2]]), np.array([0, 0, 0, 1])) == {}
    two_numbers = np.random.default_rng(0).random((50, 2))
    assert missing_pairs(two_numbers, np.array([0, 0])) == {}


def test_random_starts_can_leave_the_missing_columns_at_zero(monkeypatch):
    encoded, _, _, groups = _with_holes(0)
    X = torch.as_tensor(encoded)[None]
    monkeypatch.setattr(starts, "ZERO_RANDOM_MISSING", True)
    weights, thresholds = random_splits(X, torch.tensor([len(encoded)]), 4, 2, torch.Generator().manual_seed(0),
                                        groups)
    assert (weights[:, :, 1] == 0).all() and (weights[:, :, 0] != 0).all()
    torch.testing.assert_close(weights.norm(dim=2), torch.ones(4, 3, dtype=weights.dtype))


@pytest.mark.parametrize("holes", [False, True])
def test_a_table_without_holes_fits_bit_identically_with_the_default_direction_on_or_off(monkeypatch, holes):
    rng = np.random.default_rng(3)
    X = rng.random((300, 4))
    y = X[:, 0] + np.sin(4 * X[:, 1]) + rng.normal(scale=0.1, size=300)
    if holes:
        X[rng.random(300) < 0.3 * X[:, 0], 0] = np.nan

    def fitted(direction: bool, zero: bool) -> dict:
        monkeypatch.setattr(starts, "DEFAULT_DIRECTION", direction)
        monkeypatch.setattr(starts, "ZERO_RANDOM_MISSING", zero)
        tree = to_dict(GETRegressor(depth=3, n_starts=3, n_epochs=40, random_state=0).fit(X, y).tree_)
        tree["meta"] = {k: v for k, v in tree["meta"].items() if "seconds" not in k and k != "cpu_share"}  # clock
        return tree

    before, after = fitted(False, False), fitted(True, True)
    assert before.keys() == after.keys()
    same = {k: before[k] == after[k] for k in before}
    assert all(same.values()) != holes, same  # plain: every field equal; with holes the start (and tree) differ
