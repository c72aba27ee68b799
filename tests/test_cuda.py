"""Training on a CUDA device: the same tree quality as the CPU, ``device="auto"`` choosing the GPU, and a model that
leaves the GPU behind (numpy prediction, the model file). Skipped on machines where torch sees no CUDA device."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from get_core.model import model_file
from get_core.config import GETConfig
from get_core.estimator import GETRegressor
from get_core.engine.optimize import repeatable, resolve_device
from get_core.engine.train import train

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
TOLERANCE_R2 = 0.01  # float32 kernels differ in rounding (cuBLAS vs the CPU kernel), so routing may differ a little
CONFIG = GETConfig(depth=3, n_starts=4, n_epochs=100, n_alphas=3, random_state=0)


def sample(n: int = 2000, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    return X, np.sin(6 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n)


def fit(device: str) -> GETRegressor:
    X, y = sample()
    return GETRegressor(depth=3, n_starts=4, n_epochs=100, n_alphas=3, random_state=0, device=device).fit(X, y)


@cuda
def test_a_cuda_fit_reaches_the_cpu_fits_hard_loss_and_never_loses_to_cart():
    X, y = sample()
    on_gpu = train(X, y, dataclasses.replace(CONFIG, device="cuda"))
    on_cpu = train(X, y, dataclasses.replace(CONFIG, device="cpu"))
    cart = r2_score(y, DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).predict(X))
    assert on_gpu.meta["train_r2"] == pytest.approx(on_cpu.meta["train_r2"], abs=TOLERANCE_R2)
    assert on_gpu.meta["train_r2"] >= cart - 1e-9


@cuda
def test_auto_trains_on_cuda_when_torch_sees_a_device():
    assert resolve_device("auto").type == "cuda"
    torch.cuda.reset_peak_memory_stats()
    fit("auto")
    assert torch.cuda.max_memory_allocated() > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_auto_trains_on_the_cpu_when_torch_sees_no_cuda_device():
    assert resolve_device("auto").type == "cpu"
    X, y = sample(400)
    model = GETRegressor(depth=2, n_starts=2, n_epochs=20, n_alphas=2, random_state=0, device="auto").fit(X, y)
    assert model.tree_.meta["train_r2"] > 0.3


@cuda
def test_a_tree_trained_on_cuda_predicts_with_numpy_and_round_trips_through_the_model_file():
    X, y = sample()
    tree = fit("cuda").tree_
    arrays = [f.name for f in dataclasses.fields(tree) if isinstance(getattr(tree, f.name), np.ndarray)]
    assert {"weights", "thresholds", "leaf_intercepts"} <= set(arrays)
    assert all(getattr(tree, name).dtype.kind in "fiu" for name in arrays)  # plain numpy, no tensor inside
    predicted = tree.predict(X)
    assert isinstance(predicted, np.ndarray) and r2_score(y, predicted) == pytest.approx(tree.meta["train_r2"])
    again = model_file.load_model_json(model_file.model_json(tree))
    assert np.array_equal(again.predict(X), predicted)


def _class_sample(n: int = 1500, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    return X, np.digitize(X[:, 0] + X[:, 1] - 0.5 * X[:, 2] + rng.normal(scale=0.1, size=n), [0.4, 0.8, 1.2])


@cuda
def test_a_cuda_classification_fit_reaches_the_cpu_fits_training_gini():
    X, y = _class_sample()
    on_gpu = train(X, y, dataclasses.replace(CONFIG, device="cuda"), classes=[0, 1, 2, 3])
    on_cpu = train(X, y, dataclasses.replace(CONFIG, device="cpu"), classes=[0, 1, 2, 3])
    assert on_gpu.meta["train_r2"] == pytest.approx(on_cpu.meta["train_r2"], abs=TOLERANCE_R2)
    assert on_gpu.meta["train_accuracy"] == pytest.approx(on_cpu.meta["train_accuracy"], abs=0.02)


def test_the_torch_path_that_cuda_runs_trains_classes_like_the_cpu_kernel(monkeypatch):
    """Without a GPU: the torch soft pass (what CUDA runs) against the fused CPU kernel, same data and seed."""
    from get_core.engine import optimize

    X, y = _class_sample(800)
    config = GETConfig(depth=3, n_starts=3, n_epochs=60, random_state=0, device="cpu")
    kernel = train(X, y, config, classes=[0, 1, 2, 3])
    monkeypatch.setattr(optimize.native, "available", lambda device, n_features: False)
    torch_ops = train(X, y, config, classes=[0, 1, 2, 3])
    assert torch_ops.meta["train_r2"] == pytest.approx(kernel.meta["train_r2"], abs=TOLERANCE_R2)


@cuda
@pytest.mark.parametrize("task", ["regression", "sampled regression", "classification"])
def test_two_cuda_fits_with_one_random_state_are_the_same_tree_bit_for_bit(task):
    """CUDA's scatter-adds add in whatever order its threads finish unless told otherwise (``repeatable``)."""
    X, y = _class_sample() if task == "classification" else sample(3000)
    config = dataclasses.replace(CONFIG, device="cuda", batch_rows=1000 if task.startswith("sampled") else None)
    classes = [0, 1, 2, 3] if task == "classification" else None
    first, second = (train(X, y, config, classes=classes) for _ in range(2))
    for name in ("weights", "thresholds", "leaf_intercepts"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name
    assert not torch.are_deterministic_algorithms_enabled()  # the user's setting is back after the fit


def test_overlapping_cuda_fits_keep_the_deterministic_mode_until_the_last_one_ends():
    """Two fits in threads of one process (a Dask worker's): the first to end must not switch it off under the other."""
    cuda_device = torch.device("cuda")  # a device object only: no GPU is needed to enter the scope
    first, second = repeatable(cuda_device), repeatable(cuda_device)
    first.__enter__()
    second.__enter__()
    assert torch.are_deterministic_algorithms_enabled()
    first.__exit__(None, None, None)
    assert torch.are_deterministic_algorithms_enabled()
    second.__exit__(None, None, None)
    assert not torch.are_deterministic_algorithms_enabled()


def test_the_repeatable_scope_leaves_a_cpu_fit_and_the_users_own_setting_alone():
    with repeatable(torch.device("cpu")):
        assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with repeatable(torch.device("cuda")):
            assert torch.are_deterministic_algorithms_enabled()
        assert torch.are_deterministic_algorithms_enabled()  # not switched off behind the user's back
    finally:
        torch.use_deterministic_algorithms(False)
