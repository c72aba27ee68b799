"""Issue 35, defect 6: leakage and lost rows are said before training, naming the column and what to do."""

from __future__ import annotations

import numpy as np
import pandas as pd

from get_core.data import leakage
from get_core.data.encoding import DataSpec, prepare


def titanic_like(n: int = 891, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    survived = rng.integers(0, 2, n)
    deck = np.where(rng.random(n) < 0.77, None, rng.choice(list("ABCDE"), n))
    return pd.DataFrame({"survived": survived, "pclass": rng.integers(1, 4, n), "age": rng.normal(30, 10, n),
                         "alive": np.where(survived == 1, "yes", "no"), "deck": deck})


def notes(df: pd.DataFrame, target: str, features: list[str], missing: str = "drop") -> tuple:
    spec = DataSpec(target=target, features=tuple(features), missing=missing)
    prepared = prepare(df, spec)
    return leakage.dropped_rows_note(df, spec, prepared), leakage.leak_notes(df, spec, prepared)


def test_the_target_under_other_names_and_a_mostly_empty_column_are_named():
    df = titanic_like()
    dropped, leaks = notes(df, "survived", ["pclass", "age", "alive", "deck"])
    assert dropped is not None and "'deck'" in dropped and f"of {len(df):,} rows" in dropped and "impute" in dropped
    assert len(leaks) == 1 and "'alive'" in leaks[0] and "leave 'alive' out" in leaks[0]


def test_an_honest_table_gets_no_note():
    df = titanic_like().drop(columns=["alive"])
    dropped, leaks = notes(df, "survived", ["pclass", "age", "deck"], missing="impute")
    assert dropped is None and leaks == []
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 4))
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(size=500))
    assert notes(frame, "y", list("abcd")) == (None, [])


def test_a_feature_that_is_the_target_rescaled_is_named():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"price": rng.gamma(2, 1000, 400), "carat": rng.random(400)})
    frame["price_eur"] = 0.92 * frame["price"]
    _, leaks = notes(frame, "price", ["carat", "price_eur"])
    assert len(leaks) == 1 and "'price_eur' alone predicts 'price'" in leaks[0]


def test_parts_that_add_up_to_the_target_are_named():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"fare": rng.gamma(3, 5, 600), "tip": rng.gamma(1, 2, 600), "tolls": rng.choice([0, 6.5], 600),
                          "distance": rng.gamma(2, 2, 600)})
    frame["total"] = frame["fare"] + frame["tip"] + frame["tolls"]
    _, leaks = notes(frame, "total", ["fare", "tip", "tolls", "distance"])
    assert len(leaks) == 1 and "'fare', 'tip', 'tolls' add up to 'total'" in leaks[0], leaks
    assert "distance" not in leaks[0]
