"""python -m bench.studies.missing_values: the holes and categories it makes, each work-around, resume, report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench.studies import missing_values as mv
from tests.bench.shared import needs_datasets


def _frame(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))


def test_holes_fall_in_half_of_the_columns_at_the_rate_and_by_value_when_asked():
    X = _frame(4000)
    for pattern, rate in mv.MISSING.items():
        holed = mv.with_holes(X, pattern, np.random.default_rng(1))
        share = holed.isna().mean()
        assert (share > 0).sum() == 2  # half of the four columns
        assert share[share > 0].between(rate - 0.03, rate + 0.03).all()
    value = mv.with_holes(X, "value30", np.random.default_rng(1))
    column = value.columns[value.isna().any()][0]
    top = X[column] > X[column].median()
    assert value[column][top].isna().mean() > 2 * value[column][~top].isna().mean()  # the largest go missing most


def test_a_numeric_table_gets_binned_levels_and_a_text_column_becomes_a_category():
    binned = mv.with_categories(_frame(), np.random.default_rng(0))
    levels = [c for c in binned if isinstance(binned[c].dtype, pd.CategoricalDtype)]
    assert len(levels) == 2 and all(binned[c].nunique() == mv.BINS for c in levels)
    text = mv.with_categories(pd.DataFrame({"a": [1.0, 2.0], "colour": ["red", "blue"]}), np.random.default_rng(0))
    assert isinstance(text["colour"].dtype, pd.CategoricalDtype) and text["a"].dtype == np.float64


def test_dropping_rows_trains_on_complete_rows_and_still_scores_every_row():
    X = _frame().to_numpy(copy=True)
    X[::3, 0] = np.nan
    y = X[:, 1] * 2
    model = mv.make_method("drop", False, [], 2, 1.0, 0).set_params(estimator__n_epochs=5, estimator__n_starts=1)
    model.fit(X, y)
    assert model.n_kept_ == int((~np.isnan(X[:, 0])).sum())
    assert np.isfinite(model.predict(X)).all()


@needs_datasets("airfoil_self_noise")
@pytest.mark.timeout(300)
def test_a_tiny_run_fits_each_work_around_resumes_and_reports(tmp_path, capsys):
    out = tmp_path / "mv.jsonl"
    args = ["--tables", "airfoil_self_noise", "--categorical-tables", "airfoil_self_noise", "--patterns", "value30",
            "categorical", "--methods", "drop", "indicator", "native", "native-dd", "onehot", "hgb",
            "--max-rows", "120", "--depth", "2",
            "--time-budget", "0.3", "--out", str(out)]
    mv.main(args)
    records = {(r["pattern"], r["method"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(records) == [("categorical", "hgb"), ("categorical", "native"), ("categorical", "onehot"),
                               ("value30", "drop"), ("value30", "hgb"), ("value30", "indicator"), ("value30", "native"),
                               ("value30", "native-dd")]
    assert records[("value30", "hgb")]["terms_per_split"] is None
    assert records[("categorical", "onehot")]["terms_per_split"] >= 1
    # a binned column is one term of a native split however many levels it has; one-hot counts each level
    assert records[("categorical", "native")]["terms_per_split"] <= 5  # airfoil's 5 columns, 2 of them binned
    assert records[("value30", "native")]["train_rows"] == 90  # no row dropped
    assert records[("value30", "drop")]["train_rows"] < records[("value30", "indicator")]["train_rows"] == 90
    mv.main(args)  # resumes: nothing new
    assert len(out.read_text().splitlines()) == 8
    capsys.readouterr()
    mv.main(["--report", "--out", str(out)])
    text = capsys.readouterr().out
    assert "| airfoil_self_noise |" in text and "**categorical**" in text
    assert "| native | native-dd |" in text


@needs_datasets("classification/german_credit")
def test_a_table_with_text_is_refused_for_holes_before_any_fit(tmp_path):
    with pytest.raises(SystemExit, match="'checking_status' holds text"):
        mv.main(["--tables", "german_credit", "--out", str(tmp_path / "x.jsonl")])
    assert not (tmp_path / "x.jsonl").exists()


def test_the_paired_lines_give_each_variant_s_mean_difference_and_its_standard_error():
    records = [{"method": m, "table": t, "seed": seed, "score": score}
               for t in ("a", "b") for seed in (0, 1)
               for m, score in (("native", 70.0 + seed), ("native-dd", 72.0 + 3 * seed), ("mean", 71.0))]
    (line,) = mv._paired_lines(records)
    # differences from native: 2, 4, 2, 4 -> mean 3, standard deviation 1.155, standard error 0.58
    assert line.startswith("native-dd minus, paired by table and seed") and "native +3.00 ± 0.58 (4 cells)" in line
    assert "mean +2.50 ± 0.87 (4 cells)" in line and "indicator" not in line
