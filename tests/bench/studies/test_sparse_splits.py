"""python -m bench.studies.sparse_splits: CART, the dense tree and each k on a tiny slice, resume, and the report."""

from __future__ import annotations

import json

import pytest

from bench.studies import sparse_splits
from tests.bench.shared import needs_datasets


@needs_datasets("airfoil_self_noise")
@pytest.mark.timeout(120)
def test_a_tiny_run_fits_every_method_keeps_each_k_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "sparse.jsonl"
    args = ["--datasets", "airfoil_self_noise", "--max-rows", "200", "--budget", "tiny", "--ks", "1", "2",
            "--depth", "2", "--out", str(out)]
    sparse_splits.main(args)
    records = {r["method"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(records) == ["1", "2", "cart", "dense"]
    assert records["1"]["widest"] == 1 and records["2"]["widest"] <= 2 and records["dense"]["widest"] <= 5
    assert all(-1 < r["train"] <= 1 for r in records.values())
    sparse_splits.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 4
    capsys.readouterr()
    sparse_splits.main(["--report", "--out", str(out)])
    assert "| airfoil_self_noise | linear |" in capsys.readouterr().out
