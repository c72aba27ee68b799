"""The batched GET engine: never loses to its CART start, draws the paper's alphas, reports and cancels, and its
fused CPU kernel agrees with the torch path."""

import time

import numpy as np
import pytest
import torch
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from get_core.config import AUTO_SAMPLE_ABOVE, SAMPLE_ROWS, GETConfig, soft_rows
from get_core.engine.optimize import Problems, _Adam, _hard_evaluate, alpha_schedule, initial_params, run_stages
from get_core.engine.progress import Reporter
from get_core.schedule import alpha_stage_bounds, stage_midpoints
from get_core.engine.train import train
from tests.planted import planted_depth2


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_result_is_never_worse_than_the_cart_warm_start(leaf):
    rng = np.random.default_rng(3)
    X = rng.random((500, 5))
    y = np.sin(6 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=500)
    tree = train(X, y, GETConfig(depth=3, leaf=leaf, n_starts=2, n_epochs=2, random_state=0))
    cart = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    cart_r2 = r2_score(y, cart.predict(X))
    if leaf == "constant":
        assert tree.meta["train_r2"] >= cart_r2 - 1e-9
    else:  # linear leaves on CART's partition only add fit
        assert tree.meta["train_r2"] >= cart_r2


def test_progress_reports_every_start_with_rising_fraction_and_cancel_returns_the_best_so_far():
    X, y, _ = planted_depth2(2000, seed=4)
    events = []
    train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=100, random_state=0), on_progress=events.append)
    assert len(events) >= 2 * 20
    assert all(len(e.records) == 3 for e in events)
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert {e.stage for e in events} == {0, 1}
    assert all(e.best_hard_loss <= 0.5 for e in events) and events[-1].best_hard_r2 > 0.8

    calls = []

    def cancel_after_first(progress):
        calls.append(progress)
        return len(calls) >= 2

    start = time.process_time()  # CPU seconds: the same on a busy machine
    tree = train(X, y, GETConfig(depth=6, n_starts=4, n_epochs=100000, random_state=0),
                 on_progress=cancel_after_first)
    assert time.process_time() - start < 30
    assert tree.meta["cancelled"] is True
    assert tree.predict(X).shape == (len(X),)


def test_two_stages_draw_the_papers_soft_then_sharp_alphas():
    """The paper's appendix B: a first alpha from [5, 25], a second from [50, 150], for the range [5, 150]."""
    alphas = alpha_schedule(500, GETConfig(n_alphas=2, alpha_range=(5, 150)), torch.Generator().manual_seed(0)).numpy()
    assert np.all((alphas[:, 0] >= 5) & (alphas[:, 0] <= 25))
    assert np.all((alphas[:, 1] >= 50) & (alphas[:, 1] <= 150))
    assert alphas[:, 0].std() > 3 and alphas[:, 1].std() > 15  # drawn, not fixed
    fixed = alpha_schedule(3, GETConfig(n_alphas=2, fixed_alpha=100.0), torch.Generator().manual_seed(0))
    assert torch.all(fixed == 100.0)


@pytest.mark.parametrize("alpha_range, n_alphas", [((5, 150), 1), ((5, 150), 4), ((50, 60), 3), ((1, 1000), 5)])
def test_stage_alphas_stay_in_range_and_ascend(alpha_range, n_alphas):
    bounds = alpha_stage_bounds(alpha_range, n_alphas)
    assert bounds.shape == (n_alphas, 2)
    assert np.all(np.diff(bounds, axis=0) >= 0)  # later stages are never softer
    config = GETConfig(n_alphas=n_alphas, alpha_range=alpha_range)
    alphas = alpha_schedule(200, config, torch.Generator().manual_seed(1)).numpy()
    assert np.all((alphas >= alpha_range[0]) & (alphas <= alpha_range[1]))
    assert np.all(np.diff(alphas, axis=1) >= 0)
    assert np.all((bounds[:, 0] <= stage_midpoints(alpha_range, n_alphas)) &
                  (stage_midpoints(alpha_range, n_alphas) <= bounds[:, 1]))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown when CUDA is absent")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA"):
        train(np.random.rand(20, 2), np.random.rand(20), GETConfig(device="cuda", n_epochs=1))


def test_torch_path_gives_the_same_quality_as_the_native_kernel(monkeypatch):
    from get_core.engine import native

    X, y, _ = planted_depth2(1500, seed=6)
    native_tree = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=150, random_state=0))
    monkeypatch.setattr(native, "available", lambda *a: False)
    torch_tree = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=150, random_state=0))
    assert torch_tree.meta["train_r2"] == pytest.approx(native_tree.meta["train_r2"], abs=0.01)


def test_the_native_kernel_leaves_the_process_arithmetic_alone():
    from get_core.engine import native

    if native.load() is None:
        pytest.skip("the native kernel could not be built here")
    train(np.random.rand(300, 3), np.random.rand(300), GETConfig(depth=3, n_starts=2, n_epochs=5, random_state=0))
    tiny = np.array([1e-300]) * np.array([1e-20])  # a subnormal result: 0 under flush-to-zero
    assert tiny[0] > 0 and (np.array([1e-30], np.float32) * np.float32(1e-10))[0] > 0


@pytest.mark.parametrize("weight_decay", [0.0, 0.01, 0.5])
def test_the_engines_adam_step_matches_torchs_adamw(weight_decay):
    """The paper's authors train with torch.optim.AdamW; ours must take the same steps, decay included."""
    gen = torch.Generator().manual_seed(0)
    ours = [torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.randn(5, generator=gen, dtype=torch.float64)]
    theirs = [t.clone().requires_grad_() for t in ours]
    adam = _Adam(ours, weight_decay)
    reference = torch.optim.AdamW(theirs, lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay)
    for _ in range(20):
        grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in ours]
        adam.step(ours, grads, lr=0.05)
        for t, g in zip(theirs, grads):
            t.grad = g.clone()
        reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b.detach(), rtol=1e-9, atol=1e-9)


def _spy_on_samples(monkeypatch) -> list[int]:
    """The row counts of every soft-epoch sample drawn (the real ``Problems.sample`` still does the drawing)."""
    sizes: list[int] = []
    real = Problems.sample

    def recorded(self, size, gen):
        sizes.append(size)
        return real(self, size, gen)

    monkeypatch.setattr(Problems, "sample", recorded)
    return sizes


def test_soft_epochs_use_row_samples_only_above_the_threshold_or_when_asked():
    assert soft_rows(None, AUTO_SAMPLE_ABOVE) is None and soft_rows(None, AUTO_SAMPLE_ABOVE + 1) == SAMPLE_ROWS
    assert soft_rows(0, 10 ** 6) is None and soft_rows(500, 500) is None and soft_rows(500, 501) == 500


def test_a_table_below_the_threshold_trains_exactly_as_with_the_full_batch(monkeypatch):
    sizes = _spy_on_samples(monkeypatch)
    X, y, _ = planted_depth2(1500, seed=6)
    default = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=40, random_state=0))
    full = train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=40, random_state=0, batch_rows=0))
    assert sizes == []
    np.testing.assert_array_equal(default.weights, full.weights)
    np.testing.assert_array_equal(default.thresholds, full.thresholds)


def test_sampled_epochs_follow_random_state_and_differ_from_the_full_batch(monkeypatch):
    sizes = _spy_on_samples(monkeypatch)
    X, y, _ = planted_depth2(1500, seed=6)
    fits = [train(X, y, GETConfig(depth=2, n_starts=3, n_epochs=40, random_state=seed, batch_rows=batch))
            for seed, batch in ((0, 200), (0, 200), (1, 200), (0, 0))]
    assert sizes == [200] * (3 * 2 * 40)  # three sampled fits, two stages of 40 epochs each
    np.testing.assert_array_equal(fits[0].weights, fits[1].weights)
    assert not np.array_equal(fits[0].weights, fits[2].weights)
    assert not np.array_equal(fits[0].weights, fits[3].weights)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_with_sampled_epochs_the_leaves_and_the_chosen_tree_come_from_every_row(leaf):
    X, y, _ = planted_depth2(3000, seed=2)
    Xs = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    config = GETConfig(depth=2, leaf=leaf, n_starts=3, n_epochs=30, random_state=0, batch_rows=100)
    problems = Problems.from_arrays([(Xs, y)], torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    params = initial_params(problems, [(Xs, y)], config, 2, gen)
    result = run_stages(problems, params, alpha_schedule(3, config, gen), config, 3, Reporter(None, float(y.var())))
    chunks = problems.chunks(1, 3)
    fit, hard = _hard_evaluate(result.best, problems, chunks, 2, 1, "gcv" if leaf == "linear" else None,
                               leaf == "linear")
    assert result.best_loss.item() == pytest.approx(hard.item(), rel=1e-6)  # its stored loss is its full-data loss
    torch.testing.assert_close(result.best.intercepts, fit.intercepts)  # its leaves are fitted on every row


def test_sampled_epochs_on_many_rows_reach_nearly_the_full_batch_loss(monkeypatch):
    sizes = _spy_on_samples(monkeypatch)
    X, y, _ = planted_depth2(AUTO_SAMPLE_ABOVE + 8000, seed=5)
    config = GETConfig(depth=2, n_starts=2, n_epochs=150, random_state=0)
    sampled = train(X, y, config)  # the default: above the threshold, SAMPLE_ROWS rows per soft epoch
    assert set(sizes) == {SAMPLE_ROWS}
    full = train(X, y, GETConfig(**{**config.__dict__, "batch_rows": 0}))
    cart_r2 = r2_score(y, DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y).predict(X))
    assert full.meta["train_r2"] > cart_r2 + 0.05  # the oblique splits are found: there is something to lose
    assert sampled.meta["train_r2"] >= full.meta["train_r2"] - 0.005


@pytest.mark.parametrize("one_hot", [False, True])
def test_each_problems_sample_holds_its_own_real_rows_with_their_targets(one_hot):
    rng = np.random.default_rng(4)
    sizes = (300, 170)  # the second problem is padded: its draws must stay among its 170 real rows
    subsets = []
    for n in sizes:
        X = rng.random((n, 3))
        target = np.eye(3)[rng.integers(0, 3, n)] if one_hot else rng.random(n)
        subsets.append((X, target))
    problems = Problems.from_arrays(subsets, torch.device("cpu"))
    sample = problems.sample(500, torch.Generator().manual_seed(0))
    assert sample.Xa.shape == (2, 500, 4) and sample.y.shape == ((2, 500, 3) if one_hot else (2, 500))
    torch.testing.assert_close(sample.Xat, sample.Xa.transpose(1, 2))
    for b, (X, target) in enumerate(subsets):
        real = {tuple(np.float32(x).tolist()): np.float32(t).tolist() for x, t in zip(X, target)}
        for x, t in zip(sample.Xa[b, :, :3].numpy(), sample.y[b].numpy()):
            assert real[tuple(x.tolist())] == t.tolist()  # a real row of its own problem, with its own target


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_row_samples_are_drawn_on_the_cuda_device():
    X, y, _ = planted_depth2(2000, seed=6)
    problems = Problems.from_arrays([(X, y)], torch.device("cuda"))
    sample = problems.sample(300, torch.Generator(device="cuda").manual_seed(0))
    assert sample.Xa.device.type == "cuda" and sample.y.shape == (1, 300)
    tree = train(X, y, GETConfig(depth=2, n_starts=2, n_epochs=20, random_state=0, batch_rows=300, device="auto"))
    assert tree.meta["device"].startswith("cuda") and tree.meta["train_r2"] > 0.5
