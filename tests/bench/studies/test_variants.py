"""python -m bench.studies.variants: both sides of a change on a tiny slice, the outlier, resume, and the report."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import r2_score

from bench.common import Budget
from bench.studies import variants
from get_core.config import GETConfig
from get_core.engine.train import train
from tests.bench.shared import needs_datasets


def test_the_weight_decay_side_trains_with_the_authors_decay_and_the_other_side_without():
    rng = np.random.default_rng(0)
    X = rng.random((160, 3))
    y = np.where(X[:, 0] + X[:, 1] > 1, 1.0, 0.0) + 0.1 * rng.standard_normal(160)
    split = (X[:120], y[:120], X[120:], y[120:])
    record = variants.fit_both(split, 2, 0, Budget("small", 2, 30), "weight-decay", None)
    config = GETConfig(depth=2, n_starts=2, n_epochs=30, random_state=0)
    for side, decay in (("a", 0.0), ("b", variants.AUTHORS_WEIGHT_DECAY)):
        tree = train(X[:120], y[:120], replace(config, weight_decay=decay))
        assert record[f"train_{side}"] == r2_score(y[:120], tree.predict(X[:120]))
        assert record[f"test_{side}"] == r2_score(y[120:], tree.predict(X[120:]))


def test_the_outlier_sits_at_min_plus_factor_times_range_in_one_row_only():
    X = np.c_[np.arange(10.0), np.arange(10.0)]
    out = variants.with_outlier(X, 10.0)
    assert out[0, 0] == 90.0 and (out[1:] == X[1:]).all() and (out[0, 1:] == X[0, 1:]).all() and X[0, 0] == 0


@needs_datasets("airfoil_self_noise")
@pytest.mark.timeout(120)
def test_a_tiny_run_fits_both_sides_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "variants.jsonl"
    args = ["--datasets", "airfoil_self_noise", "--max-rows", "200", "--budget", "tiny", "--depths", "2",
            "--outlier", "10", "--out", str(out)]
    variants.main(args)
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["change"] == "robust" and record["outlier"] == 10 and record["depth"] == 2
    assert all(-1 < record[k] <= 1 for k in ("test_a", "test_b", "train_a", "train_b"))
    variants.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 1
    capsys.readouterr()
    variants.main(["--report", "--out", str(out)])
    assert "| robust | 10.0 | airfoil_self_noise | 0 | 2 |" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_an_outlier_that_is_not_a_finite_number_is_refused(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        variants.parse_args(["--outlier", value])
    assert exit_.value.code == 2
    assert f"argument --outlier: expected a finite number, got '{value}'" in capsys.readouterr().err
