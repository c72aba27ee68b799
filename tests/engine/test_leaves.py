"""Leaves from hard splits: means, ridge least squares, and empty leaves taking their nearest ancestor's value."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.engine import classes, leaves
from get_core.engine.leaves import FENCE, refit_tree_leaves
from get_core.model import routing
from tests.trees import make_class_tree, make_tree


def test_constant_leaves_are_the_mean_of_their_rows():
    tree, X, y = make_tree(depth=3, seed=1)
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys)
    leaf = tree.apply(X)
    for node in np.unique(leaf):
        assert tree.leaf_intercepts[node - tree.n_leaves] == pytest.approx(ys[leaf == node].mean())
        assert tree.n_samples[node - 1] == np.count_nonzero(leaf == node)


def test_empty_leaves_take_their_nearest_non_empty_ancestor_mean():
    tree, X, y = make_tree(depth=2, seed=2, empty_subtree=True)  # every row goes left at the root
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys)
    assert tree.n_samples[2] == 0 and tree.n_samples[5] == 0 and tree.n_samples[6] == 0  # nodes 3, 6, 7
    np.testing.assert_allclose(tree.leaf_intercepts[2:], ys.mean())
    assert np.isnan(tree.node_values[2]) and tree.node_values[0] == pytest.approx(ys.mean())


def test_linear_leaves_fit_least_squares_and_fall_back_to_the_mean_when_rows_are_few():
    tree, X, y = make_tree(depth=1, p=3, leaf="linear", seed=3, n_rows=400)
    ys = (y - tree.y_min) / tree.y_scale
    refit_tree_leaves(tree, X, ys, "ols")
    xs = tree.scale_X(X)
    leaf = tree.apply(X) - tree.n_leaves
    for i in range(2):
        rows = leaf == i
        A = np.c_[xs[rows], np.ones(rows.sum())]
        want = np.linalg.lstsq(A, ys[rows], rcond=None)[0]
        np.testing.assert_allclose(np.r_[tree.leaf_coefs[i], tree.leaf_intercepts[i]], want, atol=2e-3)
    few = slice(0, 4)  # 4 rows < p + 2 = 5 in at least one leaf
    refit_tree_leaves(tree, X[few], ys[few], "ols")
    small = tree.n_samples[1:] < 5
    assert np.all(tree.leaf_coefs[small] == 0)


def _gcv(rss: float, n: int, k: int) -> float:
    return rss / n / (1 - k / n) ** 2


@pytest.mark.parametrize("signal", [0.0, 1.0])
def test_gcv_keeps_a_leaf_line_only_where_it_beats_the_leaf_mean_by_generalized_cross_validation(signal):
    """Few rows per leaf (~16 for 9 parameters): pure noise must give means, a strong line must keep its slopes;
    each leaf's choice is checked against GCV computed here from numpy least squares."""
    tree, X, _ = make_tree(depth=3, p=8, leaf="linear", seed=4, n_rows=130)
    rng = np.random.default_rng(5)
    xs = tree.scale_X(X)
    ys = signal * xs @ rng.normal(size=8) + rng.normal(scale=0.1, size=len(X))
    leaf = tree.apply(X) - tree.n_leaves
    kept = []
    for rule in ("ols", "gcv"):
        refit_tree_leaves(tree, X, ys, rule)
        kept.append(np.any(tree.leaf_coefs != 0, axis=1))
    for i in range(tree.n_leaves):
        rows = leaf == i
        n = int(rows.sum())
        if n <= 9:
            assert not kept[0][i] and not kept[1][i]
            continue
        A = np.c_[xs[rows], np.ones(n)]
        rss_line = float(np.sum((A @ np.linalg.lstsq(A, ys[rows], rcond=None)[0] - ys[rows]) ** 2))
        rss_mean = float(np.sum((ys[rows] - ys[rows].mean()) ** 2))
        assert kept[0][i]
        assert kept[1][i] == (_gcv(rss_line, n, 9) < _gcv(rss_mean, n, 1))
        if not kept[1][i]:
            assert tree.leaf_intercepts[i] == pytest.approx(ys[rows].mean())
    if signal:
        assert np.array_equal(kept[1], kept[0]) and kept[0].sum() >= 6
    else:
        assert kept[1].sum() <= kept[0].sum() // 2


def _walled_off_tree(rows_right: int, rows_right_left: int):
    """A depth-2 linear tree on one feature whose root sends the ``rows_right`` largest x0 right and whose node 3
    sends the first ``rows_right_left`` of those to leaf 6: the pattern of a squared-loss fit walling off the
    extreme targets of a heavy-tailed y (gas_turbine_co) in leaves of a few rows. Returns (tree, X, ys)."""
    tree, X, _ = make_tree(depth=2, p=2, leaf="linear", seed=8, n_rows=200)
    xs = tree.scale_X(X)[:, 0]
    order = np.sort(xs)
    cut = lambda i: (order[i - 1] + order[i]) / 2  # noqa: E731 (after the i smallest)
    tree.weights[:] = [[1.0, 0.0]] * 3
    tree.thresholds[:] = [cut(200 - rows_right), cut(100), cut(200 - rows_right + rows_right_left)]
    rng = np.random.default_rng(9)
    ys = 0.3 * xs + rng.normal(scale=0.02, size=200)
    ys[xs > cut(200 - rows_right)] += 5.0  # the extreme targets, walled off on the right
    return tree, X, ys


@pytest.mark.parametrize("rows_right, rows_right_left", [(3, 1), (6, 2)])
def test_a_gcv_leaf_of_few_rows_predicts_its_nearest_ancestor_mean_with_enough_rows(rows_right, rows_right_left):
    """Under "gcv" a leaf of fewer than MIN_LEAF_ROWS rows (here 1-4, the walled-off extremes) has no model of its
    own: no slopes, no bounds, its nearest ancestor's mean with that many rows (node 3 has too few as well, so the
    root's). A new row landing there gets that mean, not the extreme value; the paper's "ols" keeps the leaf's own."""
    tree, X, ys = _walled_off_tree(rows_right, rows_right_left)
    leaf = tree.apply(X) - tree.n_leaves
    assert np.bincount(leaf, minlength=4).tolist() == [100, 100 - rows_right, rows_right_left,
                                                       rows_right - rows_right_left]
    refit_tree_leaves(tree, X, ys, "ols")
    assert np.all(tree.predict_scaled(X)[leaf >= 2] > 4.0)
    assert tree.predict_scaled(X.max(axis=0, keepdims=True) + 1.0)[0] > 4.0
    refit_tree_leaves(tree, X, ys, "gcv")
    few = np.array([False, False, True, True])
    assert rows_right < leaves.MIN_LEAF_ROWS
    np.testing.assert_allclose(tree.leaf_intercepts[few], ys.mean())
    assert np.all(tree.leaf_coefs[few] == 0)
    assert np.all(tree.leaf_lower[few] == -np.inf) and np.all(tree.leaf_upper[few] == np.inf)
    assert tree.n_samples[3:].tolist() == np.bincount(leaf, minlength=4).tolist()  # counts stay the leaf's own
    far = tree.predict_scaled(X.max(axis=0, keepdims=True) + 1.0)[0]
    assert far == pytest.approx(ys.mean()) and far < 1.0
    assert np.all(np.isfinite(tree.leaf_lower[~few])) and np.all(tree.leaf_lower[~few] <= tree.leaf_upper[~few])


def test_a_gcv_leaf_takes_its_parents_mean_when_the_parent_has_enough_rows():
    """A leaf of 2 rows under a node of 12 takes that node's mean, not the root's: the nearest supported ancestor."""
    tree, X, ys = _walled_off_tree(12, 2)
    leaf = tree.apply(X) - tree.n_leaves
    refit_tree_leaves(tree, X, ys, "gcv")
    node3 = leaf >= 2
    assert tree.leaf_intercepts[2] == pytest.approx(ys[node3].mean())
    assert tree.leaf_intercepts[2] != pytest.approx(ys.mean())


def test_clip_bounds_each_linear_leaf_by_its_targets_fences_and_never_raises_the_error_of_rows_within_them():
    """A sloped leaf is bounded by its training targets' range narrowed to Tukey's far fences (engine.leaves.FENCE):
    outliers cannot be handed to new rows, and a row whose target lies within its leaf's bounds is never predicted
    worse than by the unclamped line."""
    tree, X, y = make_tree(depth=2, p=3, leaf="linear", seed=6, n_rows=300, empty_subtree=True)
    ys = (y - tree.y_min) / tree.y_scale
    ys[::7] += 30.0  # far outliers: lines now overshoot other rows of their leaf
    leaf = tree.apply(X) - tree.n_leaves
    refit_tree_leaves(tree, X, ys, "ols", clip=False)
    unclipped = tree.predict_scaled(X)
    refit_tree_leaves(tree, X, ys, "ols", clip=True)
    fenced = 0
    for i in range(tree.n_leaves):
        rows = leaf == i
        if rows.any():
            q1, q3 = np.percentile(ys[rows], [25, 75])
            assert tree.leaf_lower[i] == max(ys[rows].min(), q1 - FENCE * (q3 - q1))
            assert tree.leaf_upper[i] == min(ys[rows].max(), q3 + FENCE * (q3 - q1))
            fenced += tree.leaf_upper[i] < ys[rows].max()
        else:  # an empty leaf has no range: no bounds
            assert tree.leaf_lower[i] == -np.inf and tree.leaf_upper[i] == np.inf
    assert fenced > 0  # the outliers lie beyond the fences
    clipped = tree.predict_scaled(X)
    within = (ys >= tree.leaf_lower[leaf]) & (ys <= tree.leaf_upper[leaf])
    assert np.any(clipped != unclipped) and not within.all()
    assert np.all(np.abs(clipped - ys)[within] <= np.abs(unclipped - ys)[within] + 1e-12)


def test_constant_leaves_carry_no_bounds():
    tree, X, y = make_tree(depth=2, seed=7)
    refit_tree_leaves(tree, X, (y - tree.y_min) / tree.y_scale, clip=True)
    assert not tree.has_leaf_bounds


@pytest.mark.parametrize("p", [1, 4, 30])
@pytest.mark.parametrize("chunk", [None, 20 * 100, 7 * 36])  # all at once; one model at a time; a few rows at a time
def test_linear_leaf_sums_are_each_leafs_weighted_sums(monkeypatch, p, chunk):
    """However the memory bound cuts the rows into chunks and blocks, each (model, leaf) gets the weighted sums of
    exactly its own rows (an empty leaf: zeros)."""
    import torch

    from get_core.engine import leaves

    if chunk is not None:
        monkeypatch.setattr(leaves, "_SUM_CHUNK", chunk)
    gen = torch.Generator().manual_seed(p)
    B, n, starts, L = 2, 300, 3, 4
    Xa = torch.cat([torch.rand(B, n, p, generator=gen, dtype=torch.float64),
                    torch.ones(B, n, 1, dtype=torch.float64)], dim=2)
    y, w = torch.rand(B, n, generator=gen, dtype=torch.float64), torch.rand(B, n, generator=gen, dtype=torch.float64)
    leaf = torch.randint(0, L, (B * starts, n), generator=gen)
    leaf[4][leaf[4] == 1] = 2  # model 4's leaf 1 is empty
    gram, rhs, yy = leaves._leaf_sums(leaf, Xa, w, y, L, starts)
    for m in range(B * starts):
        x, wy, ym = Xa[m // starts].numpy(), w[m // starts].numpy(), y[m // starts].numpy()
        for j in range(L):
            rows = leaf[m].numpy() == j
            xr, wr, yr = x[rows], wy[rows], ym[rows]
            np.testing.assert_allclose(gram[m * L + j].numpy(), (xr * wr[:, None]).T @ xr, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(rhs[m * L + j].numpy(), xr.T @ (wr * yr), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(float(yy[m * L + j]), float(np.sum(wr * yr * yr)), rtol=1e-12, atol=1e-12)
    assert float(gram[4 * L + 1].abs().max()) == 0.0


@pytest.mark.skipif(routing.library() is None, reason="the compiled router could not be built (g++)")
@pytest.mark.parametrize("p, depth, starts", [(1, 1, 1), (4, 5, 3), (12, 7, 2), (80, 3, 2)])
def test_the_compiled_checkpoint_router_gives_torchs_leaves_for_rows_lying_on_the_splits(p, depth, starts):
    """The checkpoints' router must send every row where ``route`` (torch's float32 matmul) does, rows whose margin
    is zero up to rounding included: the trees a fit keeps depend on it, bit for bit."""
    assert leaves._native_matches_route(), "the compiled router does not reproduce torch's matmul on this machine"
    gen = torch.Generator().manual_seed(p)
    B, n, N = 2, 5000, 2 ** depth - 1
    X = torch.rand(B, n, p, generator=gen) * 10 ** torch.randint(-3, 3, (B, 1, p), generator=gen)
    Xa = torch.cat([X, torch.ones(B, n, 1)], dim=2).contiguous()
    weights = torch.randn(B * starts, N, p, generator=gen)
    row = X.repeat_interleave(starts, dim=0)[:, torch.randint(0, n, (N,), generator=gen)]  # (M, N, p)
    thresholds = (weights.double() * row.double()).sum(dim=2).float()  # each node's split through a row
    native = leaves.route_native(weights, thresholds, Xa, starts)
    assert native is not None
    torch.testing.assert_close(native, leaves.route(weights, thresholds, Xa.transpose(1, 2).contiguous(), starts),
                               rtol=0, atol=0)


def _tree_arrays(tree) -> list[np.ndarray]:
    names = ("leaf_intercepts", "leaf_coefs", "n_samples", "node_values", "leaf_lower", "leaf_upper", "node_counts",
             "leaf_proba")
    return [np.asarray(getattr(tree, name)) for name in names if getattr(tree, name, None) is not None]


@pytest.mark.parametrize("backend", ["auto", "numpy"])
@pytest.mark.parametrize("kind", ["constant", "linear", "classes"])
def test_the_trainers_scaled_rows_route_and_refit_exactly_as_the_models_public_methods(kind, backend, monkeypatch):
    """The engine routes rows it scaled once (``scaled=True``, the compiled router where it builds, else numpy);
    every loss and leaf it computes so must equal, bit for bit, what the model's own ``apply``/``predict_scaled`` on
    the original rows give, or a refit would keep a change the model itself does not make."""
    if backend == "numpy":
        monkeypatch.setattr(routing, "library", lambda: None)
    if kind == "classes":
        tree, X, labels = make_class_tree(depth=4, p=5, seed=4, n_rows=600)
        ys = np.eye(tree.n_classes)[np.searchsorted(tree.classes, labels)]
    else:
        tree, X, y = make_tree(depth=4, p=5, leaf=kind, seed=4, n_rows=600)
        ys = (y - tree.y_min) / tree.y_scale
    X[::7, 1] *= 1e3  # rows far outside the training range: scaled values well beyond [0, 1]
    sw = np.random.default_rng(4).random(len(X)) + 0.5
    Xs = tree.scale_X(X)
    by_model = [np.asarray(a).copy() for a in _tree_arrays(refit_tree_leaves(tree, X, ys, sample_weight=sw))]
    by_engine = _tree_arrays(refit_tree_leaves(tree, Xs, ys, sample_weight=sw, scaled=True))
    for a, b in zip(by_model, by_engine, strict=True):
        np.testing.assert_array_equal(a, b)
    if kind == "classes":  # the Brier score of one-hot rows, 1 - 2 v[class] + |v|^2, at the public routing's leaves
        values, leaf = leaves.leaf_values(tree), tree.apply(X) - tree.n_leaves
        public = (1.0 - 2.0 * values[leaf, ys.argmax(axis=1)] + np.square(values).sum(axis=1)[leaf]) * sw
        np.testing.assert_allclose(public, classes.brier_rows(values[leaf], ys) * sw, rtol=1e-12, atol=1e-15)
    else:
        public = (tree.predict_scaled(X) - ys) ** 2 * sw
    np.testing.assert_array_equal(leaves.row_losses(tree, Xs, ys, sw, scaled=True), public)
    np.testing.assert_array_equal(leaves.row_losses(tree, X, ys, sw), public)


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 3), n_classes=st.integers(2, 6), problems=st.integers(1, 2), starts=st.integers(1, 3),
       seed=st.integers(0, 2 ** 16))
def test_class_leaves_and_their_hard_loss_and_accuracy_are_the_dense_per_class_sums(depth, n_classes, problems,
                                                                                    starts, seed):
    """The class statistics read each row's class as an index (no (models x rows x classes) array); they must equal
    the dense sums over one-hot rows they replace, padding rows (weight 0, no class) and empty leaves included."""
    rng = np.random.default_rng(seed)
    n, L = 40, 2 ** depth
    codes = rng.integers(0, n_classes, (problems, n))
    y = torch.as_tensor(np.eye(n_classes)[codes], dtype=torch.float64)
    w = torch.as_tensor(rng.random((problems, n)) * (rng.random((problems, n)) > 0.2), dtype=torch.float64)
    w[:, 0] = 1.0  # every problem has a row
    y[w == 0] = 0.0  # padding rows carry no class
    w /= w.sum(dim=1, keepdim=True)
    leaf = torch.as_tensor(rng.integers(0, max(1, L - 1), (problems * starts, n)))  # the last leaf stays empty
    fit = leaves.fit_leaves(leaf, torch.zeros(problems, n, 1, dtype=torch.float64), y, w, depth, None, starts)

    ym, wm = (t.repeat_interleave(starts, dim=0).numpy() for t in (y, w))
    for m in range(problems * starts):
        for node in range(L):
            rows = leaf[m].numpy() == node
            if wm[m, rows].sum() > 0:
                np.testing.assert_allclose(fit.node_means[m, L - 1 + node].numpy(),
                                           (wm[m, rows, None] * ym[m, rows]).sum(axis=0) / wm[m, rows].sum())
    shares = fit.intercepts.numpy()[np.arange(problems * starts)[:, None], leaf.numpy()]  # (M, n, C)
    dense_loss = (wm * np.square(ym - shares).sum(axis=2)).sum(axis=1)
    np.testing.assert_allclose(leaves.hard_loss(leaf, fit, None, y, w, starts).numpy(), dense_loss, rtol=1e-12)
    hits = ym.argmax(axis=2) == shares.argmax(axis=2)
    np.testing.assert_allclose(leaves.hard_accuracy(leaf, fit, y, w, starts).numpy(),
                               (wm * hits).sum(axis=1) / wm.sum(axis=1), rtol=1e-12)


def test_a_gcv_leaf_keeps_its_slopes_only_with_enough_rows_per_parameter(monkeypatch):
    """``SLOPE_ROWS_PER_PARAMETER`` (1: no condition beyond GCV's) asks a linear leaf for that many rows per parameter
    (p + 1) before it keeps its slopes; below it the leaf keeps its own mean and bounds. Here 11 rows a leaf, p = 3: a
    strong line keeps its slopes at 1 and at 2 (8 rows needed), not at 3 (12)."""
    tree, X, _ = make_tree(depth=1, p=3, leaf="linear", seed=3, n_rows=22)
    xs = tree.scale_X(X)
    ys = xs @ np.array([1.0, -2.0, 0.5]) + np.random.default_rng(4).normal(scale=0.01, size=len(X))
    leaf = tree.apply(X) - tree.n_leaves
    assert np.bincount(leaf).tolist() == [11, 11] and leaves.SLOPE_ROWS_PER_PARAMETER == 1
    for per_parameter, slopes in ((1, True), (2, True), (3, False)):
        monkeypatch.setattr(leaves, "SLOPE_ROWS_PER_PARAMETER", per_parameter)
        refit_tree_leaves(tree, X, ys, "gcv")
        assert np.all(np.any(tree.leaf_coefs != 0, axis=1) == slopes)
        if not slopes:
            np.testing.assert_allclose(tree.leaf_intercepts, [ys[leaf == i].mean() for i in range(2)])
            assert np.all(np.isfinite(tree.leaf_lower))
