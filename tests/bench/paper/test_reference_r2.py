"""python -m bench.paper.reference_r2: the authors'-code comparison table joins the reference fits with our --tables
cells by dataset, seed and depth; bad options and files are refused before the reference virtualenv is built."""

import pytest

from bench.paper import reference_r2
from bench.paper.reference_r2 import report
from tests.bench.shared import tables


def test_report_puts_the_authors_fit_beside_ours():
    reference = [{"dataset": "d", "seed": 0, "depth": 2, "polish": False, "starts": 10, "epochs": 3000,
                  "train_r2": 50.0},
                 {"dataset": "d", "seed": 0, "depth": 2, "polish": True, "starts": 10, "epochs": 3000,
                  "train_r2": 52.5}]
    ours = [{"dataset": "d", "seed": 0, "method": m, "depth": 2, "train_r2": r2}
            for m, r2 in (("cart", 40.0), ("get", 51.0), ("get-polish", 53.0), ("get-alpha1", 45.0))]
    ours.append({"dataset": "d", "seed": 0, "method": "get", "depth": 4, "train_r2": 60.0})  # no reference: no row
    lines = report(reference, ours).splitlines()
    assert lines[2] == "| d | 0 | 2 | 40.00 | 50.00 | 51.00 | 52.50 | 53.00 |"
    assert not any("| 4 |" in line for line in lines)
    assert lines[-1].endswith("10 x 3000")


def test_report_marks_missing_fits():
    reference = [{"dataset": "d", "seed": 1, "depth": 4, "polish": False, "starts": 2, "epochs": 100,
                  "train_r2": 70.0}]
    assert "| d | 1 | 4 | – | 70.00 | – | – | – |" in report(reference, [])


# ---------------------------------------------------------------- the command line on bad input
@pytest.fixture(autouse=True)
def no_reference_venv(monkeypatch):
    """Nothing here may build the authors' virtualenv (a pip install), even when a refusal regresses."""
    monkeypatch.setattr(reference_r2, "ensure_reference_venv", lambda: pytest.fail("the reference venv was built"))


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "argument --seed: expected an integer from 0 to 4294967295"),
    (["--depths", "0"], "argument --depths: expected an integer >= 1"),
    (["--epochs", "20"], "--epochs must be >= 21"),
])
def test_out_of_range_options_are_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        reference_r2.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_reference_r2_checks_its_files_before_building_the_reference_venv(tmp_path, capsys):
    data = tables(tmp_path, "one")
    with pytest.raises(SystemExit):
        reference_r2.main(["--report", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert "--report" in err and "no such file" in err
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SystemExit, match="--out .*cannot write there"):
        reference_r2.main(["--data-dir", str(data), "--out", str(tmp_path / "a-file" / "r.jsonl")])


def test_reference_r2_fits_a_repeated_depth_once(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(reference_r2, "fit_reference",
                        lambda X, y, params, timeout: calls.append(params["depth"]) or {"train_r2": 1.0,
                                                                                       "fit_seconds": 0.0})
    reference_r2.main(["--data-dir", str(tables(tmp_path, "one")), "--depths", "2", "2", "--out",
                       str(tmp_path / "r.jsonl")])
    assert calls == [2]
