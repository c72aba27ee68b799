"""get_core.data.encoding's missing values policy "keep": no row dropped or filled, NaN left for the tree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data.encoding import DataSpec, Encoding, kept_missing_note, prepare


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 40
    return pd.DataFrame({"temp": rng.normal(20, 5, n).round(3), "colour": rng.choice(["red", "green", "blue"], n),
                         "y": rng.normal(size=n).round(4)})


def _spec(missing: str = "keep") -> DataSpec:
    return DataSpec(target="y", features=("temp", "colour"), missing=missing)


def test_kept_missing_values_lose_no_row_and_fill_no_cell(table):
    table.loc[[3, 7], "temp"] = np.nan
    table.loc[[4], "colour"] = np.nan
    table.loc[11, "y"] = np.nan  # a missing target still drops its row
    prepared = prepare(table, _spec())
    assert (prepared.n_target_missing, prepared.n_dropped, len(prepared.y)) == (1, 0, 39)
    assert prepared.imputed == {} and prepared.encoding.impute == {}
    assert prepared.kept_missing == {"temp": 2, "colour": 1}
    temp = prepared.X[:, prepared.feature_names.index("temp")]
    assert np.isnan(temp[[3, 7]]).all() and np.isfinite(np.delete(temp, [3, 7])).all()
    levels = [j for j, name in enumerate(prepared.feature_names) if name.startswith("colour=")]
    assert prepared.X[4, levels].tolist() == [0.0] * len(levels)  # a missing category sets no level


def test_an_encoding_that_keeps_missing_values_reads_back_from_its_json_and_scores_new_holes(table):
    encoding = prepare(table, _spec()).encoding
    again = Encoding.from_json(encoding.to_dict())
    assert again == encoding and again.keep_missing
    rows = table.head(2).assign(temp=[np.nan, 1.0])
    X, problems = again.encode(rows)
    assert problems == {} and np.isnan(X[0, 0])
    rows = table.head(2).assign(temp=["warm", 1.0])
    assert again.encode(rows)[1] == {0: "'temp' is not a number"}  # text is still refused
    assert "keep_missing" not in prepare(table, _spec("drop")).encoding.to_dict()  # stored runs read as before
    with pytest.raises(ValueError, match="keep_missing"):
        Encoding.from_json({**encoding.to_dict(), "keep_missing": "yes"})


def test_the_data_page_sentence_says_what_the_tree_does_with_the_holes(table):
    assert kept_missing_note(prepare(table, _spec())) is None
    table.loc[:4, "temp"] = np.nan
    table.loc[0, "colour"] = np.nan
    note = kept_missing_note(prepare(table, _spec()))
    assert note.startswith("12% of 'temp' and 2% of 'colour' are missing: no row is dropped")
    assert "which way those rows go" in note and "A missing 'colour' sets none of its levels" in note


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([None, np.nan, 1.5, -2.0, 3.25]), min_size=25, max_size=25),
       st.lists(st.sampled_from([None, "", "  ", "red", "blue", " red "]), min_size=25, max_size=25))
def test_any_pattern_of_holes_keeps_every_row_with_a_target(temps, colours):
    temp = pd.Series(temps, dtype=float)
    colour = pd.Series(colours, dtype=object)
    if temp.isna().all() or colour.str.strip().replace("", None).isna().all():
        return  # an all-missing column is refused by name (tests/data/test_columns.py)
    prepared = prepare(pd.DataFrame({"temp": temp, "colour": colour, "y": np.arange(25.0)}), _spec())
    assert len(prepared.y) == 25 and prepared.n_dropped == 0
    assert np.isnan(prepared.X[:, 0]).sum() == prepared.kept_missing.get("temp", 0) == temp.isna().sum()
    levels = prepared.X[:, 1:]
    assert np.isfinite(levels).all() and (levels.sum(axis=1) <= 1).all()
