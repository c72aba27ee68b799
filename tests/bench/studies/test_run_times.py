"""bench.studies.run_times: the runs it times are the Train page's, and its report counts the target plainly."""

from __future__ import annotations

import pandas as pd

from bench.studies import run_times
from get_core.config import APP_DEFAULTS


def test_each_kind_of_run_is_what_the_train_page_sends():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.0], "target": [1.0, 0.0, 1.0]})
    plain = run_times.run_params("plain", frame, seed=0)
    assert plain["config"]["time_budget"] == APP_DEFAULTS.time_budget and "search" not in plain
    assert plain["config"]["leaf"] == APP_DEFAULTS.leaf and plain["data"]["features"] == ["a", "b"]
    assert run_times.run_params("search", frame, 0)["search"] == run_times.SEARCH
    classes = run_times.run_params("class", frame, 0)
    assert classes["data"]["task"] == "classification" and classes["config"]["leaf"] == "constant"


def test_the_report_counts_the_runs_within_the_target_either_way():
    cell = {"kind": "plain", "table": "t", "rows": 10, "features": 2, "estimated_s": 10.0, "load_before": 0.1}
    records = [{**cell, "real_s": 14.0, "ratio": 1.4}, {**cell, "real_s": 16.0, "ratio": 1.6},
               {**cell, "real_s": 6.0, "ratio": 0.6}]
    assert "1 of 3 runs within 1.5x of their estimate." in run_times.report(records)
