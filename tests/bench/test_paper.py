"""bench/paper.py end to end on small slices of the shared datasets: outputs, resume, Dask, GridSearchCV on Dask."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import paper, report, sweep

DATA_DIR = paper.DEFAULT_DATA_DIR
SLICES = ["--datasets", "airfoil_self_noise", "abalone", "--max-rows", "200", "--budget", "tiny"]

pytestmark = pytest.mark.skipif(not (DATA_DIR / "abalone.csv").exists(), reason=f"no shared datasets in {DATA_DIR}")


def run(tmp_path: Path, *args: str) -> dict:
    return paper.main([*SLICES, "--out", str(tmp_path / "out.json"), "--doc", str(tmp_path / "BENCHMARKS.md"), *args])


def cell_lines(result: dict) -> list[str]:
    return Path(result["run"]["cells_file"]).read_text().splitlines()


@pytest.mark.slow
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


def test_a_searches_path_that_is_a_file_is_refused_before_any_fit(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit, match="--searches"):
        run(tmp_path, "--methods", "get", "--searches", str(tmp_path / "file"))
    assert not (tmp_path / "out.json").exists()


def test_other_settings_write_their_own_cell_file(tmp_path):
    a = run(tmp_path, "--methods", "cart")
    b = run(tmp_path, "--methods", "cart", "--max-rows", "150")
    assert a["run"]["cells_file"] != b["run"]["cells_file"] and b["run"]["cells_fitted"] == 2


def test_tables_mode_reports_training_r2_at_fixed_depths_beside_the_papers_averages(tmp_path):
    result = run(tmp_path, "--tables", "--depths", "1", "2", "--methods", "cart", "get-alpha1", "get")
    assert result["run"]["cells_fitted"] == 2 * 2 * 3
    averages = result["summary"]["averages"]
    assert averages["get"]["2"] >= averages["cart"]["2"] - 1e-9  # GET starts from CART and keeps the best
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "<!-- paper-training:start -->" in text and "(71.80)" not in text and "(70.86)" in text


def test_write_section_replaces_only_its_own_markers(tmp_path):
    doc = tmp_path / "B.md"
    report.write_section(doc, "paper-table", "one")
    doc.write_text(doc.read_text() + "\nafter\n")
    report.write_section(doc, "paper-table", "two")
    report.write_section(doc, "other", "x")
    text = doc.read_text()
    assert "one" not in text and "<!-- paper-table:start -->\ntwo\n<!-- paper-table:end -->" in text
    assert text.index("after") < text.index("<!-- other:start -->")


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


def test_split_and_scale_uses_training_statistics_only():
    X = np.arange(40, dtype=float).reshape(20, 2)
    Xs_tr, ys_tr, Xs_te, ys_te = sweep.split_and_scale(X, X[:, 0] * 2, seed=0)
    assert Xs_tr.min() == 0 and Xs_tr.max() == 1 and ys_tr.min() == 0 and ys_tr.max() == 1
    assert len(ys_te) == 5


# ---------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as local:
        yield local


@pytest.mark.slow
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
