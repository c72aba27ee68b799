"""In a real browser, issue 33's road for a class target: a generated 3-class table (a text column, a boolean, missing
values, a categorical feature), choose the target, answer "a class", train, read the accuracy, click a leaf and read
its class shares, read the confusion matrices on Compare, predict a typed row on Predict, and run the downloaded
Python export on the generated rows."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_chromium, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
# each drawn chart's title and its traces' text and x (plotly keeps a typed array's values in ``_inputArray``)
FIGURES = ("() => { const v = a => (a && a._inputArray) ? a._inputArray : (a && a.length !== undefined && "
           "typeof a !== 'string' ? Array.from(a) : a);"
           " return Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({"
           "title: ((gd.querySelector('.gtitle') || {}).textContent || ''),"
           "data: (gd.data || []).map(t => ({text: v(t.text), x: v(t.x)}))})); }")


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
        page.get_by_text("Predict a class or a number?", exact=False).wait_for(timeout=BUSY_MS)  # 'grade': 1, 2, 3
        assert page.get_by_text("'grade' holds 3 whole-number values", exact=False).count() >= 1
        page.get_by_text("a class", exact=True).click()
        page.get_by_text("classes of 'grade'", exact=False).wait_for(timeout=BUSY_MS)

        page.get_by_role("link", name="Continue to Train").click()
        page.get_by_role("button", name="Start training").wait_for(timeout=BUSY_MS)
        page.get_by_text("manual", exact=True).click()
        epochs = page.get_by_label("Epochs per alpha stage")
        epochs.fill("200")
        epochs.press("Enter")
        page.wait_for_timeout(1000)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=240_000)
        page.get_by_text("Test accuracy", exact=True).first.wait_for(timeout=BUSY_MS)
        run = RunStore(db).get_run(1)
        assert run.status is RunStatus.FINISHED and run.params["data"]["task"] == "classification"
        scores = RunStore(db).get_json(1, "class_scores")
        assert page.get_by_text(f"{scores['accuracy']:.1%}", exact=True).count() >= 1

        # the diagram opens with deep levels collapsed (issue 35): a leaf named in the address is revealed
        tree = model_file.from_dict(RunStore(db).get_json(1, "model"))
        leaf_id = tree.n_leaves + int(np.flatnonzero(tree.n_samples[tree.n_leaves - 1:] > 0)[0])
        page.goto(f"{url}/tree?run=1&node={leaf_id}")
        page.locator(f"#get-node-{leaf_id}").wait_for(timeout=BUSY_MS)
        page.get_by_text(f"Node {leaf_id} (leaf", exact=False).wait_for(timeout=BUSY_MS)
        shares = page.get_by_text("probabilities ", exact=False).first
        shares.wait_for(timeout=BUSY_MS)
        text = shares.inner_text()
        assert all(str(grade) in text for grade in (1, 2, 3)) and "%" in text

        # Compare: the confusion matrices of GET and the forest, as the page draws them, count the run's test rows
        store = RunStore(db)
        baselines = store.get_json(1, "baselines")
        expected = {"GET": store.get_json(1, "class_scores")["confusion"],
                    "Random forest": baselines["models"]["random_forest"]["confusion"]}
        page.goto(f"{url}/compare?run=1")
        page.get_by_text("Confusion matrices on the", exact=False).wait_for(timeout=120_000)
        page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'))"
                               ".filter(t => t.textContent === 'Random forest').length >= 1", timeout=BUSY_MS)
        figures = page.evaluate(FIGURES)
        shown = {f["title"]: f["data"][0]["text"] for f in figures if f["title"] in expected}
        assert shown == expected, [f["title"] for f in figures]
        assert sum(map(sum, shown["GET"])) == len(load_results(store, 1).y_test)

        # Predict: a typed row gets the class of its leaf, and that leaf's probability of every class
        page.goto(f"{url}/predict?run=1")
        tab = page.get_by_role("tab", name="Type one row")
        tab.wait_for(timeout=BUSY_MS)
        tab.click()
        for name in ("a", "b"):
            box = page.get_by_label(name, exact=True)
            box.wait_for(timeout=BUSY_MS)
            box.fill("0.05")
            box.press("Tab")
        page.get_by_role("button", name="Predict", exact=True).click()
        metric = page.locator("[data-testid='stMetric']").filter(has_text="Predicted class")
        metric.wait_for(timeout=BUSY_MS)
        leaf = int(page.locator("[data-testid='stMetric']").filter(has_text="Leaf").locator(
            "[data-testid='stMetricValue']").inner_text())
        proba = tree.leaf_proba[leaf - tree.n_leaves]
        predicted = metric.locator("[data-testid='stMetricValue']").inner_text()
        assert predicted == str(tree.classes[int(np.argmax(proba))])
        page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'))"
                               ".some(t => t.textContent.includes('predicted class'))", timeout=BUSY_MS)
        bars = next(f for f in page.evaluate(FIGURES) if f["title"] == f"Node {leaf}: predicted class probabilities")
        assert [t["x"][0] for t in bars["data"]] == pytest.approx([p for p in proba if p > 0])
        assert [t["text"].split(" ")[0] for t in bars["data"]] == [str(c) for c, p in zip(tree.classes, proba) if p > 0]

        # the Python export, downloaded from the Tree page and run by this project's Python on the generated rows
        page.goto(f"{url}/tree?run=1")
        button = page.get_by_role("button", name="Python code", exact=True)
        button.wait_for(timeout=BUSY_MS)
        with page.expect_download(timeout=BUSY_MS) as download:
            button.click()
        code = tmp_path / "exported.py"
        download.value.save_as(code)
        results = load_results(store, 1)
        X = np.vstack([results.X_train, results.X_test])
        rows = tmp_path / "rows.json"
        rows.write_text(json.dumps(X.tolist()))
        script = ("import importlib.util, json, sys; spec = importlib.util.spec_from_file_location('m', sys.argv[1]);"
                  " m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m);"
                  " print(json.dumps([m.predict(x) for x in json.load(open(sys.argv[2]))]))")
        ran = subprocess.run([sys.executable, "-c", script, str(code), str(rows)], capture_output=True, text=True,
                             timeout=120, check=True)
        assert json.loads(ran.stdout) == tree.predict(X).tolist()
        store.close()
