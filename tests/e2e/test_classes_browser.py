"""In a real browser, issue 33's road for a class target: a generated 3-class table (a text column, a boolean, missing
values, a categorical feature), choose the target, answer "a class", train, read the accuracy, click a leaf and read
its class shares."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import browser_page, require_chromium, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def three_class_table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Grades 1, 2, 3 cut by two oblique lines in (a, b); a categorical colour, a boolean flag, a free-text note
    (left out: text is not a feature) and a few missing values in b."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    grade = np.where(a + b < 0.8, 1, np.where(a - b > 0.1, 2, 3))
    b_shown = b.copy()
    b_shown[rng.choice(n, 6, replace=False)] = np.nan
    return pd.DataFrame({"note": [f"visit {i}" for i in range(n)], "a": a, "b": b_shown,
                         "colour": rng.choice(["red", "blue", "green"], n), "flag": rng.random(n) < 0.5,
                         "grade": grade})


def test_a_class_target_from_upload_to_a_leafs_class_shares(tmp_path):
    require_chromium()
    path = tmp_path / "grades.csv"
    three_class_table().to_csv(path, index=False)
    with serve_training_app(tmp_path) as (url, db), browser_page(1400, 1000) as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("Predict a class or a number?", exact=False).wait_for(timeout=60_000)  # 'grade': 1, 2, 3
        assert page.get_by_text("'grade' holds 3 whole-number values", exact=False).count() >= 1
        page.get_by_text("a class", exact=True).click()
        page.get_by_text("classes of 'grade'", exact=False).wait_for(timeout=30_000)

        page.get_by_role("link", name="Continue to Train").click()
        page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
        page.get_by_text("manual", exact=True).click()
        epochs = page.get_by_label("Epochs per alpha stage")
        epochs.fill("200")
        epochs.press("Enter")
        page.wait_for_timeout(1000)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=240_000)
        page.get_by_text("Test accuracy", exact=True).first.wait_for(timeout=30_000)
        run = RunStore(db).get_run(1)
        assert run.status is RunStatus.FINISHED and run.params["data"]["task"] == "classification"
        scores = RunStore(db).get_json(1, "class_scores")
        assert page.get_by_text(f"{scores['accuracy']:.1%}", exact=True).count() >= 1

        # the diagram opens with deep levels collapsed (issue 35): a leaf named in the address is revealed
        tree = model_file.from_dict(RunStore(db).get_json(1, "model"))
        leaf_id = tree.n_leaves + int(np.flatnonzero(tree.n_samples[tree.n_leaves - 1:] > 0)[0])
        page.goto(f"{url}/tree?run=1&node={leaf_id}")
        page.locator(f"#get-node-{leaf_id}").wait_for(timeout=60_000)
        page.get_by_text(f"Node {leaf_id} (leaf", exact=False).wait_for(timeout=30_000)
        shares = page.get_by_text("probabilities ", exact=False).first
        shares.wait_for(timeout=30_000)
        text = shares.inner_text()
        assert all(str(grade) in text for grade in (1, 2, 3)) and "%" in text
