"""python -m bench.studies.data_path: measures both steps on a small table and writes its section without touching
the rest; a table the app would refuse is refused in one line."""

import re

import pytest

from bench.studies import data_path


def test_a_small_run_reports_both_steps_with_their_ratios(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nkept\n")
    monkeypatch.setattr(data_path, "DEFAULT_DOC", doc)
    data_path.main(["--rows", "300", "--numeric", "3", "--text", "2", "--repeats", "2", "--doc"])
    text = doc.read_text()
    assert "kept" in text and "<!-- data-path:start -->" in text
    rows = re.findall(r"\| (read the upload|encode for a run).*\| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+)x \|", text)
    assert [r[0] for r in rows] == ["read the upload", "encode for a run"]
    assert "300 rows, 3 numeric and 2 text columns" in capsys.readouterr().out


def test_a_repeat_count_under_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        data_path.main(["--repeats", "0"])
    assert "--repeats must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--numeric", "-1"], "--numeric must be at least 0"),
    (["--numeric", "0", "--text", "0"], "--numeric plus --text must be at least 1"),
])
def test_a_table_without_features_is_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        data_path.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_apps_refusal_of_the_generated_table_is_reported(monkeypatch, capsys):
    monkeypatch.setattr(data_path.reading.limits, "MAX_ROWS", 30)
    with pytest.raises(SystemExit) as exit_:
        data_path.main(["--rows", "50", "--numeric", "1", "--text", "0", "--repeats", "1"])
    assert exit_.value.code == 2 and "has more than 30 rows" in capsys.readouterr().err
