"""The hand-written soft loss and gradient equal the paper's formulation differentiated by torch.autograd."""

import pytest
import torch

from get_core.engine.soft import Params, soft_loss_and_grad
from tests.engine.native_builds import OLDER_CPUS, older_cpu_kernel


def path_probabilities(params: Params, alpha, X, m: int, starts: int) -> list[torch.Tensor]:
    """Model ``m``'s soft routing: each leaf's probability per row, as explicit products over its ancestors."""
    L = params.weights.shape[1] + 1
    b = m // starts
    s = torch.sigmoid(alpha[m] * (params.thresholds[m] - X[b] @ params.weights[m].T))  # (n, N)
    probabilities = []
    for leaf in range(L):
        node, prob = leaf + L, torch.ones(X.shape[1], dtype=X.dtype)
        while node > 1:
            parent = node // 2
            prob = prob * (s[:, parent - 1] if node % 2 == 0 else 1 - s[:, parent - 1])
            node = parent
        probabilities.append(prob)
    return probabilities


def reference_loss(params: Params, alpha, X, y, w, starts):
    """Eq. (3) with the scaled sigmoid, path probabilities as explicit products over ancestors, per model."""
    losses = []
    for m in range(params.weights.shape[0]):
        b = m // starts
        total = 0.0
        for leaf, prob in enumerate(path_probabilities(params, alpha, X, m, starts)):
            pred = params.intercepts[m, leaf]
            if params.coefs is not None:
                pred = pred + X[b] @ params.coefs[m, leaf]
            total = total + (w[b] * prob * (y[b] - pred) ** 2).sum()
        losses.append(total)
    return torch.stack(losses)


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("depth", [1, 3])
def test_gradient_matches_autograd_of_the_path_product_formulation(linear, depth):
    g = torch.Generator().manual_seed(depth + 10 * linear)
    B, S, n, p = 2, 3, 17, 4
    M, N, L = B * S, 2 ** depth - 1, 2 ** depth
    X = torch.rand(B, n, p, generator=g, dtype=torch.float64)
    y = torch.rand(B, n, generator=g, dtype=torch.float64)
    w = torch.rand(B, n, generator=g, dtype=torch.float64)
    w[1, -5:] = 0.0  # padding rows of the second problem
    params = Params(
        torch.randn(M, N, p, generator=g, dtype=torch.float64),
        torch.rand(M, N, generator=g, dtype=torch.float64),
        torch.rand(M, L, generator=g, dtype=torch.float64),
        torch.randn(M, L, p, generator=g, dtype=torch.float64) if linear else None,
    )
    alpha = torch.rand(M, generator=g, dtype=torch.float64) * 20 + 1
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype)], dim=2)
    loss, grads = soft_loss_and_grad(params, alpha, Xa, Xa.transpose(1, 2).contiguous(), y, w, S)

    leaves = [t.clone().requires_grad_(True) for t in params.tensors()]
    ref_params = Params(*leaves) if linear else Params(*leaves, None)
    ref = reference_loss(ref_params, alpha, X, y, w, S)
    ref.sum().backward()
    torch.testing.assert_close(loss, ref.detach())
    for got, want in zip(grads.tensors(), leaves):
        torch.testing.assert_close(got, want.grad)


@pytest.mark.parametrize("sharp", [1.0, 50.0])  # 50: saturated splits, most subtrees skipped by the kernel
@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("depth", [1, 4, 7])
def test_native_cpu_kernel_matches_the_torch_implementation(linear, depth, sharp):
    from get_core.engine import native

    if native.load() is None:
        pytest.skip("no C++ compiler: training uses the torch implementation")
    _assert_kernel_matches_torch(linear, depth, sharp)


@pytest.mark.parametrize("without", OLDER_CPUS)
def test_the_kernel_built_for_an_older_cpu_matches_the_torch_implementation(without):
    """The portable loops a CPU without AVX-512 (or AVX2) compiles compute the same loss and gradients."""
    with older_cpu_kernel(without):
        for linear, depth, sharp in [(False, 4, 1.0), (True, 4, 50.0), (False, 7, 50.0)]:
            _assert_kernel_matches_torch(linear, depth, sharp)


def _assert_kernel_matches_torch(linear: bool, depth: int, sharp: float) -> None:
    """The compiled kernel's float32 loss and gradients against the float64 torch implementation, and its skipping
    of padding rows."""
    from get_core.engine import native

    g = torch.Generator().manual_seed(depth)
    B, S, n, p = 2, 3, 603, 5  # n not a multiple of the kernel's tile, over several of its groups of tiles
    M, N, L = B * S, 2 ** depth - 1, 2 ** depth
    X = torch.rand(B, n, p, generator=g, dtype=torch.float64)
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype)], dim=2)
    y = torch.rand(B, n, generator=g, dtype=torch.float64)
    w = torch.full((B, n), 1.0 / n, dtype=torch.float64)
    w[1, -40:] = 0.0
    params = Params(torch.randn(M, N, p, generator=g, dtype=torch.float64),
                    torch.rand(M, N, generator=g, dtype=torch.float64),
                    torch.rand(M, L, generator=g, dtype=torch.float64),
                    torch.randn(M, L, p, generator=g, dtype=torch.float64) * 0.1 if linear else None)
    alpha = (torch.rand(M, generator=g, dtype=torch.float64) * 30 + 1) * sharp
    Xat = Xa.transpose(1, 2).contiguous()
    want_loss, want = soft_loss_and_grad(params, alpha, Xa, Xat, y, w, S)
    f32 = Params(*(None if t is None else t.float() for t in (params.weights, params.thresholds, params.intercepts,
                                                               params.coefs)))
    loss, got = native.soft_loss_and_grad(f32, alpha.float(), Xat.float(), y.float(), w.float(), S)
    torch.testing.assert_close(loss.double(), want_loss, rtol=1e-4, atol=1e-6)
    for a, b in zip(got.tensors(), want.tensors()):
        torch.testing.assert_close(a.double(), b, rtol=2e-3, atol=1e-5)
    skipped_loss, skipped = native.soft_loss_and_grad(f32, alpha.float(), Xat.float(), y.float(),
                                                      w.float(), S, torch.tensor([n, n - 40]))
    torch.testing.assert_close(skipped_loss, loss)  # the padding rows (weight 0) are skipped, not counted
    for a, b in zip(skipped.tensors(), got.tensors()):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("depth", [1, 3])
def test_logistic_leaves_gradient_matches_autograd_of_the_soft_routed_log_loss(depth):
    g = torch.Generator().manual_seed(depth)
    B, S, n, p, C = 2, 2, 19, 3, 4
    M, N, L = B * S, 2 ** depth - 1, 2 ** depth
    X = torch.rand(B, n, p, generator=g, dtype=torch.float64)
    Y = torch.nn.functional.one_hot(torch.randint(0, C, (B, n), generator=g), C).to(torch.float64)
    w = torch.rand(B, n, generator=g, dtype=torch.float64)
    w[1, -4:] = 0.0  # padding rows of the second problem
    params = Params(torch.randn(M, N, p, generator=g, dtype=torch.float64),
                    torch.rand(M, N, generator=g, dtype=torch.float64),
                    torch.randn(M, L, C, generator=g, dtype=torch.float64),
                    torch.randn(M, L, C, p, generator=g, dtype=torch.float64))
    alpha = torch.rand(M, generator=g, dtype=torch.float64) * 20 + 1
    Xa = torch.cat([X, torch.ones(B, n, 1, dtype=X.dtype)], dim=2)
    loss, grads = soft_loss_and_grad(params, alpha, Xa, Xa.transpose(1, 2).contiguous(), Y, w, S)

    leaves = [t.clone().requires_grad_(True) for t in params.tensors()]
    ref = []
    for m in range(M):
        b = m // S
        total = 0.0
        for leaf, prob in enumerate(path_probabilities(Params(*leaves), alpha, X, m, S)):
            z = leaves[2][m, leaf] + X[b] @ leaves[3][m, leaf].T  # (n, C)
            total = total + (w[b] * prob * (torch.logsumexp(z, dim=1) - (z * Y[b]).sum(dim=1))).sum()
        ref.append(total)
    torch.stack(ref).sum().backward()
    torch.testing.assert_close(loss, torch.stack(ref).detach())
    for got, want in zip(grads.tensors(), leaves):
        torch.testing.assert_close(got, want.grad)
