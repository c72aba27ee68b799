"""python -m bench.speed.counterfactual: a small run fits a tree per table and depth, types every answer back and
counts what holds; the speed cells check every answer's constraints; a name that matches no table is refused."""

import re

import pandas as pd
import pytest

from bench.speed import counterfactual


@pytest.fixture
def data_dir(tmp_path):
    """One regression table and one class table with a categorical column, as the shared ones are laid out."""
    rows = 120
    frame = pd.DataFrame({"a": [i % 17 * 1.5 for i in range(rows)], "b": [(i * 7) % 23 for i in range(rows)]})
    (tmp_path / "classification").mkdir()
    frame.assign(target=frame["a"] * 2 + frame["b"]).to_csv(tmp_path / "lines.csv", index=False)
    frame.assign(colour=["red", "blue", "green"] * (rows // 3),
                 target=["yes" if a + b > 20 else "no" for a, b in zip(frame["a"], frame["b"])]
                 ).to_csv(tmp_path / "classification" / "votes.csv", index=False)
    return tmp_path


def test_a_small_run_types_every_answer_back_and_counts_what_holds(data_dir, capsys):
    counterfactual.main(["--part", "typed", "--data-dir", str(data_dir), "--depths", "2", "--rows", "4",
                         "--train-rows", "100", "--epochs", "2"])
    out = capsys.readouterr().out
    rows = re.findall(r"^\| (lines|votes) \| (regression|classification) \| 2 \| (\d) / 4 \| (\d+) \| (\d+) \| 0 \|",
                      out, re.M)
    assert [r[:2] for r in rows] == [("lines", "regression"), ("votes", "classification")]
    assert all(shown == held for *_, shown, held in rows)
    assert "- answers that hold typed back:" in out and "NOT met" not in out


def test_a_speed_cell_times_three_answers_under_every_constraint():
    cell = counterfactual.speed_cell(depth=3, p=32, queries=2)
    assert cell["queries"] == 2 and 1 <= cell["answers"] <= 3
    assert "| 3 | 32 | 2 |" in counterfactual.speed_table([cell])


def test_a_name_that_matches_no_table_is_refused(data_dir):
    with pytest.raises(SystemExit, match="--datasets nothing: no table in"):
        counterfactual.main(["--part", "typed", "--data-dir", str(data_dir), "--datasets", "nothing"])
