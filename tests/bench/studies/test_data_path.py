"""bench/data_path.py: measures both steps on a small table and writes its section without touching the rest."""

import re

import pytest

from bench.studies import data_path


def test_a_small_run_reports_both_steps_with_their_ratios(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nkept\n")
    monkeypatch.setattr(data_path, "DOC", doc)
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
