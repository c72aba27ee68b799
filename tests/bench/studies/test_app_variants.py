"""python -m bench.studies.app_variants: the bench clock and leaf rule restore what they change, a tiny paired run
resumes, and the report pairs each variant with the base of its own batch."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from bench.studies import app_variants
from get_core import budget
from get_core.config import APP_DEFAULTS
from get_core.engine import leaves
from get_core.estimator import GETRegressor
from get_core.metrics import scores


def test_the_cpu_clock_runs_one_thread_without_the_stretch_floor_and_restores_both():
    stretch, threads = budget.STRETCH, torch.get_num_threads()
    with app_variants.cpu_clock(True):
        assert budget.STRETCH > 1e6 and torch.get_num_threads() == 1
    assert (budget.STRETCH, torch.get_num_threads()) == (stretch, threads)
    with app_variants.cpu_clock(False):
        assert (budget.STRETCH, torch.get_num_threads()) == (stretch, threads)


def test_a_leaf_rule_holds_for_its_block_only():
    engine = leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER
    with app_variants.leaf_rule(30, 4):
        assert (leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER) == (30, 4)
    with app_variants.leaf_rule(None, None):
        assert (leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER) == engine
    assert (leaves.MIN_LEAF_ROWS, leaves.SLOPE_ROWS_PER_PARAMETER) == engine


@pytest.mark.timeout(180)
def test_a_tiny_run_pairs_its_variants_resumes_and_reports(tmp_path, capsys):
    tiny_table(tmp_path)
    out = tmp_path / "cells.jsonl"
    args = ["--data-dir", str(tmp_path), "--seeds", "0", "--variants", "slope_3", "--budget", "0.5", "--out", str(out)]
    app_variants.main(args)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["variant"] for r in records) == ["base", "slope_3"]
    assert len({r["batch"] for r in records}) == 1 and all(r["cpu_clock"] for r in records)
    base = next(r for r in records if r["variant"] == "base")
    assert base["leaf_rules"]["engine"] == pytest.approx(base["test_r2"], abs=1e-9)  # the refit repeats the fit's rule
    assert set(base["leaf_rules"]) == set(app_variants.LEAF_RULES)
    assert set(base["clamps"]) == set(app_variants.CLAMPS)
    app_variants.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 2
    capsys.readouterr()
    app_variants.main(["--report", "--out", str(out), "--forest", str(tmp_path / "none.jsonl")])
    text = capsys.readouterr().out
    assert "| tiny | 0 |" in text and "| slope_3 |" in text and "Leaf rules on the fitted trees' own splits" in text
    assert "| slope_3 | 1 |" in text and "Robust clamps of the base trees' linear leaves" in text


@pytest.mark.timeout(180)
def test_a_longer_budget_and_the_app_search_are_variants_of_the_same_cell(tmp_path):
    tiny_table(tmp_path)
    out = tmp_path / "cells.jsonl"
    app_variants.main(["--data-dir", str(tmp_path), "--seeds", "1", "--variants", "budget_x2", "cv", "--budget",
                       "0.4", "--out", str(out)])
    records = {r["variant"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["base"]["time_budget"] == 0.4 and records["budget_x2"]["time_budget"] == 0.8
    assert records["cv"]["time_budget"] == 0.4 and 1 <= records["cv"]["chosen_depth"] <= APP_DEFAULTS.depth
    assert "chosen_depth" not in records["base"]


def test_a_robust_clamp_only_narrows_the_sloped_leaves_of_a_copy(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.random((300, 2))
    y = 3 * X[:, 0] + 0.1 * rng.standard_normal(300)
    y[0] = 40.0  # one extreme target
    tree = GETRegressor(depth=1, leaf="linear", time_budget=0.3, random_state=0).fit(X[:200], y[:200]).tree_
    lower, upper = tree.leaf_lower.copy(), tree.leaf_upper.copy()
    monkeypatch.setattr(app_variants, "CLAMPS", {"open": 1e12, "shut": 0.0})
    r2 = app_variants.clamp_rules(tree, X[:200], y[:200], X[200:], y[200:])
    assert r2["open"] == pytest.approx(scores(y[200:], tree.predict(X[200:]))[0], abs=1e-12)
    assert r2["shut"] != r2["open"]  # [Q1, Q3] clamps some test rows
    np.testing.assert_array_equal(tree.leaf_lower, lower)
    np.testing.assert_array_equal(tree.leaf_upper, upper)


def tiny_table(folder) -> None:
    """A 240-row table of three features and a smooth target, as ``tiny.csv`` in ``folder``."""
    rng = np.random.default_rng(0)
    X = rng.random((240, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=2 * X[:, 0] + X[:, 1] * X[:, 2]
                                                             + 0.05 * rng.standard_normal(240))
    frame.to_csv(folder / "tiny.csv", index=False)
