"""python -m bench.speed.soft_epoch: the counters see every soft epoch's parts, and the engine is left as it was."""

from __future__ import annotations

import pytest

from bench.speed import soft_epoch
from bench.studies.large_data import planted
from get_core.config import GETConfig
from get_core.engine import native, optimize
from get_core.engine.train import train


@pytest.mark.timeout(120)
def test_a_small_sampled_fit_counts_each_epochs_parts_and_restores_the_engine(capsys):
    before = (optimize.Problems.sample, optimize._soft_pass, optimize._Adam.step, optimize._Stages._checkpoint,
              native.load)
    soft_epoch.main(["--rows", "9000", "--epochs", "3", "--starts", "2", "--repeats", "2"])
    out = capsys.readouterr().out
    assert "(6 soft epochs), median of 2 fits" in out and "digests equal" in out  # 2 stages x 3 epochs, same tree
    for part in ("row sample", "kernel call", "soft pass around the kernel", "adam step", "checkpoints"):
        assert f"  {part}" in out
    assert (optimize.Problems.sample, optimize._soft_pass, optimize._Adam.step, optimize._Stages._checkpoint,
            native.load) == before


def test_the_kernel_call_is_counted_inside_the_soft_pass():
    X, y = planted(9000, 1)
    counters = soft_epoch.Counters()
    with soft_epoch.instrumented(counters):
        train(X, y, GETConfig(depth=3, n_starts=2, n_epochs=4, random_state=0, batch_rows=1000, device="cpu"))
    assert counters.calls["soft pass"] == 8 and counters.calls["row sample"] == 8
    if native.load() is not None:
        assert counters.calls["kernel call"] == 8
        assert 0 < counters.seconds["kernel call"] <= counters.seconds["soft pass"]
