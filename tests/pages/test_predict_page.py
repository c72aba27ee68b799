"""AppTest flows of the Predict page on a run trained on raw columns (abalone: categorical 'Sex', target 'rings'):
its exported model file scores the same files the run does; extra columns and unusable rows do not refuse a file."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from get_core.model import model_file
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from pages.common import number as common_number

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "predict.py")
CONFIG = {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 10, "alpha_range": [5.0, 150.0], "n_alphas": 2,
          "learning_rate": 0.01, "l1": 0.0, "polish": False, "device": "cpu"}


@pytest.fixture(scope="module")
def abalone() -> pd.DataFrame:
    return pd.read_csv(ROOT / "data" / "examples" / "abalone.csv").head(200).rename(columns={"target": "rings"})


@pytest.fixture(scope="module")
def trained(tmp_path_factory, abalone):
    """A finished run on abalone's raw columns (its store's path, its results), and its model as the Tree page
    exports it, with the run's encoding."""
    path = tmp_path_factory.mktemp("runs") / "runs.sqlite"
    store = RunStore(path)
    spec = DataSpec(target="rings", features=tuple(c for c in abalone.columns if c != "rings"))
    run_id = store.create_run({"config": CONFIG, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0},
                              to_parquet_bytes(abalone), "abalone.csv", n_rows=len(abalone), n_features=8)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    store.close()
    return path, results, model_file.model_json(results.tree, indent=1, encoding=results.encoding).encode()


@pytest.fixture(params=["A run", "A model file"])
def page(request, monkeypatch, trained) -> AppTest:
    """The Predict page with the run chosen, or with its exported model file loaded instead: both score alike."""
    path, results, model_file = trained
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["model_source"] = request.param
    at.query_params["run"] = str(results.run.run_id)
    at.run()
    if request.param == "A model file":
        at.file_uploader(key="model_file").upload("get_run1.json", model_file, "application/json").run()
    _ok(at)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _score(at: AppTest, table: pd.DataFrame, index: bool = False) -> pd.DataFrame:
    content = table.to_csv(index=index).encode()
    at.file_uploader(key="predict_file").upload("abalone.csv", content, "text/csv").run()
    _ok(at)
    return at.dataframe[0].value


def test_the_run_and_its_model_file_score_raw_rows_alike(page, trained, abalone):
    _, results, _ = trained
    scored = _score(page, abalone)
    assert page.success[0].value == f"Scored {len(abalone)} rows."
    expected = results.tree.predict(results.encoding.transform(abalone))
    np.testing.assert_array_equal(scored["prediction"].to_numpy(dtype=float), expected)
    sex = next(w for w in page.selectbox if w.label == "Sex")  # the typed row asks for a level, not Sex=F as a number
    assert list(sex.options) == ["F", "I", "M"]
    assert not any(w.label.startswith("Sex=") for w in page.number_input)


def test_columns_the_model_does_not_use_are_ignored_and_named(page, abalone):
    table = abalone.assign(id=[f"shell-{i}" for i in range(len(abalone))])
    scored = _score(page, table, index=True)  # a pandas index saved with the file: 'Unnamed: 0'
    assert page.success[0].value == f"Scored {len(abalone)} rows."
    assert [i.value for i in page.info] == ["Ignored columns the model does not use: 'Unnamed: 0', 'id'."]
    assert scored["prediction"].notna().all()


def test_rows_with_a_blank_cell_are_listed_and_kept_in_place_without_a_prediction(page, abalone):
    table = abalone.astype({"Length": object})
    table.loc[[5, 9], "Sex"] = None  # rows 6 and 10 of the file
    table.loc[12, "Length"] = "long"
    scored = _score(page, table)
    assert page.warning[0].value == (
        f"Scored {len(table) - 3} of {len(table)} rows. 3 cannot be scored and are left empty in the predictions "
        "(row 6: 'Sex' is empty; row 10: 'Sex' is empty; row 13: 'Length' is not a number).")
    assert len(scored) == len(table) and scored["prediction"].isna().tolist() == [i in (5, 9, 12)
                                                                                  for i in range(len(table))]
    page.number_input(key="explain_row").set_value(6).run()
    assert [i.value for i in page.info] == ["Row 6 cannot be scored: 'Sex' is empty."]


@pytest.fixture(scope="module")
def categories(tmp_path_factory, abalone):
    """A run as the Data page trains it by default: 'Sex' handed to the estimator as categories, holes kept (its
    store's path, results), its model file with the run's encoding, and the bare model file (version 5, no
    encoding) a library user saves."""
    path = tmp_path_factory.mktemp("runs") / "runs.sqlite"
    store = RunStore(path)
    table = abalone.copy()
    table.loc[[3, 8], "Sex"] = None
    spec = DataSpec(target="rings", features=tuple(c for c in abalone.columns if c != "rings"), missing="keep",
                    one_hot=False)
    run_id = store.create_run({"config": CONFIG, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0},
                              to_parquet_bytes(table), "abalone.csv", n_rows=len(table), n_features=10)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    store.close()
    with_encoding = model_file.model_json(results.tree, indent=1, encoding=results.encoding).encode()
    return path, results, with_encoding, model_file.model_json(results.tree).encode()


@pytest.mark.parametrize("source", ["A run", "A model file", "A bare model file"])
def test_a_category_model_scores_an_unseen_level_and_a_blank_from_any_source(monkeypatch, categories, abalone,
                                                                             source):
    path, results, with_encoding, bare = categories
    assert results.tree.inputs.columns[0].kind == "category" and '"version": 5' in bare.decode()
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["model_source"] = "A run" if source == "A run" else "A model file"
    at.query_params["run"] = str(results.run.run_id)
    at.run()
    if source != "A run":
        at.file_uploader(key="model_file").upload("model.json", bare if "bare" in source else with_encoding,
                                                  "application/json").run()
    _ok(at)
    table = abalone.drop(columns="rings").head(20).astype({"Sex": object})
    table.loc[2, "Sex"], table.loc[4, "Sex"] = "X", None  # a level never seen in training, and a blank
    scored = _score(at, table)
    assert at.success[0].value == "Scored 20 rows." and scored["prediction"].notna().all()
    assert np.allclose(scored["prediction"].to_numpy(dtype=float), results.tree.predict(table))
    assert [w.value for w in at.warning] == ["Column 'Sex': 1 row holds 'X', never seen in training; a category "
                                             "never seen in training adds nothing to any split."]
    next(b for b in at.button if b.label == "Find the smallest change").click().run()  # row 1's what-if
    _ok(at)
    sex = next(w for w in at.selectbox if w.label == "Sex" and w.key.startswith("one_row_"))  # the typed row
    assert list(sex.options) == ["F", "I", "M", "(missing)"]  # its levels, or missing (or a value typed in)
    sex.set_value("(missing)")
    next(b for b in at.button if b.label == "Predict").click().run()
    _ok(at)
    typed = results.tree.predict(pd.DataFrame([{c: (None if c == "Sex" else w.value) for c, w in zip(
        table.columns, [next(w for w in [*at.selectbox, *at.number_input] if w.label == c
                             and w.key.startswith("one_row_")) for c in table.columns])}]))
    assert any(m.label == "Prediction" and m.value == common_number(typed[0], 6) for m in at.metric)
