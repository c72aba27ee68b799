"""python -m bench.paper end to end on small slices of the shared datasets (outputs, resume, Dask, GridSearchCV on
Dask), and on bad input: one line naming what to fix, never a traceback, and nothing stored lost. The bad-input
tests run on 40-row tables made in tmp_path (CART cells, tiny budgets), so they need no shared dataset."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.common import BUDGETS, Budget
from bench.paper import methods as M
from bench.paper import report, sweep
from bench.paper import run as paper
from tests.bench.shared import needs_datasets, tables

SLICES = ["--datasets", "airfoil_self_noise", "abalone", "--max-rows", "200", "--budget", "tiny"]
needs_slices = needs_datasets("airfoil_self_noise", "abalone")


def run(tmp_path: Path, *args: str) -> dict:
    return paper.main([*SLICES, "--out", str(tmp_path / "out.json"), "--doc", str(tmp_path / "BENCHMARKS.md"), *args])


def cell_lines(result: dict) -> list[str]:
    return Path(result["run"]["cells_file"]).read_text().splitlines()


@needs_slices
@pytest.mark.slow  # six methods with depth searches: 10-25 s
@pytest.mark.timeout(180)
def test_the_bench_runs_end_to_end_on_two_small_slices_and_writes_json_and_markdown(tmp_path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## Speed\n\nthe lead's section\n")

    methods = ["cart", "rf", "get", "get-polish", "get-linear", "get-linear-l1"]
    result = run(tmp_path, "--methods", *methods, "--jobs", "2")

    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["run"]["cells_fitted"] == saved["run"]["cells_finished"] == 12
    for record in saved["records"]:
        assert -100 < record["test_r2"] <= 100 and record["n_parameters"] > 0 and record["predict_ms_per_10k"] > 0
        assert record["method"] == "rf" or 1 <= record["depth"] <= 12
        if record["method"] == "get-linear-l1":  # both strengths fitted at every depth searched, one kept
            assert {r["l1"] for r in record["details"]["cv"]} == {0.0, 1e-5}
            assert record["details"]["l1"] in (0.0, 1e-5)
    cell = saved["summary"]["cells"]["airfoil_self_noise"]["get-linear"]
    assert cell["paper_test_r2"] == pytest.approx(89.96)
    assert set(saved["summary"]["friedman"]["ranks"]) == set(methods)
    against = saved["summary"]["against_rf"]
    assert set(against) == set(methods) - {"rf"} and against["get"]["splits"]["n"] == 2
    assert against["get"]["paper"]["n"] == 2  # the paper's own GET minus RF on the same two datasets
    assert saved["summary"]["averages"]["get-linear"]["near_paper"]["n"] == 2
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\n## Speed\n\nthe lead's section\n")
    assert "<!-- paper-table:start -->" in text and "<!-- paper-table:end -->" in text
    assert "| airfoil_self_noise |" in text and "(89.96)" in text
    assert "| at, above or within 1 point of the paper | " in text
    assert result["markdown"] in text


@needs_slices
def test_a_rerun_skips_finished_cells_and_an_interrupted_run_redoes_only_the_lost_cell(tmp_path):
    first = run(tmp_path, "--methods", "cart", "--seeds", "0", "1")
    assert first["run"]["cells_fitted"] == 4

    second = run(tmp_path, "--methods", "cart", "--seeds", "0", "1")
    assert second["run"]["cells_fitted"] == 0 and second["run"]["cells_skipped"] == 4
    assert second["records"] == first["records"]
    assert len(cell_lines(second)) == 4

    lines = cell_lines(second)  # an interruption: the last record torn half-way through its line
    Path(second["run"]["cells_file"]).write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    third = run(tmp_path, "--methods", "cart", "--seeds", "0", "1")
    assert third["run"]["cells_fitted"] == 1 and third["run"]["cells_skipped"] == 3
    assert len([json.loads(l) for l in cell_lines(third) if l.endswith("}")]) == 4


@needs_slices
def test_a_cell_stopped_during_its_depth_search_resumes_from_the_fits_its_search_kept(tmp_path):
    first = run(tmp_path, "--methods", "get", "--datasets", "abalone")
    searches = Path(first["run"]["cells_file"].replace(".cells-", ".searches-").removesuffix(".jsonl"))
    kept = {json.loads(p.read_text())["meta"]["train_r2"]: p for p in searches.glob("*.json")}
    searched = first["records"][0]["details"]["cv"]
    assert len(kept) == len(searched) + 1  # every depth searched, and the refit
    path = kept[searched[1]["train_r2"]]  # depth 2's fit, marked as a refit could not reproduce
    data = json.loads(path.read_text())
    data["meta"]["train_r2"] = 0.5
    path.write_text(json.dumps(data))
    Path(first["run"]["cells_file"]).write_text("")  # stopped before the cell was stored

    again = run(tmp_path, "--methods", "get", "--datasets", "abalone")
    assert again["run"]["cells_fitted"] == 1
    assert [r["train_r2"] for r in again["records"][0]["details"]["cv"]] == (
        [searched[0]["train_r2"], 0.5] + [r["train_r2"] for r in searched[2:]])
    assert again["records"][0]["test_r2"] == first["records"][0]["test_r2"]


@needs_slices
def test_a_searches_path_that_is_a_file_is_refused_before_any_fit(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit, match="--searches"):
        run(tmp_path, "--methods", "get", "--searches", str(tmp_path / "file"))
    assert not (tmp_path / "out.json").exists()


@needs_slices
def test_other_settings_write_their_own_cell_file(tmp_path):
    a = run(tmp_path, "--methods", "cart")
    b = run(tmp_path, "--methods", "cart", "--max-rows", "150")
    assert a["run"]["cells_file"] != b["run"]["cells_file"] and b["run"]["cells_fitted"] == 2


@needs_slices
def test_tables_mode_reports_training_r2_at_fixed_depths_beside_the_papers_averages(tmp_path):
    result = run(tmp_path, "--tables", "--depths", "1", "2", "--methods", "cart", "get-alpha1", "get")
    assert result["run"]["cells_fitted"] == 2 * 2 * 3
    averages = result["summary"]["averages"]
    assert averages["get"]["2"] >= averages["cart"]["2"] - 1e-9  # GET starts from CART and keeps the best
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "<!-- paper-training:start -->" in text and "(71.80)" not in text and "(70.86)" in text


def test_friedman_ranks_average_per_dataset_ranks_with_ties_shared():
    cells = {"a": {"x": {"test_r2": 90}, "y": {"test_r2": 80}, "z": {"test_r2": 80}},
             "b": {"x": {"test_r2": 70}, "y": {"test_r2": 75}, "z": {"test_r2": 60}}}
    ranks = report.friedman(cells, ["a", "b"], ["x", "y", "z"])["ranks"]
    assert ranks == {"x": 1.5, "y": 1.75, "z": 2.75}  # a: 1, 2.5, 2.5; b: 2, 1, 3


def test_paired_test_against_the_forest_pairs_each_split_and_each_dataset_mean():
    rows = [("a", 0, 80.0, 78.0), ("a", 1, 82.0, 79.0), ("b", 0, 60.0, 61.0), ("b", 1, 64.0, 62.0),
            ("c", 0, 90.0, 88.0)]  # (dataset, seed, method, rf); c's seed 1 has no forest: not a pair
    records = [{"dataset": d, "seed": s, "method": m, "test_r2": v} for d, s, x, f in rows
               for m, v in (("get", x), ("rf", f))] + [{"dataset": "c", "seed": 1, "method": "get", "test_r2": 0.0}]
    pair = report.paired_against(records, ["a", "b", "c"], "get", "rf")

    splits, datasets = pair["splits"], pair["datasets"]
    assert splits["n"] == 5 and splits["mean"] == pytest.approx((2 + 3 - 1 + 2 + 2) / 5)
    assert splits["n_above"] == 4
    assert datasets["n"] == 3 and datasets["mean"] == pytest.approx((2.5 + 0.5 + 2) / 3)
    from scipy.stats import ttest_rel
    expected = ttest_rel([2.5, 0.5, 2.0], [0, 0, 0])
    assert datasets["t"] == pytest.approx(expected.statistic) and datasets["p_value"] == pytest.approx(expected.pvalue)
    low, high = datasets["ci95"]
    assert low < datasets["mean"] < high and low < 0  # three datasets: a +1.67 mean is not significant
    assert report.paired_against(records, ["a"], "get", "rf")["datasets"]["t"] is None  # one dataset: no test


@pytest.mark.parametrize("change, message", [
    (lambda f: f.rename(columns={"target": "y"}), "the last column must be the target, named 'target'; it is 'y'"),
    (lambda f: f.assign(a=f["a"].where(f.index != 5)), "column 'a', row 6: the value is missing \\(1 row like it\\)"),
    (lambda f: f.assign(b=f["b"].astype(object).where(f.index % 10 != 7, "oops")),
     "column 'b', row 8: the value \\('oops'\\) is not a number \\(3 rows like it\\)"),
])
def test_a_table_that_is_not_complete_numeric_data_is_refused_with_file_column_and_row(tmp_path, change, message):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(30, 3)), columns=["a", "b", "target"])
    change(frame).to_csv(tmp_path / "mine.csv", index=False)
    with pytest.raises(SystemExit, match=f"mine.csv: {message}"):
        paper.main(["--data-dir", str(tmp_path), "--methods", "cart", "--budget", "tiny", "--no-doc",
                    "--out", str(tmp_path / "out.json")])


@pytest.mark.parametrize("option, value, expected", [
    ("--epochs", "0", ">= 1"), ("--starts", "0", ">= 1"), ("--seeds", "-1", "from 0 to 4294967295"),
    ("--max-rows", "5", ">= 20"), ("--jobs", "0", ">= 1"), ("--threads", "0", ">= 1"),
    ("--depths", "13", "from 1 to 12"), ("--seeds", "x", "from 0 to 4294967295"),
    ("--seeds", "4294967296", "from 0 to 4294967295"),
])
def test_an_out_of_range_option_is_refused_before_anything_runs(tmp_path, capsys, option, value, expected):
    with pytest.raises(SystemExit) as exit_:
        paper.parse_args(["--out", str(tmp_path / "out.json"), option, value])
    assert exit_.value.code == 2
    assert f"argument {option}: expected an integer {expected}, got '{value}'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@needs_slices
def test_an_unreachable_dask_scheduler_stops_the_run_with_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "SCHEDULER_TIMEOUT_S", 1)
    with pytest.raises(SystemExit, match="cannot use the Dask scheduler at tcp://127.0.0.1:1: .*leave out"):
        run(tmp_path, "--methods", "cart", "--dask-scheduler", "tcp://127.0.0.1:1")


def test_near_paper_counts_datasets_at_above_or_within_one_point_of_the_paper():
    cells = {"a": {"get": {"test_r2": 80.0, "paper_test_r2": 80.9}},  # within 1 point
             "b": {"get": {"test_r2": 70.0, "paper_test_r2": 72.5}},  # 2.5 under
             "c": {"get": {"test_r2": 91.0, "paper_test_r2": 90.0}},  # above
             "d": {"get": {"test_r2": 50.0, "paper_test_r2": None}},  # no paper figure: not counted
             "e": {"rf": {"test_r2": 60.0, "paper_test_r2": 61.0}}}  # the method did not run here
    near = report.near_paper(cells, "get")
    assert (near["n"], near["n_near"]) == (3, 2) and near["short"] == {"b": pytest.approx(-2.5)}
    assert report.near_paper(cells, "get", points=3.0)["n_near"] == 3


# ---------------------------------------------------------------- bad input
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


def test_finished_cells_of_a_method_whose_package_is_missing_stay_in_the_report(tmp_path, monkeypatch):
    from dataclasses import replace

    from bench.paper import methods as M

    first = run_paper(tmp_path)  # cart, fitted while it "was installed"
    monkeypatch.setitem(M.METHODS, "cart", dataclasses.replace(M.METHODS["cart"], problem=lambda: "not installed here"))
    report = run_paper(tmp_path, "--report-only")
    assert report["methods"] == ["cart"] and report["records"] == first["records"]
    both = run_paper(tmp_path, "--methods", "cart", "rf")  # rf runs; cart is not rerun and still reported
    assert both["methods"] == ["cart", "rf"] and both["run"]["cells_fitted"] == 2
    assert {r["method"] for r in both["records"]} == {"cart", "rf"}
    with pytest.raises(SystemExit, match="nothing to run or report: every method given is skipped here"):
        paper.main(["--data-dir", str(tmp_path / "data"), "--methods", "cart", "--budget", "tiny", "--no-doc",
                    "--out", str(tmp_path / "elsewhere.json")])


@pytest.mark.parametrize("address", ["notaurl", "http://127.0.0.1:1"])
def test_a_dask_scheduler_that_is_not_an_address_is_refused_with_a_message(tmp_path, address):
    pytest.importorskip("distributed")
    with pytest.raises(SystemExit, match=f"cannot use the Dask scheduler at {address}: .*leave out --dask-scheduler"):
        run_paper(tmp_path, "--dask-scheduler", address)


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
        with pytest.raises(SystemExit, match="exists and is not a summary JSON written by python -m bench.paper"):
            paper.main(["--data-dir", str(tmp_path / "data"), "--methods", "cart", "--budget", "tiny", "--no-doc",
                        "--out", str(path), "--seeds", "1"])
        assert path.read_bytes() == before
    assert run_paper(tmp_path)["run"]["cells_skipped"] == 2  # its own summary is replaced as before


# ---------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as local:
        yield local


@needs_slices
@pytest.mark.slow  # a two-process Dask cluster starts and stops: 10-20 s on two cores
@pytest.mark.timeout(180)
def test_a_tiny_sweep_runs_on_a_dask_cluster(tmp_path, cluster):
    result = run(tmp_path, "--methods", "cart", "get", "--dask-scheduler", cluster.scheduler_address)
    assert result["run"]["cells_fitted"] == 4
    assert {r["pid"] for r in result["records"]}.isdisjoint({os.getpid()})
    assert all(r["threads"] == 1 for r in result["records"])
    again = run(tmp_path, "--methods", "cart", "get", "--dask-scheduler", cluster.scheduler_address)
    assert again["run"]["cells_fitted"] == 0


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_get_regressor_in_grid_search_cv_runs_on_joblibs_dask_backend(cluster):
    import joblib
    from distributed import Client
    from sklearn.model_selection import GridSearchCV

    from get_core.estimator import GETRegressor

    rng = np.random.default_rng(0)
    X = rng.random((120, 3))
    y = np.where(X[:, 0] + X[:, 1] > 1, 1.0, 0.0) + 0.05 * rng.standard_normal(120)
    def search():
        return GridSearchCV(GETRegressor(n_starts=1, n_epochs=20, random_state=0), {"depth": [1, 2]}, cv=2,
                            n_jobs=-1).fit(X, y)

    with Client(cluster.scheduler_address) as client, joblib.parallel_config(backend="dask"):
        on_dask = search()
        ran_on = client.run(lambda: __import__("sys").modules.get("get_core.estimator") is not None)
    local = search()
    assert any(ran_on.values())  # the fits were unpickled and run on the workers
    assert on_dask.best_params_ == local.best_params_
    np.testing.assert_allclose(on_dask.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"], atol=0.02)
    assert on_dask.best_score_ > 0.3


# ---------------------------------------------------------------- sparse splits (issue 20)
def test_sparse_cells_wait_for_their_dense_depth_then_fit_there_within_k(tmp_path, capsys):
    methods = ["--methods", "cart", "get", "get-linear", "get-sparse-1", "get-linear-sparse-2", "--seeds", "0"]
    first = run_paper(tmp_path, *methods)
    assert {r["method"] for r in first["records"]} == {"cart", "get", "get-linear"}
    err = capsys.readouterr().err
    assert "4 cells wait for the depth their dense method chose" in err and "two|0|get-linear" in err
    second = run_paper(tmp_path, *methods)
    assert second["run"]["cells_fitted"] == 4
    records = {(r["dataset"], r["method"]): r for r in second["records"]}
    for name in ("one", "two"):
        for method, dense, k in (("get-sparse-1", "cart", 1), ("get-linear-sparse-2", "get-linear", 2)):
            record = records[name, method]
            assert M.METHODS[method].depth_from == dense  # an axis-aligned GET tree at CART's depth
            assert record["depth"] == records[name, dense]["depth"]
            assert record["features_per_split"] == max(record["details"]["split_widths"]) <= k
            assert record["n_parameters"] > 0
        assert records[name, "cart"]["features_per_split"] == 1
    check = second["summary"]["split_check"]
    assert check["get-sparse-1"] == {"k": 1, "cells": 2, "widest": 1, "violations": []}
    targets = {(t["method"], t["against"]) for t in second["summary"]["sparse_targets"]}
    assert targets == {("get-sparse-1", "cart"), ("get-linear-sparse-2", "get-linear")}
    assert "| GET, k=1 | CART |" in second["markdown"] and "all within k" in second["markdown"]


def test_the_split_check_names_every_stored_cell_whose_tree_breaks_k():
    records = [{"key": "a|0|get-sparse-2|3", "method": "get-sparse-2", "details": {"split_widths": [2, 1, 2]}},
               {"key": "b|0|get-sparse-2|3", "method": "get-sparse-2", "details": {"split_widths": [2, 3, 0]}},
               {"key": "b|0|get|3", "method": "get", "details": {}}]
    check = report.split_check(records, ["get", "get-sparse-2"])
    assert check == {"get-sparse-2": {"k": 2, "cells": 2, "widest": 3, "violations": ["b|0|get-sparse-2|3"]}}


def test_the_targets_compare_k3_and_k2_with_dense_and_k1_with_cart():
    averages = {m: {"test_r2": r2} for m, r2 in
                {"cart": 70.0, "get": 80.0, "get-sparse-1": 71.5, "get-sparse-2": 78.5, "get-sparse-3": 79.2}.items()}
    targets = {t["method"]: (t["against"], round(t["difference"], 2), t["met"])
               for t in report.sparse_targets(averages, list(averages))}
    assert targets == {"get-sparse-3": ("get", -0.8, True), "get-sparse-2": ("get", -1.5, True),
                       "get-sparse-1": ("cart", 1.5, False)}


def test_a_sparse_method_fits_at_the_given_depth_and_fails_a_tree_with_a_wider_split(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 4))
    y = (X.sum(axis=1) > 2).astype(float)  # one oblique step over all 4 features
    fitted = M.METHODS["get-sparse-2"].fit(X, y, 0, BUDGETS["tiny"], depth=3)
    assert fitted.depth == fitted.model.tree_.depth == 3 and fitted.features_per_split <= 2
    assert fitted.n_parameters == fitted.model.tree_.n_nonzero_parameters
    dense = M.GETRegressor
    monkeypatch.setattr(M, "GETRegressor", lambda **kw: dense(**{**kw, "max_split_features": None}))
    with pytest.raises(AssertionError, match="a split uses 4 features; max_split_features=1"):
        M.METHODS["get-sparse-1"].fit(X, y, 0, Budget("test", 2, 100, polish_in_cv=False), depth=1)


def test_a_tuned_sparse_method_searches_its_own_depth_within_k_and_meets_its_targets_by_name():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(240, 4))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + np.where(X[:, 1] > 0.3, 1.0, 0.0) + 0.05 * rng.normal(size=240)
    fitted = M.METHODS["get-sparse-1-tuned"].fit(X, y, 0, BUDGETS["tiny"])
    assert fitted.depth == fitted.model.tree_.depth and fitted.details["cv"]  # a search, not a given depth
    assert fitted.features_per_split == max(fitted.details["split_widths"]) == 1
    assert M.METHODS["get-sparse-1-tuned"].depth_from is None
    averages = {m: {"test_r2": r2} for m, r2 in {"cart": 70.0, "get": 80.0, "get-sparse-1-tuned": 72.5}.items()}
    assert [(t["method"], t["against"], t["met"]) for t in report.sparse_targets(averages, list(averages))] == [
        ("get-sparse-1-tuned", "cart", True)]
