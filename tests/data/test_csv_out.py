"""CSV files the app writes: formula-like cells escaped (OWASP's CSV-injection rule), numbers left as numbers."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data.csv_out import FORMULA_STARTS, csv_bytes, safe_cell


def read_back(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def test_a_hyperlink_formula_from_the_scored_rows_is_written_as_text():
    table = pd.DataFrame({"name": ['=HYPERLINK("http://evil.example","click")', "plain"], "x": [1.0, 2.0]})
    cells = read_back(csv_bytes(table))["name"].tolist()
    assert cells == ['\'=HYPERLINK("http://evil.example","click")', "plain"]


def test_every_formula_start_is_escaped_in_cells_and_in_column_names():
    starts = list(FORMULA_STARTS)
    table = pd.DataFrame({f"{s}col": [f"{s}cmd|' /C calc'!A0"] for s in starts})
    back = read_back(csv_bytes(table))
    assert [c[0] for c in back.columns] == ["'"] * len(starts)
    assert [v[0] for v in back.iloc[0]] == ["'"] * len(starts)


def test_negative_numbers_stay_numbers_in_numeric_and_in_text_columns():
    table = pd.DataFrame({"y": [-1.5, 2.0], "get_prediction": [-3.25, np.nan], "code": ["-7", "+2.5e3"]})
    back = pd.read_csv(io.BytesIO(csv_bytes(table)))
    np.testing.assert_array_equal(back["y"], [-1.5, 2.0])
    np.testing.assert_array_equal(back["get_prediction"], [-3.25, np.nan])
    np.testing.assert_array_equal(back["code"], [-7.0, 2500.0])


def test_a_category_column_is_escaped_too():
    table = pd.DataFrame({"c": pd.Categorical(["@SUM(A1)", "b"])})
    assert read_back(csv_bytes(table))["c"].tolist() == ["'@SUM(A1)", "b"]


@settings(deadline=None, derandomize=True)  # no wall-clock limit: the suite must pass on a busy machine
@given(st.lists(st.text(), min_size=1, max_size=8))
def test_no_written_cell_starts_a_formula_and_unescaping_gives_the_text_back(values):
    table = pd.DataFrame({"t": values})
    back = read_back(csv_bytes(table))["t"].tolist()
    expected = [safe_cell(v) for v in values]
    for cell in expected:
        assert not cell.startswith(FORMULA_STARTS) or float(cell) == float(cell.strip())
    assert [c[1:] if c != v else c for c, v in zip(expected, values)] == values
    assert len(back) == len(values)
