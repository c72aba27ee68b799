"""bench.common: the shared datasets read and refused with one line naming the file, column and row; the paper's
split; Markdown sections that leave the rest of the file alone; command lines named as they are run."""

from __future__ import annotations

import numpy as np
import pytest

from bench import common
from tests.bench.shared import tables


def test_a_folder_named_like_a_csv_is_not_a_dataset(tmp_path):
    data = tables(tmp_path, "one")
    (data / "folder.csv").mkdir()
    assert [p.name for p in common.find_datasets(data)] == ["one.csv"]


def test_a_name_that_matches_no_dataset_is_refused_with_the_folder(tmp_path):
    data = tables(tmp_path, "one", "two")
    assert [p.stem for p in common.find_datasets(data, ["t*", "one.csv"])] == ["one", "two"]
    with pytest.raises(SystemExit, match="no dataset in .*data matches three"):
        common.find_datasets(data, ["one", "three"])


@pytest.mark.parametrize("content, message", [
    (b"", "No columns to parse"),
    (b"a,b,target\n" + b"1,2,3\n" * 30 + b"1,2,3,4\n", "Expected 3 fields in line 32, saw 4"),
    ("caf\xe9,b,target\n".encode("latin-1") + b"1,2,3\n" * 30, "can't decode byte 0xe9"),
])
def test_a_file_that_is_not_a_readable_csv_is_refused_with_its_name(tmp_path, content, message):
    (tmp_path / "broken.csv").write_bytes(content)
    with pytest.raises(SystemExit, match=f"broken.csv: cannot be read as a CSV table \\(.*{message}"):
        common.load_dataset(tmp_path / "broken.csv")


def test_an_infinite_value_is_shown_as_the_number_not_a_numpy_repr(tmp_path):
    (tmp_path / "big.csv").write_text("a,b,target\n" + "1,2,3\n" * 30 + "1e400,2,3\n")
    with pytest.raises(SystemExit) as exit_:
        common.load_dataset(tmp_path / "big.csv")
    assert "column 'a', row 31: the value (inf) is infinite" in str(exit_.value)


def test_a_constant_target_is_refused(tmp_path):
    (tmp_path / "flat.csv").write_text("a,target\n" + "".join(f"{i},2.5\n" for i in range(30)))
    with pytest.raises(SystemExit, match="flat.csv: the target is 2.5 in every row: there is nothing to predict"):
        common.load_dataset(tmp_path / "flat.csv")


def test_max_rows_keeps_the_same_rows_in_their_order_whatever_the_seed(tmp_path):
    (tmp_path / "t.csv").write_text("a,target\n" + "".join(f"{i},{i * i}\n" for i in range(50)))
    X, y = common.load_dataset(tmp_path / "t.csv", max_rows=20)
    again, _ = common.load_dataset(tmp_path / "t.csv", max_rows=20)
    assert X.shape == (20, 1) and (np.diff(X[:, 0]) > 0).all() and (y == X[:, 0] ** 2).all()
    assert (X == again).all()


def test_split_and_scale_uses_training_statistics_only():
    X = np.arange(40, dtype=float).reshape(20, 2)
    Xs_tr, ys_tr, Xs_te, ys_te = common.split_and_scale(X, X[:, 0] * 2, seed=0)
    assert Xs_tr.min() == 0 and Xs_tr.max() == 1 and ys_tr.min() == 0 and ys_tr.max() == 1
    assert len(ys_te) == 5


def test_write_section_replaces_only_its_own_markers(tmp_path):
    doc = tmp_path / "B.md"
    common.write_section(doc, "paper-table", "one")
    doc.write_text(doc.read_text() + "\nafter\n")
    common.write_section(doc, "paper-table", "two")
    common.write_section(doc, "other", "x")
    text = doc.read_text()
    assert "one" not in text and "<!-- paper-table:start -->\ntwo\n<!-- paper-table:end -->" in text
    assert text.index("after") < text.index("<!-- other:start -->")


def test_a_command_line_is_named_as_it_is_run_and_shows_its_docstring(capsys):
    parser = common.command_parser("What it does.\n\nUsage: python -m bench.x --flag\n", "bench.x")
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bench.x") and "What it does." in out
    assert "Usage: python -m bench.x --flag" in out


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "-1"], "argument --seeds: expected an integer from 0 to 4294967295, got '-1'"),
    (["--seeds", "4294967296"], "argument --seeds: expected an integer from 0 to 4294967295"),
    (["--max-rows", "19"], "argument --max-rows: expected an integer >= 20, got '19'"),
    (["--budget", "huge"], "argument --budget: invalid choice: 'huge'"),
])
def test_the_shared_options_refuse_out_of_range_values_in_one_line(capsys, argv, message):
    parser = common.command_parser("Doc.", "bench.x")
    common.add_data_options(parser)
    common.add_sample_options(parser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_fill_cells_fits_each_missing_cell_once_and_reports_the_finished_ones(tmp_path, capsys):
    import argparse

    from bench.common import fill_cells

    fitted = []

    def cells():
        for key in ("a", "b"):
            yield key, (lambda k=key: fitted.append(k) or {"value": len(fitted)}), (lambda r: f"{r['key']} done")

    args = argparse.Namespace(out=tmp_path / "cells.jsonl", report=False)
    fill_cells(args, lambda records: "unused", cells())
    fill_cells(args, lambda records: "unused", cells())  # a rerun skips the finished cells
    assert fitted == ["a", "b"] and capsys.readouterr().out.splitlines() == ["a done", "b done"]
    fill_cells(argparse.Namespace(out=args.out, report=True), lambda records: f"{len(records)} cells", cells())
    assert capsys.readouterr().out.strip() == "2 cells" and fitted == ["a", "b"]
