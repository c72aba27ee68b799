"""python -m bench.studies.refit_start: both refits of the depth search on a tiny slice, resume, and the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import r2_score

from bench.common import Budget
from bench.studies import refit_start
from get_core.estimator import GETRegressorCV
from tests.bench.shared import needs_datasets


@needs_datasets("airfoil_self_noise")
@pytest.mark.timeout(120)
def test_a_tiny_run_refits_both_ways_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "refit.jsonl"
    args = ["--datasets", "airfoil_self_noise", "--max-rows", "200", "--budget", "tiny", "--out", str(out)]
    refit_start.main(args)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["leaf"] for r in records) == ["constant", "linear"]
    for r in records:
        assert 1 <= r["depth"] <= 12 and r["key"].startswith(f"airfoil_self_noise|0|{r['leaf']}|tiny|")
        assert all(-1 < r[k] <= 1 for k in ("test_a", "test_b", "train_a", "train_b", "test_search", "val"))
    refit_start.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 2
    capsys.readouterr()
    refit_start.main(["--report", "--out", str(out)])
    text = capsys.readouterr().out
    assert "| linear | airfoil_self_noise | 0 |" in text and "* constant leaves, 1 (dataset, seed) pairs" in text


def test_both_refits_are_exactly_what_the_two_settings_of_refit_from_search_fit():
    rng = np.random.default_rng(0)
    X = rng.random((160, 3))
    y = np.where(X[:, 0] + X[:, 1] > 1, 1.0, 0.0) + 0.3 * X[:, 2] + 0.1 * rng.standard_normal(160)
    X_tr, y_tr, X_te, y_te = X[:120], y[:120], X[120:], y[120:]
    record = refit_start.refit_both_ways(X_tr, y_tr, X_te, y_te, "constant", 0, Budget("small", 2, 15))
    settings = dict(leaf="constant", n_starts=2, n_epochs=15, random_state=0)
    for side, warm in (("a", False), ("b", True)):
        model = GETRegressorCV(**settings, refit_from_search=warm).fit(X_tr, y_tr)
        assert record[f"test_{side}"] == r2_score(y_te, model.predict(X_te))
        assert record[f"train_{side}"] == model.tree_.meta["train_r2"]
    assert record["depth"] == model.best_depth_ and record["val"] == model.best_validation_r2_
