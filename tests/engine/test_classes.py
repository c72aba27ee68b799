"""The classification soft loss (one-hot targets, C values per leaf) and its hand-written gradient equal the mixture
over leaves differentiated by torch.autograd, for both per-leaf losses; leaves and smoothing behave as documented."""

import numpy as np
import pytest
import torch

from get_core.engine import classes
from get_core.engine.soft import Params, soft_loss_and_grad


def reference_loss(params: Params, alpha, X, Y, w, starts, loss):
    """The soft tree's loss as explicit path products over ancestors, per model: sum_i w_i sum_l P_l(x_i) R_l(y_i)."""
    M, N, p = params.weights.shape
    L = N + 1
    out = []
    for m in range(M):
        b = m // starts
        s = torch.sigmoid(alpha[m] * (params.thresholds[m] - X[b] @ params.weights[m].T))  # (n, N)
        total = 0.0
        for leaf in range(L):
            node, prob = leaf + L, torch.ones(X.shape[1], dtype=X.dtype)
            while node > 1:
                parent = node // 2
                prob = prob * (s[:, parent - 1] if node % 2 == 0 else 1 - s[:, parent - 1])
                node = parent
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
    want_loss, want = soft_loss_and_grad(params, alpha, Xa, Xa.transpose(1, 2).contiguous(), Y, w, S, class_loss=loss)
    f32 = Params(params.weights.float(), params.thresholds.float(), params.intercepts.float(), None)
    got_loss, got = native.soft_loss_and_grad(f32, alpha.float(), Xa.float().contiguous(), Y.float(), w.float(), S,
                                              torch.tensor([n, n - 40]), class_loss=loss)
    torch.testing.assert_close(got_loss.double(), want_loss, rtol=1e-4, atol=1e-6)
    for a, b in zip(got.tensors(), want.tensors()):
        torch.testing.assert_close(a.double(), b, rtol=2e-3, atol=1e-5)
