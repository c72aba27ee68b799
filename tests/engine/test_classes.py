"""The classification soft loss (one-hot targets, C values per leaf) and its hand-written gradient equal the mixture
over leaves differentiated by torch.autograd, for both per-leaf losses; leaves and smoothing behave as documented."""

import numpy as np
import pytest
import torch

from get_core.engine import classes
from get_core.engine.soft import Params, soft_loss_and_grad
from tests.engine.native_builds import OLDER_CPUS, older_cpu_kernel
from tests.engine.test_soft import path_probabilities


def reference_loss(params: Params, alpha, X, Y, w, starts, loss):
    """The soft tree's loss as explicit path products over ancestors, per model: sum_i w_i sum_l P_l(x_i) R_l(y_i)."""
    out = []
    for m in range(params.weights.shape[0]):
        b = m // starts
        total = 0.0
        for leaf, prob in enumerate(path_probabilities(params, alpha, X, m, starts)):
            F = params.intercepts[m, leaf]
            if loss == "brier":
                R = ((Y[b] - F) ** 2).sum(dim=1)
            else:
                R = -(Y[b] * torch.log_softmax(F, dim=0)).sum(dim=1)
            total = total + (w[b] * prob * R).sum()
        out.append(total)
    return torch.stack(out)


@pytest.mark.parametrize("loss", classes.SOFT_LOSSES)
@pytest.mark.parametrize("depth", [1, 3])
def test_class_gradient_matches_autograd(loss, depth):
    g = torch.Generator().manual_seed(depth + 7 * (loss == "log"))
    B, S, n, p, C = 2, 3, 19, 4, 5
    M, N, L = B * S, 2 ** depth - 1, 2 ** depth
    X = torch.rand(B, n, p, generator=g, dtype=torch.float64)
    codes = torch.randint(0, C, (B, n), generator=g)
    Y = torch.nn.functional.one_hot(codes, C).to(torch.float64)
    w = torch.rand(B, n, generator=g, dtype=torch.float64)
    w[1, -5:] = 0.0  # padding rows of the second problem
    params = Params(torch.randn(M, N, p, generator=g, dtype=torch.float64),
                    torch.rand(M, N, generator=g, dtype=torch.float64),
                    torch.randn(M, L, C, generator=g, dtype=torch.float64), None)
    alpha = torch.rand(M, generator=g, dtype=torch.float64) * 20 + 1
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype)], dim=2)
    got, grads = soft_loss_and_grad(params, alpha, Xa, Xa.transpose(1, 2).contiguous(), Y, w, S, class_loss=loss)

    leaves = [t.clone().requires_grad_(True) for t in params.tensors()]
    ref = reference_loss(Params(*leaves, None), alpha, X, Y, w, S, loss)
    ref.sum().backward()
    torch.testing.assert_close(got, ref.detach())
    for mine, want in zip(grads.tensors(), leaves):
        torch.testing.assert_close(mine, want.grad)


def test_smoothing_keeps_each_leafs_class_and_sums_to_one():
    counts = np.array([[3.0, 1.0, 0.0], [0.0, 0.0, 2.0], [5.0, 5.0, 1.0]])
    proba = classes.smoothed(counts)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba > 0)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), np.argmax(counts, axis=1))


def test_a_rows_weight_is_that_many_copies_in_the_soft_and_hard_losses():
    from get_core.engine.optimize import Problems, _hard_evaluate
    from get_core.engine.soft import Workspace

    rng = np.random.default_rng(0)
    X, codes = rng.random((40, 3)), rng.integers(0, 3, 40)
    Y, weights = classes.one_hot(codes, 3), rng.integers(0, 4, 40).astype(float)
    weighted = Problems.from_arrays([(X, Y, weights)], torch.device("cpu"), torch.float64)
    repeated = Problems.from_arrays([(np.repeat(X, weights.astype(int), axis=0),
                                      np.repeat(Y, weights.astype(int), axis=0))], torch.device("cpu"), torch.float64)
    g = torch.Generator().manual_seed(0)
    params = Params(torch.randn(2, 3, 3, generator=g, dtype=torch.float64), torch.rand(2, 3, generator=g,
                    dtype=torch.float64), torch.rand(2, 4, 3, generator=g, dtype=torch.float64), None)
    alpha = torch.tensor([5.0, 40.0], dtype=torch.float64)
    results = []
    for problems in (weighted, repeated):
        n = problems.y.shape[1]
        loss, grads = soft_loss_and_grad(params, alpha, problems.Xa, problems.Xat, problems.y, problems.w, 2,
                                         Workspace(2, 2, n, torch.float64, torch.device("cpu")))
        fit, hard = _hard_evaluate(params, problems, [problems], 2, 2, None, False)
        results.append((loss, *grads.tensors(), hard, fit.intercepts))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("loss", classes.SOFT_LOSSES)
@pytest.mark.parametrize("sharp", [1.0, 50.0])
@pytest.mark.parametrize("depth", [1, 4])
def test_native_cpu_kernel_classifies_like_the_torch_implementation(loss, sharp, depth):
    from get_core.engine import native

    if native.load() is None:
        pytest.skip("no C++ compiler: training uses the torch implementation")
    _assert_kernel_classifies_like_torch(loss, sharp, depth)


@pytest.mark.parametrize("without", OLDER_CPUS)
def test_the_kernel_built_for_an_older_cpu_classifies_like_the_torch_implementation(without):
    """The portable loops a CPU without AVX-512 (or AVX2) compiles give a class tree the same loss and gradients."""
    with older_cpu_kernel(without):
        for loss in classes.SOFT_LOSSES:
            _assert_kernel_classifies_like_torch(loss, 50.0, 4)


def _assert_kernel_classifies_like_torch(loss: str, sharp: float, depth: int) -> None:
    """The compiled kernel's float32 loss and gradients for class leaves against the float64 torch implementation."""
    from get_core.engine import native

    g = torch.Generator().manual_seed(depth)
    B, S, n, p, C = 2, 3, 203, 5, 4  # n not a multiple of the kernel's tile
    M, N, L = B * S, 2 ** depth - 1, 2 ** depth
    X = torch.rand(B, n, p, generator=g, dtype=torch.float64)
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype)], dim=2)
    Y = torch.nn.functional.one_hot(torch.randint(0, C, (B, n), generator=g), C).to(torch.float64)
    w = torch.full((B, n), 1.0 / n, dtype=torch.float64)
    w[1, -40:] = 0.0
    params = Params(torch.randn(M, N, p, generator=g, dtype=torch.float64),
                    torch.rand(M, N, generator=g, dtype=torch.float64),
                    torch.rand(M, L, C, generator=g, dtype=torch.float64), None)
    alpha = (torch.rand(M, generator=g, dtype=torch.float64) * 30 + 1) * sharp
    Xat = Xa.transpose(1, 2).contiguous()
    want_loss, want = soft_loss_and_grad(params, alpha, Xa, Xat, Y, w, S, class_loss=loss)
    f32 = Params(params.weights.float(), params.thresholds.float(), params.intercepts.float(), None)
    got_loss, got = native.soft_loss_and_grad(f32, alpha.float(), Xat.float(), Y.float(), w.float(), S,
                                              torch.tensor([n, n - 40]), class_loss=loss)
    torch.testing.assert_close(got_loss.double(), want_loss, rtol=1e-4, atol=1e-6)
    for a, b in zip(got.tensors(), want.tensors()):
        torch.testing.assert_close(a.double(), b, rtol=2e-3, atol=1e-5)


def test_hard_accuracy_is_the_weighted_share_of_rows_whose_leaf_majority_is_their_class():
    from get_core.engine import leaves

    rng = np.random.default_rng(3)
    n, depth, starts, C = 60, 2, 3, 3
    codes = rng.integers(0, C, n)
    w = rng.uniform(0.1, 2.0, n)
    leaf = torch.as_tensor(rng.integers(0, 2 ** depth, (starts, n)))
    Y = torch.as_tensor(classes.one_hot(codes, C)).unsqueeze(0)
    W = torch.as_tensor(w / w.sum()).unsqueeze(0)
    fit = leaves.fit_leaves(leaf, torch.zeros(1, n, 1, dtype=torch.float64), Y, W, depth, None, starts)
    got = leaves.hard_accuracy(leaf, fit, Y, W, starts).numpy()
    for m in range(starts):
        hits = 0.0
        for lf in range(2 ** depth):
            rows = leaf[m].numpy() == lf
            if rows.any():
                totals = np.bincount(codes[rows], weights=w[rows], minlength=C)
                hits += totals.max()
        assert got[m] == pytest.approx(hits / w.sum())


def test_a_classifiers_progress_carries_its_hard_accuracy_and_a_regressions_does_not():
    from get_core.config import GETConfig
    from get_core.engine.train import train

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 3))
    codes = (X[:, 0] + X[:, 1] > 1).astype(int) + (X[:, 2] > 0.7)
    config = GETConfig(depth=2, n_starts=2, n_epochs=10, n_alphas=2, polish=False, device="cpu", random_state=0)
    seen, plain = [], []
    tree = train(X, codes, config, on_progress=seen.append, classes=[0, 1, 2])
    train(X, X[:, 0], config, on_progress=plain.append)
    accuracies = [r.hard_accuracy for p in seen for r in p.records]
    assert all(0 <= a <= 1 for a in accuracies) and len(accuracies) > 0
    assert seen[-1].best_hard_accuracy == pytest.approx(max(accuracies))
    assert max(accuracies) >= tree.meta["train_accuracy"] - 1e-6  # the kept tree was scored at a checkpoint
    assert all(r.hard_accuracy is None for p in plain for r in p.records) and plain[-1].best_hard_accuracy is None
