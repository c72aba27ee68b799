"""python -m bench.studies.refit_start: both refits of the depth search on a tiny slice, resume, and the report."""

from __future__ import annotations

import json

import pytest

from bench.studies import refit_start
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
