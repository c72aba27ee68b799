"""The bench command lines on bad input: one line naming what to fix, never a traceback, and nothing stored lost.

Everything here runs on 40-row tables made in tmp_path (CART cells, tiny budgets), so no shared dataset is needed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.paper import reference_r2, sweep
from bench.paper import run as paper
from bench.speed import run as speed
from bench.studies import data_path, depth_curves, variants


@pytest.fixture(autouse=True)
def no_reference_venv(monkeypatch):
    """Nothing here may build the authors' virtualenv (a pip install), even when a refusal regresses."""
    monkeypatch.setattr(reference_r2, "ensure_reference_venv", lambda: pytest.fail("the reference venv was built"))


def tables(tmp_path: Path, *names: str) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for name in names:
        pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "target"]).to_csv(data / f"{name}.csv", index=False)
    return data


def run_paper(tmp_path: Path, *args: str) -> dict:
    return paper.main(["--data-dir", str(tables(tmp_path, "one", "two")), "--methods", "cart", "--budget", "tiny",
                       "--no-doc", "--out", str(tmp_path / "out" / "o.json"), *args])


# ---------------------------------------------------------------- the data directory and its files
@pytest.mark.parametrize("make, message", [
    (lambda d: d / "nowhere", "--data-dir .*nowhere: no such directory"),
    (lambda d: d, "--data-dir .*: no .csv file in it"),
])
def test_a_data_dir_without_tables_is_refused_instead_of_writing_an_empty_report(tmp_path, make, message):
    with pytest.raises(SystemExit, match=message):
        paper.main(["--data-dir", str(make(tmp_path)), "--methods", "cart", "--no-doc",
                    "--out", str(tmp_path / "o.json")])
    assert not (tmp_path / "o.json").exists()


def test_a_folder_named_like_a_csv_is_not_a_dataset(tmp_path):
    data = tables(tmp_path, "one")
    (data / "folder.csv").mkdir()
    assert [p.name for p in sweep.find_datasets(data)] == ["one.csv"]


@pytest.mark.parametrize("content, message", [
    (b"", "No columns to parse"),
    (b"a,b,target\n" + b"1,2,3\n" * 30 + b"1,2,3,4\n", "Expected 3 fields in line 32, saw 4"),
    ("caf\xe9,b,target\n".encode("latin-1") + b"1,2,3\n" * 30, "can't decode byte 0xe9"),
])
def test_a_file_that_is_not_a_readable_csv_is_refused_with_its_name(tmp_path, content, message):
    (tmp_path / "broken.csv").write_bytes(content)
    with pytest.raises(SystemExit, match=f"broken.csv: cannot be read as a CSV table \\(.*{message}"):
        sweep.load_dataset(tmp_path / "broken.csv")


def test_an_infinite_value_is_shown_as_the_number_not_a_numpy_repr(tmp_path):
    (tmp_path / "big.csv").write_text("a,b,target\n" + "1,2,3\n" * 30 + "1e400,2,3\n")
    with pytest.raises(SystemExit) as exit_:
        sweep.load_dataset(tmp_path / "big.csv")
    assert "column 'a', row 31: the value (inf) is infinite" in str(exit_.value)


# ---------------------------------------------------------------- paper.py options
def test_repeated_seeds_methods_and_depths_are_fitted_and_counted_once(tmp_path):
    args = paper.parse_args(["--seeds", "1", "0", "1", "--methods", "cart", "rf", "cart"])
    assert args.seeds == [1, 0] and args.methods == ["cart", "rf"]
    assert paper.parse_args(["--tables", "--depths", "4", "2", "4"]).depths == [4, 2]
    result = run_paper(tmp_path, "--seeds", "0", "0")
    assert result["run"]["cells_fitted"] == 2 and len(result["records"]) == 2
    assert len(Path(result["run"]["cells_file"]).read_text().splitlines()) == 2


@pytest.mark.parametrize("argv, message", [
    (["--depths", "2"], "--depths applies to --tables only"),
    (["--tables", "--no-polish-in-cv"], "--polish-in-cv and --no-polish-in-cv apply to the test-R2 sweep"),
    (["--tables", "--methods", "rf", "get"], r"unknown method\(s\) rf \(rf: test-R2 method\(s\), not for --tables\)"),
    (["--methods", "get-alpha1"], "get-alpha1: --tables method\\(s\\): add --tables"),
])
def test_option_combinations_that_do_nothing_or_cannot_run_are_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        paper.parse_args(argv)
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_report_only_with_no_finished_cells_leaves_the_json_and_the_markdown_alone(tmp_path):
    out, doc = tmp_path / "out" / "o.json", tmp_path / "B.md"
    out.parent.mkdir()
    out.write_text("{\"settings\": {}, \"earlier\": 1}")
    doc.write_text("<!-- paper-table:start -->\nearlier table\n<!-- paper-table:end -->\n")
    with pytest.raises(SystemExit, match="no finished cells for these settings in .*wrote nothing"):
        paper.main(["--data-dir", str(tables(tmp_path, "one")), "--methods", "cart", "--budget", "tiny",
                    "--report-only", "--out", str(out), "--doc", str(doc)])
    assert out.read_text() == "{\"settings\": {}, \"earlier\": 1}" and "earlier table" in doc.read_text()


@pytest.mark.parametrize("target, message", [
    (lambda t: t / "folder", "--out .*folder is a directory"),
    (lambda t: t / "a-file" / "o.json", "--out .*a-file/o.json: cannot write there"),
])
def test_an_out_that_cannot_be_written_stops_the_run_before_any_cell(tmp_path, monkeypatch, target, message):
    (tmp_path / "folder").mkdir()
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(sweep, "run_cell", lambda *a: pytest.fail("a cell ran"))
    with pytest.raises(SystemExit, match=message):
        paper.main(["--data-dir", str(tables(tmp_path, "one")), "--methods", "cart", "--budget", "tiny", "--no-doc",
                    "--out", str(target(tmp_path))])


def test_a_doc_that_is_a_directory_stops_the_run_before_any_cell(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "run_cell", lambda *a: pytest.fail("a cell ran"))
    with pytest.raises(SystemExit, match="--doc .* is a directory"):
        paper.main(["--data-dir", str(tables(tmp_path, "one")), "--methods", "cart", "--budget", "tiny",
                    "--doc", str(tmp_path), "--out", str(tmp_path / "o.json")])


def test_garbage_lines_in_the_cell_file_neither_stop_the_run_nor_undo_finished_cells(tmp_path):
    first = run_paper(tmp_path)
    cells = Path(first["run"]["cells_file"])
    good = cells.read_bytes()
    key = first["records"][0]["key"]
    cells.write_bytes(good + b"\x80\x81 not text\n[1, 2]\nnull\n{\"key\": 5}\n" + json.dumps({"key": key}).encode()
                      + b"\n{\"key\": \"one|0|ca")
    again = run_paper(tmp_path)
    assert again["run"]["cells_fitted"] == 0 and again["run"]["cells_skipped"] == 2
    assert again["records"] == first["records"]
    assert cells.read_bytes().startswith(good)


# ---------------------------------------------------------------- the offline studies
def study_args(tmp_path: Path, *extra: str):
    return variants.parse_args(["--data-dir", str(tables(tmp_path, "one")), "--out", str(tmp_path / "s.jsonl"),
                                *extra])


def fake_measure(calls: list):
    def measure(name, seed, split):
        key = f"{name}|{seed}"
        yield key, lambda: calls.append(key) or {"value": 1.0}, lambda r: r["key"]
    return measure


def test_a_study_fits_a_repeated_seed_once(tmp_path):
    calls = []
    paper.run_study(study_args(tmp_path, "--seeds", "0", "0", "1"), str, fake_measure(calls))
    assert calls == ["one|0", "one|1"] and len((tmp_path / "s.jsonl").read_text().splitlines()) == 2


def test_a_study_refuses_an_out_it_cannot_write_and_a_report_of_nothing(tmp_path):
    calls = []
    (tmp_path / "a-file").write_text("")
    for out, message in ((tmp_path, "is a directory"), (tmp_path / "a-file" / "s.jsonl", "cannot write there")):
        with pytest.raises(SystemExit, match=message):
            args = study_args(tmp_path)
            args.out = out
            paper.run_study(args, str, fake_measure(calls))
    assert calls == []
    with pytest.raises(SystemExit, match="no finished cells in it \\(no such file\\)"):
        paper.run_study(study_args(tmp_path, "--report"), str, fake_measure(calls))


def test_a_study_checks_every_table_before_its_first_fit(tmp_path):
    calls = []
    data = tables(tmp_path, "a-good")
    (data / "z-bad.csv").write_text("a,b,target\n" + "1,x,3\n" * 30)
    with pytest.raises(SystemExit, match="z-bad.csv: column 'b', row 1"):
        paper.run_study(study_args(tmp_path), str, fake_measure(calls))
    assert calls == []


@pytest.mark.parametrize("main, argv, message", [
    (depth_curves.parse_args, ["--max-depth", "13"], "argument --max-depth: expected an integer from 1 to 12"),
    (depth_curves.parse_args, ["--max-depth", "0"], "argument --max-depth: expected an integer from 1 to 12"),
    (variants.parse_args, ["--outlier", "nan"], "argument --outlier: expected a finite number, got 'nan'"),
    (variants.parse_args, ["--outlier", "inf"], "argument --outlier: expected a finite number, got 'inf'"),
    (speed.main, ["--depths", "3"], "argument --depths: invalid choice: 3"),
    (speed.main, ["--repeats", "0"], "argument --repeats: expected an integer >= 1"),
    (speed.main, ["--p", "3"], "argument --p: expected an integer >= 5"),
    (reference_r2.main, ["--seed", "-1"], "argument --seed: expected an integer from 0 to 4294967295"),
    (reference_r2.main, ["--depths", "0"], "argument --depths: expected an integer >= 1"),
    (data_path.main, ["--numeric", "-1"], "--numeric must be at least 0"),
    (data_path.main, ["--numeric", "0", "--text", "0"], "--numeric plus --text must be at least 1"),
])
def test_out_of_range_options_of_the_other_tools_are_refused(capsys, main, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_speed_report_only_without_a_result_file_says_so(tmp_path, capsys):
    doc = tmp_path / "B.md"
    with pytest.raises(SystemExit):
        speed.main(["--report-only", "--out", str(tmp_path / "none.json"), "--doc", str(doc)])
    assert "--out" in capsys.readouterr().err and not doc.exists()


def test_reference_r2_checks_its_files_before_building_the_reference_venv(tmp_path, monkeypatch, capsys):
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


def test_data_path_reports_the_apps_refusal_of_the_generated_table(monkeypatch, capsys):
    monkeypatch.setattr(data_path.reading, "MAX_ROWS", 30)
    with pytest.raises(SystemExit) as exit_:
        data_path.main(["--rows", "50", "--numeric", "1", "--text", "0", "--repeats", "1"])
    assert exit_.value.code == 2 and "has more than 30 rows" in capsys.readouterr().err


def test_a_constant_target_is_refused(tmp_path):
    (tmp_path / "flat.csv").write_text("a,target\n" + "".join(f"{i},2.5\n" for i in range(30)))
    with pytest.raises(SystemExit, match="flat.csv: the target is 2.5 in every row: there is nothing to predict"):
        sweep.load_dataset(tmp_path / "flat.csv")


def test_finished_cells_of_a_method_whose_package_is_missing_stay_in_the_report(tmp_path, monkeypatch):
    from dataclasses import replace

    from bench.paper import methods as M

    first = run_paper(tmp_path)  # cart, fitted while it "was installed"
    monkeypatch.setitem(M.METHODS, "cart", replace(M.METHODS["cart"], problem=lambda: "not installed here"))
    report = run_paper(tmp_path, "--report-only")
    assert report["methods"] == ["cart"] and report["records"] == first["records"]
    both = run_paper(tmp_path, "--methods", "cart", "rf")  # rf runs; cart is not rerun and still reported
    assert both["methods"] == ["cart", "rf"] and both["run"]["cells_fitted"] == 2
    assert {r["method"] for r in both["records"]} == {"cart", "rf"}
    with pytest.raises(SystemExit, match="nothing to run or report: every method given is skipped here"):
        paper.main(["--data-dir", str(tmp_path / "data"), "--methods", "cart", "--budget", "tiny", "--no-doc",
                    "--out", str(tmp_path / "elsewhere.json")])


@pytest.mark.parametrize("argv, message", [
    (["--repeats", "0"], "--repeats must be at least 1"), (["--p", "3"], "--p must be at least 5"),
    (["--depths", "2", "0"], "--depths must be at least 1"), (["--epochs", "10", "40"], "21 <= E1 < E2"),
    (["--epochs", "40", "40"], "21 <= E1 < E2"),
])
def test_reference_timing_options_are_checked_before_the_venv_is_built(monkeypatch, capsys, argv, message):
    from bench.speed import reference

    monkeypatch.setattr(reference, "ensure_reference_venv", lambda *a: pytest.fail("the reference venv was built"))
    with pytest.raises(SystemExit) as exit_:
        reference.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("address", ["notaurl", "http://127.0.0.1:1"])
def test_a_dask_scheduler_that_is_not_an_address_is_refused_with_a_message(tmp_path, address):
    pytest.importorskip("distributed")
    with pytest.raises(SystemExit, match=f"cannot use the Dask scheduler at {address}: .*leave out --dask-scheduler"):
        run_paper(tmp_path, "--dask-scheduler", address)


def test_a_seed_beyond_the_split_seeds_range_is_refused_and_failed_cells_are_named_as_such(tmp_path, capsys):
    for parse in (paper.parse_args, variants.parse_args):
        with pytest.raises(SystemExit):
            parse(["--seeds", "4294967296"])
        assert "argument --seeds: expected an integer from 0 to 4294967295" in capsys.readouterr().err


def test_a_run_whose_every_cell_failed_says_so_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "run_cell", lambda cell, *a: {"key": cell.key, "error": "RuntimeError: boom"})
    with pytest.raises(SystemExit, match="all 2 cells failed \\(see above\\) and none finished earlier: wrote nothing"):
        run_paper(tmp_path)
    assert not (tmp_path / "out" / "o.json").exists()


def test_paper_out_never_replaces_a_cells_file_the_markdown_or_a_dataset(tmp_path, monkeypatch):
    first = run_paper(tmp_path)
    cells = Path(first["run"]["cells_file"])
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n")
    monkeypatch.setattr(sweep, "run_cell", lambda *a: pytest.fail("a cell ran"))
    for path in (cells, doc, tmp_path / "data" / "one.csv"):
        before = path.read_bytes()
        with pytest.raises(SystemExit, match="exists and is not a summary JSON written by bench/paper.py"):
            paper.main(["--data-dir", str(tmp_path / "data"), "--methods", "cart", "--budget", "tiny", "--no-doc",
                        "--out", str(path), "--seeds", "1"])
        assert path.read_bytes() == before
    assert run_paper(tmp_path)["run"]["cells_skipped"] == 2  # its own summary is replaced as before


def test_a_study_never_appends_cells_to_a_file_that_is_not_a_cells_file(tmp_path):
    calls = []
    summary = tmp_path / "paper-fast.json"
    summary.write_text(json.dumps({"settings": {}, "records": []}, indent=1))
    for path in (summary, tables(tmp_path, "one") / "one.csv"):
        before = path.read_bytes()
        args = study_args(tmp_path)
        args.out = path
        with pytest.raises(SystemExit, match="exists and is not a JSON-lines file of cells"):
            paper.run_study(args, str, fake_measure(calls))
        assert path.read_bytes() == before and calls == []
    cells = tmp_path / "s.jsonl"
    cells.write_bytes(b'{"key": "x|0", "value": 1}\n{"key": "torn')  # a cells file with a torn last line
    paper.run_study(study_args(tmp_path), str, fake_measure(calls))
    assert calls == ["one|0"]
