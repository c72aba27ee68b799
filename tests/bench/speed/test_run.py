"""python -m bench.speed: bad options refused in one line, and --report-only rewriting only the speed section of the
doc from a stored result."""

from __future__ import annotations

import json
import shutil

import pytest

from bench.common import RESULTS_DIR
from bench.speed import reference
from bench.speed import run as speed


@pytest.fixture(autouse=True)
def no_reference_venv(monkeypatch):
    """Nothing here may build the authors' virtualenv (a pip install), even when a refusal regresses."""
    monkeypatch.setattr(reference, "ensure_reference_venv", lambda *a: pytest.fail("the reference venv was built"))


@pytest.mark.parametrize("argv, message", [
    (["--depths", "3"], "argument --depths: invalid choice: 3"),
    (["--repeats", "0"], "argument --repeats: expected an integer >= 1"),
    (["--p", "3"], "argument --p: expected an integer >= 5"),
])
def test_out_of_range_options_are_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        speed.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_report_only_without_a_result_file_says_so(tmp_path, capsys):
    doc = tmp_path / "B.md"
    with pytest.raises(SystemExit):
        speed.main(["--report-only", "--out", str(tmp_path / "none.json"), "--doc", str(doc)])
    assert "--out" in capsys.readouterr().err and not doc.exists()


def test_report_only_rewrites_only_the_speed_section_from_the_stored_result(tmp_path):
    result = tmp_path / "speed.json"
    shutil.copy(RESULTS_DIR / "speed.json", result)
    doc = tmp_path / "B.md"
    doc.write_text("# Benchmarks\n\nbefore\n\n<!-- speed:start -->\nold figures\n<!-- speed:end -->\n\nafter\n")
    speed.main(["--report-only", "--out", str(result), "--doc", str(doc)])
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nbefore\n\n<!-- speed:start -->\n## Training speed")
    assert text.endswith("<!-- speed:end -->\n\nafter\n") and "old figures" not in text
    repeats = json.loads(result.read_text())["repeats"]
    assert f"Command: `python -m bench.speed --repeats {repeats}" in text


def test_out_is_never_a_file_that_this_command_did_not_write(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text("# Benchmarks\n")
    with pytest.raises(SystemExit, match="exists and is not a summary JSON written by python -m bench.speed"):
        speed.main(["--out", str(doc), "--doc", str(tmp_path / "other.md")])
    assert doc.read_text() == "# Benchmarks\n"
