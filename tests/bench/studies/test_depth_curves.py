"""python -m bench.studies.depth_curves: the replay of the depth search's early stop, and a tiny end-to-end run that
resumes."""

from __future__ import annotations

import json

import pytest

from bench.studies import depth_curves
from tests.bench.shared import needs_datasets


def test_choose_replays_the_early_stop_of_getregressorcv():
    val = {1: 60.0, 2: 70.0, 3: 65.0, 4: 66.0, 5: 72.0, 6: 71.0}
    assert depth_curves.choose(val, 1) == 2
    assert depth_curves.choose(val, 2) == 2  # stops at the two-depth dip
    assert depth_curves.choose(val, 3) == 5
    assert depth_curves.choose(val, None) == 5
    assert depth_curves.choose({1: 50.0, 2: 50.005}, None) == 1  # within tol: the shallower tree


@needs_datasets("airfoil_self_noise")
@pytest.mark.timeout(120)
def test_a_tiny_run_writes_one_cell_per_rule_and_depth_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "curves.jsonl"
    args = ["--datasets", "airfoil_self_noise", "--max-rows", "200", "--budget", "tiny", "--max-depth", "2",
            "--out", str(out)]
    depth_curves.main(args)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["rule"], r["depth"]) for r in records) == [("gcv", 1), ("gcv", 2), ("ols", 1), ("ols", 2)]
    assert all(-100 < r["test"] <= 100 and r["val"] <= 100 for r in records)
    depth_curves.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 4
    capsys.readouterr()
    depth_curves.main(["--report", "--out", str(out)])
    table = capsys.readouterr().out
    assert "| linear / gcv / tiny | airfoil_self_noise | 0 |" in table
    assert "**linear / ols / tiny: average** | 1 datasets" in table


@pytest.mark.parametrize("value", ["13", "0"])
def test_a_max_depth_outside_1_to_12_is_refused(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        depth_curves.parse_args(["--max-depth", value])
    assert exit_.value.code == 2 and "argument --max-depth: expected an integer from 1 to 12" in capsys.readouterr().err
