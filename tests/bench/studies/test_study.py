"""bench.studies.study: the studies' shared loop fits each cell once, resumes, and refuses before its first fit a
cell file it cannot write or must not append to, and a table it cannot use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.studies.study import run_study, study_key, study_parser
from tests.bench.shared import tables


def study_args(tmp_path: Path, *extra: str):
    return study_parser("A study.", "bench.studies.x", tmp_path / "default.jsonl").parse_args(
        ["--data-dir", str(tables(tmp_path, "one")), "--out", str(tmp_path / "s.jsonl"), *extra])


def fake_measure(calls: list):
    def measure(args, budget, name, seed, split):
        key = f"{name}|{seed}"
        yield key, lambda: calls.append(key) or {"value": 1.0}, lambda r: r["key"]
    return measure


def test_a_study_fits_a_repeated_seed_once_and_a_rerun_fits_nothing(tmp_path):
    calls = []
    run_study(study_args(tmp_path, "--seeds", "0", "0", "1"), str, fake_measure(calls))
    run_study(study_args(tmp_path, "--seeds", "0", "1"), str, fake_measure(calls))
    assert calls == ["one|0", "one|1"] and len((tmp_path / "s.jsonl").read_text().splitlines()) == 2


def test_the_report_prints_the_finished_cells(tmp_path, capsys):
    run_study(study_args(tmp_path), str, fake_measure([]))
    capsys.readouterr()
    run_study(study_args(tmp_path, "--report"), lambda records: f"{len(records)} cells", fake_measure([]))
    assert capsys.readouterr().out == "1 cells\n"


def test_a_study_key_ends_with_the_budget_engine_and_row_cap(tmp_path):
    from get_core import ENGINE_VERSION

    assert study_key(study_args(tmp_path), "d", 0, 4) == f"d|0|4|fast|v{ENGINE_VERSION}"
    assert study_key(study_args(tmp_path, "--max-rows", "30"), "d", 0).endswith(f"|v{ENGINE_VERSION}|rows30")


def test_a_study_refuses_an_out_it_cannot_write_and_a_report_of_nothing(tmp_path):
    calls = []
    (tmp_path / "a-file").write_text("")
    for out, message in ((tmp_path, "is a directory"), (tmp_path / "a-file" / "s.jsonl", "cannot write there")):
        with pytest.raises(SystemExit, match=message):
            args = study_args(tmp_path)
            args.out = out
            run_study(args, str, fake_measure(calls))
    assert calls == []
    with pytest.raises(SystemExit, match="no finished cells in it \\(no such file\\)"):
        run_study(study_args(tmp_path, "--report"), str, fake_measure(calls))


def test_a_study_checks_every_table_before_its_first_fit(tmp_path):
    calls = []
    data = tables(tmp_path, "a-good")
    (data / "z-bad.csv").write_text("a,b,target\n" + "1,x,3\n" * 30)
    with pytest.raises(SystemExit, match="z-bad.csv: column 'b', row 1"):
        run_study(study_args(tmp_path), str, fake_measure(calls))
    assert calls == []


def test_a_study_never_appends_cells_to_a_file_that_is_not_a_cells_file(tmp_path):
    calls = []
    summary = tmp_path / "paper-fast.json"
    summary.write_text(json.dumps({"settings": {}, "records": []}, indent=1))
    for path in (summary, tables(tmp_path, "one") / "one.csv"):
        before = path.read_bytes()
        args = study_args(tmp_path)
        args.out = path
        with pytest.raises(SystemExit, match="exists and is not a JSON-lines file of cells"):
            run_study(args, str, fake_measure(calls))
        assert path.read_bytes() == before and calls == []
    cells = tmp_path / "s.jsonl"
    cells.write_bytes(b'{"key": "x|0", "value": 1}\n{"key": "torn')  # a cells file with a torn last line
    run_study(study_args(tmp_path), str, fake_measure(calls))
    assert calls == ["one|0"]
