"""AppTest flows of the what-if tools on a run trained on raw columns (abalone: categorical 'Sex', target 'rings'):
"What would change this?" on the Predict page finds a change that meets the goal, says why when none can; the
what-if editor's sliders move the prediction; a clicked leaf on the Tree page shows the shortest way in."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from get_core import counterfactual
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from get_core.views import what_if
from pages import what_if_ui

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"depth": 3, "leaf": "constant", "n_starts": 1, "n_epochs": 10, "alpha_range": [5.0, 150.0], "n_alphas": 2,
          "learning_rate": 0.01, "l1": 0.0, "polish": False, "device": "cpu"}


@pytest.fixture(scope="module")
def abalone() -> pd.DataFrame:
    return pd.read_csv(ROOT / "data" / "examples" / "abalone.csv").head(200).rename(columns={"target": "rings"})


@pytest.fixture(scope="module")
def trained(tmp_path_factory, abalone):
    path = tmp_path_factory.mktemp("runs") / "runs.sqlite"
    store = RunStore(path)
    spec = DataSpec(target="rings", features=tuple(c for c in abalone.columns if c != "rings"))
    run_id = store.create_run({"config": CONFIG, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0},
                              to_parquet_bytes(abalone), "abalone.csv", n_rows=len(abalone), n_features=8)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    store.close()
    return path, results


@pytest.fixture
def predict_page(monkeypatch, trained, abalone) -> AppTest:
    """The Predict page with the run chosen and abalone's rows uploaded: row 1 is explained."""
    path, results = trained
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    at = AppTest.from_file(str(ROOT / "pages" / "predict.py"), default_timeout=60)
    at.query_params["run"] = str(results.run.run_id)
    at.run()
    at.file_uploader(key="predict_file").upload("abalone.csv", abalone.to_csv(index=False).encode(), "text/csv")
    _ok(at.run())
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _labelled(widgets, label: str):
    return next(w for w in widgets if w.label == label)


def _ask(at: AppTest, mode: str, low: float = 0.0, high: float = 0.0, locked=(), support: int | None = None
         ) -> AppTest:
    _labelled(at.selectbox, "Prediction wanted").set_value(mode)
    if support is not None:
        _labelled(at.number_input, "Training rows an answer's leaf needs at least").set_value(support)
    _labelled(at.number_input, "Low").set_value(low)
    _labelled(at.number_input, "High").set_value(high)
    _labelled(at.multiselect, "Features that may not change").set_value(list(locked))
    _labelled(at.button, "Find the smallest change").click()
    _ok(at.run())
    return at


def test_a_goal_on_a_row_gives_the_changes_that_meet_it(predict_page, trained, abalone):
    _, results = trained
    tree, encoding = results.tree, results.encoding
    x = encoding.transform(abalone.head(1))[0]
    now = tree.predict(x[None])[0]
    higher = np.unique(tree.predict(results.X_train))
    goal = float(higher[higher > now][0]) if np.any(higher > now) else float(higher[-1])
    at = _ask(predict_page, "at least", low=goal)
    whole = what_if.whole_columns(tree, x, results.X_train, encoding)
    expected = counterfactual(tree, x, (goal, None), encoding=encoding, reference=results.X_train, integers=whole,
                              n=what_if_ui.ANSWERS)
    assert all(answer.prediction >= goal for answer in expected)
    told = [s.value for s in at.success][-len(expected):]  # after the upload's "Scored 200 rows."
    assert told == [what_if.sentence(tree, answer) for answer in expected]
    assert told[0].endswith(f"in leaf {expected[0].leaf}; this rests on {expected[0].support.rows} "
                                        "training rows.")
    for table, answer in zip(at.table, expected):  # side by side, nearest first
        shown = table.value
        assert list(shown.index) == [c.feature for c in answer.changes]
        assert set(shown.index) <= set(encoding.columns)  # a raw column: 'Sex', never 'Sex=F'
        typed = abalone.head(1).drop(columns="rings").assign(**{f: float(v) for f, v in shown["needed"].items()
                                                               if f not in encoding.categories})
        typed = typed.assign(**{f: v for f, v in shown["needed"].items() if f in encoding.categories})
        assert tree.predict(encoding.transform(typed))[0] >= goal  # typed back as shown, the goal holds
    assert _labelled(at.selectbox, "Prediction wanted").value == "at least"


def test_an_unreachable_goal_and_locks_that_block_it_say_why(predict_page, trained):
    _, results = trained
    top = float(results.tree.predict(results.X_train).max())
    at = _ask(predict_page, "at least", low=top + 100)
    assert "No leaf of this tree gives a prediction of at least" in at.warning[-1].value
    at = _ask(at, "at least", low=top)
    tree = results.tree
    top_rows = tree.n_samples[tree.apply(results.X_train[tree.predict(results.X_train) == top]) - 1].max()
    if top_rows < 10:  # the leaves that give it rest on few rows: the page says so
        assert "fewer than the 10 an answer needs: lower that number" in at.warning[-1].value
    columns = list(results.encoding.columns)
    at = _ask(at, "at least", low=top, locked=columns, support=0)
    if not at.success or "Nothing needs to change" not in at.success[-1].value:
        assert "unlock features" in at.warning[-1].value


def test_the_what_if_editor_moves_the_prediction_with_a_slider(predict_page, trained, abalone):
    _, results = trained
    tree, encoding = results.tree, results.encoding
    slider = _labelled(predict_page.slider, "Shell weight")
    target = slider.max
    slider.set_value(target)
    at = predict_page.run()
    _ok(at)
    edited = abalone.head(1).drop(columns="rings").assign(**{"Shell weight": target})
    expected = tree.predict(encoding.transform(edited))[0]
    metric = _labelled(at.metric, "Prediction after the edits")
    assert metric.value == f"{expected:.4g}"


def test_a_clicked_leaf_shows_the_shortest_way_into_it(monkeypatch, trained):
    path, results = trained
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    tree = results.tree
    leaf = next(t for t in range(tree.n_leaves, 2 * tree.n_leaves) if not tree.is_empty(t))
    at = AppTest.from_file(str(ROOT / "pages" / "tree.py"), default_timeout=60)
    at.query_params["run"] = str(results.run.run_id)
    at.query_params["node"] = str(leaf)
    _ok(at.run())
    _labelled(at.button, "Find the shortest way in").click()
    _ok(at.run())
    assert f"in leaf {leaf}; this rests on" in at.success[-1].value
