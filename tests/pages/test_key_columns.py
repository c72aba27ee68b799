"""Key columns come first, so a 1000 px window does not clip them (issue 35): Runs' test score, the forest tab's
"forest RMSE", Compare's prediction time; the export buttons three a row and the Compare plots two a row."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from get_core.runs.store import RunStore
from tests.explorer_runs import finished_run

ROOT = Path(__file__).resolve().parents[2]
SHOWN_FIRST = 4  # columns a 1000 px window shows whole in each of these tables


@pytest.fixture
def run_id(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    yield finished_run(store, depth=2, name="demo run")
    store.close()


def _page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    assert not at.exception, at.exception
    return at


def test_runs_shows_the_test_score_among_its_first_columns(run_id):
    table = _page("runs").dataframe[0].value
    assert "test score" in list(table.columns)[:SHOWN_FIRST], list(table.columns)
    assert table["test score"].iloc[0].startswith("R\u00b2 0.")


def test_the_forest_tab_shows_forest_rmse_among_its_first_columns(run_id):
    at = _page("tree", run=run_id, node=1)
    table = next(d.value for d in at.dataframe if "forest RMSE" in d.value.columns)
    assert "forest RMSE" in list(table.columns)[:SHOWN_FIRST], list(table.columns)
    rows = [block for block in _walk(at._tree) if block.type == "flex_container"  # st.columns' row
            and any(node.type == "download_button" and node.key == "dl_json" for node in _walk(block))]
    assert len(rows) == 1 and len(rows[0].children) == 3, [len(r.children) for r in rows]  # 3 a row, not 6


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def test_compare_shows_prediction_time_among_its_first_columns(run_id):
    at = _page("compare", run=run_id)
    table = at.dataframe[0]
    order = table.proto.column_order or list(table.value.columns)
    assert "Prediction ms / 10,000 rows" in list(order)[:SHOWN_FIRST], list(order)
