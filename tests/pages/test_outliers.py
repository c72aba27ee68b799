"""A far outlier (a missing-value code such as 99999) is named on the Data page; the Train page offers robust scaling,
and the run trains with it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.runs.store import RunStatus, RunStore
from pages import common
from tests.pages.test_app import app, assert_no_traceback, db, texts, train_tiny_run, upload  # noqa: F401 (db: fixture)

pytestmark = pytest.mark.usefixtures("db")


def coded_table() -> bytes:
    rng = np.random.default_rng(0)
    income = rng.uniform(10, 90, 200).round(1)
    income[17] = 99999  # "unknown", coded as a number
    return pd.DataFrame({"income": income, "age": rng.integers(20, 70, 200),
                         "spend": np.sin(income / 10) + rng.normal(0, 0.1, 200)}).to_csv(index=False).encode()


def test_a_far_outlier_is_named_and_the_run_can_train_with_robust_scaling(db):  # noqa: F811 (the fixture)
    at = upload(app(), "customers.csv", coded_table())
    assert_no_traceback(at)
    [warning] = [w for w in texts(at, "warning") if w.startswith("Far outliers")]
    assert "'income'" in warning and "99999" in warning and "'age'" not in warning

    at.switch_page("pages/train.py").run()
    assert any("far outliers" in w for w in texts(at, "warning"))
    at.radio(key="cfg_scaling").set_value("robust").run()
    assert not any("far outliers" in w for w in texts(at, "warning"))
    run = train_tiny_run(at, db, depth=2).get_run(1)
    assert run.status is RunStatus.FINISHED and run.params["config"]["scaling"] == "robust"
    assert "robust scaling" in common.describe_params(run.params)
    tree = model_file.from_dict(RunStore(db).get_json(1, "model"))
    income = tree.feature_names.index("income")
    assert tree.x_scale[income] < 100  # the percentile span the worker scaled by, not the 99,989 range
