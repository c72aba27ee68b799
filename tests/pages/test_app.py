"""The app through ``streamlit.testing.v1.AppTest``: data in, a run launched and finished, bad files explained."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from get_core.model import model_file
from get_core.runs import estimate
from get_core.runs.store import RunStatus, RunStore
from get_core.config import APP_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EXAMPLE = ROOT / "data" / "examples" / "airfoil_self_noise.csv"
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u23E9-\u23FF\uFE0F]")  # shown as boxes without a font
TARGET_LABEL = "Target (what the tree predicts)"


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    """A fresh run database per test; no run-time measurement is started (one is marked as under way)."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    (tmp_path / "calibration.measuring").write_text("held by the test")
    return path


def small_csv(rows: int = 120) -> bytes:
    table = pd.read_csv(EXAMPLE).head(rows).rename(columns={"target": "sound"})
    columns = list(table.columns)
    return table[[columns[0], "sound", *columns[1:-1]]].to_csv(index=False).encode()  # target not last


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60).run()


def widget(elements, label: str):
    return next(e for e in elements if e.label == label)


def texts(at: AppTest, kind: str) -> list[str]:
    """The elements' text as displayed: Markdown escapes (``\\$``, ``\\_``) removed."""
    return [re.sub(r"\\(.)", r"\1", str(e.value)) for e in getattr(at, kind)]


def assert_no_traceback(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def run_until(at: AppTest, predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        assert_no_traceback(at)
        if predicate(at):
            return
        time.sleep(0.5)
    raise AssertionError(f"not reached in {timeout} s; subheaders: {texts(at, 'subheader')}")


def train_tiny_run(at: AppTest, db: Path, depth: int) -> RunStore:
    """On the Train page: a tiny budget (2 starts x 20 epochs), Start, and wait until run 1 has finished."""
    at.slider(key="cfg_depth").set_value(depth).run()
    at.radio(key="cfg_budget").set_value("manual").run()
    at.number_input(key="cfg_starts").set_value(2).run()
    at.number_input(key="cfg_epochs").set_value(20).run()
    at.button(key="start").click().run()
    assert_no_traceback(at)
    run_until(at, lambda a: RunStore(db).get_run(1).status.is_finished(), timeout=120)
    return RunStore(db)


def upload(at: AppTest, name: str, content: bytes) -> AppTest:
    at.file_uploader[0].upload(name, content, "text/csv")
    return at.run()


def test_upload_choose_target_launch_a_tiny_run_and_see_it_finish(db):
    at = upload(app(), "sound.csv", small_csv())
    assert_no_traceback(at)
    widget(at.selectbox, TARGET_LABEL).set_value("sound").run()
    assert any("Ready: 120 rows, 5 model inputs, target 'sound'" in s for s in texts(at, "success"))

    at.switch_page("pages/train.py").run()
    at.slider(key="cfg_depth").set_value(2).run()
    at.radio(key="cfg_budget").set_value("manual").run()
    at.number_input(key="cfg_starts").set_value(2).run()
    at.number_input(key="cfg_epochs").set_value(20).run()
    key = estimate.shape_key(2, APP_DEFAULTS.leaf, 2, 5, 120)
    estimate.save_measurement(db.parent / "calibration.json", key, {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 4.0, "baselines": 1.0, "baselines_per_row": 0.001})
    at.run()
    assert any("Estimated run time: about" in c for c in texts(at, "caption"))
    at.button(key="start").click().run()
    assert_no_traceback(at)
    assert at.query_params["run"] == ["1"] or at.query_params["run"] == "1"
    assert at.title[0].value == "Runs" and widget(at.selectbox, "Run").value == 1  # the new run in view, opened
    assert texts(at, "subheader")[0].endswith(f"Run #1: sound.csv · depth 2 {APP_DEFAULTS.leaf}")
    run_until(at, lambda a: any(":material/check_circle:" in s for s in texts(a, "subheader")), timeout=120)
    assert texts(at, "metric")[2] != "–"  # test R²
    run = RunStore(db).get_run(1)
    assert run.status is RunStatus.FINISHED and run.params["data"]["target"] == "sound"
    # the estimate shown before Start goes with the run, and its time left counts down from it (issue 48)
    shown = estimate.search_estimate(120, 5, run.params, db.parent / "calibration.json")
    assert run.params["estimated_seconds"] == pytest.approx(shown.seconds, abs=0.05)

    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    table = at.dataframe[0].value
    assert table["id"].tolist() == [1] and table["status"].iloc[0] == "finished"
    shown = [*table["status"], *texts(at, "subheader"), *(o for s in at.selectbox for o in s.options)]
    assert any(o.startswith("#1 ") for o in shown) and not [t for t in shown if EMOJI.search(t)]  # no font needed


def test_a_semicolon_file_with_decimal_commas_is_read_as_numbers_and_said_so(db):
    table = pd.read_csv(EXAMPLE).head(60)
    content = table.to_csv(index=False, sep=";", decimal=",").encode()
    at = upload(app(), "european.csv", content)
    assert_no_traceback(at)
    assert any("Numbers with a decimal comma were read in" in c and "'target'" in c for c in texts(at, "caption"))
    assert any(f"Ready: 60 rows, {table.shape[1] - 1} model inputs, target 'target'" in s
               for s in texts(at, "success"))


def test_formatted_numbers_and_a_stray_quote_are_said_on_the_data_page(db):
    rows = [f'item{i},{5 * (i % 6)}%,"${1000 + 250 * (i % 4):,}",{i}' for i in range(40)]
    at = upload(app(), "report.csv", ("name,rate,price,y\n" + "\n".join(rows)).encode())
    assert_no_traceback(at)
    assert any("Formatted numbers were read as numbers in 'rate', 'price'" in c for c in texts(at, "caption"))
    rows = [f"item{i},{i},{i}" for i in range(40)]
    rows[5], rows[18] = '"Big TV,5,5', 'item 18",18,18'  # the second quote closes the first, 13 lines later
    at = upload(at, "shop.csv", ("name,price,y\n" + "\n".join(rows)).encode())
    assert_no_traceback(at)
    assert any("1 cell holds line breaks, the first in row 6, column 'name'" in w for w in texts(at, "warning"))


def test_names_with_markdown_characters_are_shown_literally(db):
    rows = "".join(f"{i % 7},{i % 5},{2 * i}\n" for i in range(30))
    at = upload(app(), "prices.csv", ("Cost ($),Tax_rate,Total ($)\n" + rows).encode())
    assert_no_traceback(at)
    ready = [str(s.value) for s in at.success]
    assert any("target 'Total (\\$)'" in s for s in ready)  # '$...$' would otherwise render as a formula
    assert any("target 'Total ($)'" in s for s in texts(at, "success"))


def test_a_saved_row_index_is_not_offered_as_a_feature_by_default(db):
    table = pd.read_csv(EXAMPLE).head(60)
    at = upload(app(), "indexed.csv", table.to_csv().encode())  # pandas writes its index as an unnamed column
    assert_no_traceback(at)
    assert any("Not offered by default: 'Unnamed: 0', which counts the rows" in i for i in texts(at, "info"))
    features = widget(at.multiselect, "Features").value
    assert "Unnamed: 0" not in features and len(features) == table.shape[1] - 1


def test_linear_leaves_offer_their_rule_and_the_run_trains_with_it(db):
    at = upload(app(), "sound.csv", small_csv())
    at.switch_page("pages/train.py").run()
    at.radio(key="cfg_leaf").set_value("constant").run()
    assert not [r for r in at.radio if r.label == "Linear leaves"]  # constant leaves: no such choice
    at.radio(key="cfg_leaf").set_value("linear").run()
    rule = widget(at.radio, "Linear leaves")
    assert rule.value == "gcv" and list(rule.options) == ["where they generalize", "always (paper)"]
    rule.set_value("ols").run()
    clip = widget(at.checkbox, "Keep each leaf within the targets it saw")
    assert clip.value is True
    clip.uncheck().run()
    run = train_tiny_run(at, db, depth=1).get_run(1)
    assert run.status is RunStatus.FINISHED
    assert run.params["config"]["leaf"] == "linear" and run.params["config"]["linear_leaves"] == "ols"
    assert run.params["config"]["clip_leaves"] is False
    assert not model_file.from_dict(RunStore(db).get_json(1, "model")).has_leaf_bounds  # the worker used it


def test_cancel_from_the_live_panel(db):
    at = upload(app(), "sound.csv", small_csv())
    at.switch_page("pages/train.py").run()
    at.radio(key="cfg_budget").set_value("manual").run()
    at.number_input(key="cfg_epochs").set_value(20000).run()
    at.button(key="start").click().run()
    run_until(at, lambda a: RunStore(db).get_run(1).progress > 0, timeout=90)
    widget(at.button, "Cancel run").click().run()
    run_until(at, lambda a: any(":material/stop_circle:" in s for s in texts(a, "subheader")), timeout=60)
    assert any("best tree found so far is kept" in w for w in texts(at, "warning"))


def test_a_constant_target_column_is_refused_in_words_not_swapped_for_another(db):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.random(40), "b": rng.random(40), "target": 3.0, "c": rng.random(40)})
    at = upload(app(), "flat.csv", table.to_csv(index=False).encode())
    assert_no_traceback(at)
    assert widget(at.selectbox, TARGET_LABEL).value == "target"
    errors = texts(at, "error")
    assert len(errors) == 1 and "'target' has the same value (3) in every usable row" in errors[0], errors
    assert "choose another target" in errors[0]
    assert not texts(at, "success") and "data_ready" not in at.session_state


def bad_table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"x": rng.random(30), "colour": rng.choice(["red", "blue"], 30), "blank": np.nan,
                         "y": rng.random(30)})


@pytest.mark.parametrize("name, content, delimiter, message", [
    ("semi.csv", bad_table().to_csv(index=False, sep=";").encode(), ", comma", "contains a semicolon (';'): choose it"),
    ("empty.csv", b"", "detect", "'empty.csv' is empty"),
    ("one_row.csv", b"a,b,c\n1,2,3\n", "detect", "has only 1 data row; GET needs at least 20"),
    ("dup.csv", b"a,b,a\n" + b"1,2,3\n" * 25, "detect", "Column name 'a' appears twice"),
    ("model.parquet", b"\x80\x04K\x01.", "detect", "not a readable Parquet file"),  # a pickle is never loaded
    ("notes.txt", b"Hello there, this is a note.\nIt has a few lines of prose\nand nothing like a table.\n"
     b"Just words, written by a person.\nThe end.\n", "detect", "'notes.txt' does not look like a table"),
], ids=["wrong-delimiter", "empty", "one-row", "duplicate-columns", "pickle-as-parquet", "prose"])
def test_bad_files_show_a_clear_message_and_no_traceback(db, name, content, delimiter, message):
    at = app()
    widget(at.selectbox, "Delimiter (text files)").set_value(delimiter).run()
    at = upload(at, name, content)
    assert_no_traceback(at)
    errors = texts(at, "error")
    assert len(errors) == 1 and message in errors[0], errors
    assert not at.session_state["data_ready"] if "data_ready" in at.session_state else True


def test_a_text_target_is_read_as_classes_not_refused(db):  # issue 33: it was refused as "not numeric"
    at = upload(app(), "colours.csv", bad_table().to_csv(index=False).encode())
    widget(at.selectbox, TARGET_LABEL).set_value("colour").run()
    assert_no_traceback(at)
    assert any("'colour' holds text, so the tree predicts a class" in c for c in texts(at, "caption"))
    assert not texts(at, "error") and any("classes of 'colour'" in s for s in texts(at, "success"))


def test_an_all_missing_column_is_named_and_refused_if_chosen(db):
    at = upload(app(), "blank.csv", bad_table().to_csv(index=False).encode())
    assert any("'blank' (empty)" in i for i in texts(at, "info"))
    features = widget(at.multiselect, "Features")
    assert "blank" not in features.value
    features.set_value([*features.value, "blank"]).run()
    assert_no_traceback(at)
    assert any("'blank' (empty) cannot be used as feature" in e for e in texts(at, "error"))


def test_missing_values_policy_shows_counts(db):
    table = bad_table().drop(columns="blank")
    table.loc[[2, 4], "x"] = np.nan
    at = upload(app(), "holes.csv", table.to_csv(index=False).encode())
    assert [m.value for m in at.metric] == ["30", "0", "0", "0"]  # kept by default (issue 47): no row lost
    assert any("7% of 'x' is missing: no row is dropped or filled in" in i for i in texts(at, "info"))
    widget(at.radio, "Rows with a missing feature value").set_value("drop").run()
    assert [m.value for m in at.metric][:3] == ["28", "0", "2"]
    widget(at.radio, "Rows with a missing feature value").set_value("impute").run()
    assert [m.value for m in at.metric] == ["30", "0", "0", "2"]
    assert any("Categories of 'colour': blue, red" in c for c in texts(at, "caption"))  # the estimator's groups
    assert any("Categories ('colour'): a category column is one term of a split" in i and "adds nothing" in i
               for i in texts(at, "info"))
    widget(at.radio, "Category columns").set_value("one-hot").run()
    assert any("One-hot encoded 'colour' → colour=blue, colour=red" in c for c in texts(at, "caption"))
    assert at.session_state["data_ready"]["spec"]["categorical"] == [] and "one_hot" not in \
        at.session_state["data_ready"]["spec"]


def test_an_example_dataset_can_be_used(db):
    at = app()
    widget(at.radio, "Source").set_value("Example dataset").run()
    widget(at.selectbox, "Example dataset").set_value("abalone.csv").run()
    assert_no_traceback(at)
    assert any("Ready: 4,177 rows, 10 model inputs" in s for s in texts(at, "success"))


def test_train_page_without_data_points_to_the_data_page(db):
    at = app()
    at.switch_page("pages/train.py").run()
    assert_no_traceback(at)
    assert any("Data page first" in i for i in texts(at, "info"))


def test_runs_page_renames_compares_and_deletes(db):
    store = RunStore(db)
    params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1}, "seed": 0,
              "data": {"target": "y", "features": ["x"]}}
    ids = [store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1) for _ in range(2)]
    for run_id in ids:
        store.start_run(run_id)
        store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = app()
    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    assert at.dataframe[0].value["id"].tolist() == [2, 1]
    assert "same" in at.dataframe[1].value.columns  # the side-by-side parameter table of the two runs
    widget(at.selectbox, "Run to rename or delete").set_value(1).run()
    widget(at.text_input, "New name").set_value("baseline run")
    widget(at.button, "Rename").click().run()
    assert store.get_run(1).name == "baseline run"
    widget(at.checkbox, "Yes, delete run #1 with its metrics and model").check().run()
    widget(at.button, "Delete run").click().run()
    assert_no_traceback(at)
    assert [r.run_id for r in store.list_runs()] == [2]


def test_the_train_page_offers_a_ten_second_budget_by_default_and_starts_and_epochs_only_by_hand(db):
    at = upload(app(), "sound.csv", small_csv())
    at.switch_page("pages/train.py").run()
    assert at.radio(key="cfg_budget").value == "about 10 s"
    assert not any(n.key == "cfg_starts" for n in at.number_input)
    key = estimate.shape_key(APP_DEFAULTS.depth, APP_DEFAULTS.leaf, 10, 5, 120)
    estimate.save_measurement(db.parent / "calibration.json", key, {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 4.0, "baselines": 1.0, "baselines_per_row": 0.001})
    at.run()
    shares = f"training {estimate.format_seconds(10)}"  # the budget is the GET fit's; baselines come after it
    assert any(shares in c for c in texts(at, "caption")), texts(at, "caption")
    at.radio(key="cfg_budget").set_value("manual").run()
    assert at.number_input(key="cfg_starts").value == 4 and at.number_input(key="cfg_epochs").value == 600


def test_the_data_page_warns_of_a_feature_that_gives_the_target_away_and_of_rows_lost_to_missing_values(db):
    """Issue 35, defect 6: Titanic's 'alive' (the target in words) and its mostly empty 'deck' (709 of 891 rows lost)
    sat under a green "Ready" with no hint."""
    from tests.data.test_leakage import titanic_like

    at = upload(app(), "titanic.csv", titanic_like().to_csv(index=False).encode())
    widget(at.selectbox, TARGET_LABEL).set_value("survived").run()
    assert_no_traceback(at)
    warnings = texts(at, "warning")
    assert any("'alive' gives the target away" in w and "leave 'alive' out" in w for w in warnings), warnings
    # kept by default (issue 47): no row is lost, and the page says what the tree does with the holes
    assert any("of 'deck'" in i and "no row is dropped" in i for i in texts(at, "info")), texts(at, "info")
    widget(at.radio, "Rows with a missing feature value").set_value("drop").run()
    warnings = texts(at, "warning")
    assert any("rows are left out because a feature is missing" in w and "'deck'" in w for w in warnings), warnings


def test_the_first_page_says_what_get_is_and_that_a_guessed_target_is_a_guess(db):
    """Issue 35, minors: no sentence said what GET is; the default target was the last column under a green Ready."""
    at = upload(app(), "cars.csv", pd.DataFrame({"mpg": [18.0, 15, 36, 24, 30] * 6, "weight": range(30),
                                                 "model_year": [70, 71, 72, 73, 74] * 6}).to_csv(index=False).encode())
    assert_no_traceback(at)
    assert any("oblique decision tree" in c and "random forest" in c for c in texts(at, "caption"))
    # the paper is an arXiv preprint whose conference submission was withdrawn: no venue is claimed
    assert any("arXiv:2411.17003" in c and "ICLR" not in c for c in texts(at, "caption"))
    assert any("The target was guessed: 'model_year'" in i for i in texts(at, "info")), texts(at, "info")
    widget(at.selectbox, TARGET_LABEL).set_value("mpg").run()
    assert not any("The target was guessed" in i for i in texts(at, "info"))
