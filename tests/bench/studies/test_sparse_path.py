"""The accuracy-readability path study: one row per dataset at its dense cell's depth, every k of the path,
resumed on a rerun, datasets without a dense cell skipped in words."""

from __future__ import annotations

import json

import pytest

from bench.paper import run as paper
from bench.studies import sparse_path
from get_core.config import SPLIT_FEATURE_PATH
from tests.bench.shared import tables


def test_the_path_runs_at_the_dense_depth_reports_every_k_and_resumes(tmp_path, capsys):
    data = tables(tmp_path, "one", "two")  # 2 features: k = 1 and dense
    out = tmp_path / "paper" / "o.json"
    paper.main(["--data-dir", str(data), "--datasets", "one", "--methods", "get-linear", "--budget", "tiny",
                "--no-doc", "--out", str(out)])
    cells = next(out.parent.glob("o.cells-*.jsonl"))
    depth = json.loads(cells.read_text().splitlines()[0])["depth"]
    argv = ["--data-dir", str(data), "--budget", "tiny", "--cells", str(cells), "--out", str(tmp_path / "p.jsonl")]
    sparse_path.main(argv)
    printed = capsys.readouterr().out
    assert "two seed 0: no get-linear cell" in printed and f"one seed 0 depth {depth}: chosen" in printed
    (record,) = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert record["depth"] == depth
    assert [p["max_split_features"] for p in record["path"]] == [1, None]  # k >= p is the dense tree, once
    assert all(p["depth"] == depth and p["widest_split"] <= (p["max_split_features"] or 2) for p in record["path"])
    sparse_path.main(argv)
    assert "chosen" not in capsys.readouterr().out  # finished cells are not fitted again
    sparse_path.main([*argv, "--report"])
    table = capsys.readouterr().out
    assert len(SPLIT_FEATURE_PATH) == 5 and f"| one | 0 | {depth} | " in table and " / " in table


def test_the_path_needs_the_dense_cells(capsys):
    with pytest.raises(SystemExit):
        sparse_path.parse_args([])
    assert "--cells is required" in capsys.readouterr().err
