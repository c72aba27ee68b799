"""AppTest of the explorer pages (Tree, Compare, Predict) on a class run trained by the real worker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from get_core.views import labels
from tests.runs.test_class_run import cancelled_before_baselines, class_run, three_classes

ROOT = Path(__file__).resolve().parents[2]
CANCELLED = 2  # run 2: run 1 as if cancelled before its baselines


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("classes") / "runs.sqlite"
    store = RunStore(path)
    run_id = class_run(store, three_classes(160), config={"depth": 3})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    assert cancelled_before_baselines(store, run_id, three_classes(160), config={"depth": 3}) == CANCELLED
    store.close()
    return path


@pytest.fixture
def store(db, monkeypatch):
    monkeypatch.setenv("GET_EXPLORER_DB", str(db))
    store = RunStore(db)
    yield store
    store.close()


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = str(value)
    return at.run()


def counts_table(at: AppTest):
    return next(d.value for d in at.dataframe if "training rows (model)" in d.value.columns)


def ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_the_tree_page_of_a_class_run_speaks_of_classes(store):
    results = load_results(store, 1)
    tree = results.tree
    at = page("tree", run=1, node=1)
    ok(at)
    summary = " ".join(m.value for m in at.markdown)
    assert "groups" in summary and "classifies" in summary  # the plain-language summary speaks of classes
    counts = counts_table(at)
    assert counts["class"].tolist() == tree.classes and counts["train rows"].sum() == len(results.y_train)
    assert counts["test rows"].sum() == len(results.y_test)
    accuracy = next(m for m in at.metric if m.label == "Accuracy on test rows here").value
    assert float(accuracy[:-1]) == pytest.approx(100 * np.mean(tree.predict(results.X_test) == results.y_test),
                                                 abs=0.06)
    assert any("filled with the colour of their class" in c.value for c in at.caption)
    terms = next(d.value for d in at.dataframe if "share of the split" in d.value.columns)
    shares = [float(v.rstrip("%")) for v in terms["share of the split"]]
    assert shares == sorted(shares, reverse=True) and sum(shares) == pytest.approx(100, abs=0.5)
    one_hot = tuple(results.encoding.categories)  # a one-hot column's levels are one row, as in the summary
    groups = {labels.one_hot_group(tree.feature_names[j], one_hot) for j in np.flatnonzero(tree.weights[0])}
    assert sorted(terms["feature"]) == sorted(groups)


def test_the_class_summary_says_where_the_tree_errs_on_the_runs_own_test_rows(store):
    results = load_results(store, 1)
    tree, X, y = results.tree, results.X_test, results.y_test
    assert np.array_equal(y, np.asarray(store.get_json(1, "predictions")["y_true"]))  # the run's own test split
    leaf, miss = tree.apply(X), tree.predict(X) != y
    assert miss.any(), "the fixture's tree should err on some test rows"
    most = max(np.unique(leaf[miss]), key=lambda t: (np.sum(miss & (leaf == t)), -t))
    wrong, rows = int(np.sum(miss & (leaf == most))), int(np.sum(leaf == most))
    predicted = tree.predict(X[leaf == most])[0]
    truths = set(y[miss & (leaf == most)])  # the true classes of the rows it gets wrong
    at = page("tree", run=1, node=1)
    ok(at)
    text = " ".join(m.value for m in at.markdown)
    assert (f"It errs most in leaf {most}: it predicts '{predicted}' there, and {wrong} of its {rows} test "
            f"row{'s' if rows > 1 else ''}") in text
    sentence = text.split(f"It errs most in leaf {most}")[1].split(". ")[0]
    assert all(f"'{c}'" in sentence.split(" there, ")[1] for c in truths), sentence


def test_a_leaf_of_a_class_run_reads_its_class_and_every_share(store):
    tree = load_results(store, 1).tree
    leaf = next(t for t in range(tree.n_leaves, 2 * tree.n_leaves) if not tree.is_empty(t))
    at = page("tree", run=1, node=leaf)
    ok(at)
    code = next(c.value for c in at.code if c.value.startswith("class "))
    k = int(np.argmax(tree.leaf_proba[leaf - tree.n_leaves]))
    assert code.startswith(f"class {tree.classes[k]} (")
    for c in tree.classes:
        assert f"{c} " in code.split("\n")[1]
    assert "predicted probability" in counts_table(at).columns


def test_compare_puts_get_beside_cart_the_forest_and_boosting_with_confusion_matrices(store):
    results = load_results(store, 1)
    at = page("compare", run=1)
    ok(at)
    table = next(d.value for d in at.dataframe if "Test accuracy" in d.value.columns)
    assert table["Model"].tolist()[0] == "GET" and {"Random forest", "HistGradientBoosting"} <= set(table["Model"])
    assert any(name.startswith("CART (depth ") for name in table["Model"])  # tuned, named with its depth
    assert {"Balanced accuracy", "Log loss", "ROC AUC"} <= set(table.columns) and "Test R\u00b2" not in table.columns
    get_accuracy = np.mean(results.tree.predict(results.X_test) == results.y_test)
    assert table["Test accuracy"].iloc[0] == pytest.approx(get_accuracy)
    charts = [c for c in at.get("plotly_chart")]
    assert len(charts) == len(table) + 1  # one confusion matrix per model, and the reliability chart
    sizes = next(d.value for d in at.dataframe if "Parameters" in d.value.columns)
    boosting = sizes[sizes["Model"] == "HistGradientBoosting"].iloc[0]
    assert int(boosting["Parameters"]) > 0 and not sizes.isna().any().any()  # every tree it grew; no "None" cell
    assert [i.value for i in at.info if "on this table" in i.value]  # the advice: is the single tree the right tool


def test_a_class_run_cancelled_before_its_baselines_fits_class_baselines_from_compare(store):
    at = page("compare", run=CANCELLED)
    ok(at)
    assert any("ended before its baselines (CART, random forest, HistGradientBoosting)" in i.value for i in at.info)
    at.button(key="fit_baselines").click().run()
    ok(at)
    assert store.get_json(CANCELLED, "baselines")["task"] == "classification"
    table = next(d.value for d in at.dataframe if "Test accuracy" in d.value.columns)
    assert {"GET", "Random forest", "HistGradientBoosting"} <= set(table["Model"])
    assert any(name.startswith("CART (depth ") for name in table["Model"])
    assert len(at.get("plotly_chart")) == len(table) + 1  # confusion matrices and the reliability chart


def test_the_confusion_matrix_and_reliability_points_count_the_rows():
    from get_core.views import class_compare

    y = np.array(["a", "a", "b", "b"], dtype=object)
    proba = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.55, 0.45]])
    x, right, n = class_compare.reliability_points(y, proba, ["a", "b"], bins=2)
    assert n.tolist() == [4]  # every confidence is at least 50%: one bin
    assert right.tolist() == [0.5] and x.tolist() == pytest.approx([(0.9 + 0.6 + 0.8 + 0.55) / 4])
    figure = class_compare.confusion_figure([[1, 1], [1, 1]], ["a", "b"], "GET")
    assert figure.data[0].text.tolist() == [[1, 1], [1, 1]]


def test_predict_gives_a_typed_rows_class_probabilities_and_path(store):
    tree = load_results(store, 1).tree
    at = page("predict", run=1)
    ok(at)
    at.number_input(key=next(n.key for n in at.number_input if n.label == "a")).set_value(0.05)
    at.number_input(key=next(n.key for n in at.number_input if n.label == "b")).set_value(0.05)
    at.button[0].click().run()
    ok(at)
    shown = next(m for m in at.metric if m.label == "Predicted class").value
    probabilities = next(d.value for d in at.dataframe if "probability" in d.value.columns)
    assert probabilities["class"].tolist() == tree.classes
    best = probabilities["probability"].map(lambda v: float(v.strip("%<"))).idxmax()
    assert shown == tree.classes[best]
    assert any(c.value.startswith("leaf ") and ": class " in c.value for c in at.code)


def test_scored_rows_carry_the_class_and_a_probability_per_class():
    from get_core.views import explain
    from tests.trees import make_class_tree

    tree, X, _ = make_class_tree(depth=2, labels=["no", "yes"])
    table = explain.explain_rows(tree, X[:5])
    assert list(table.columns[:3]) == ["prediction", "probability no", "probability yes"]
    assert table["prediction"].tolist() == tree.predict(X[:5]).tolist()
    np.testing.assert_array_equal(table[["probability no", "probability yes"]].to_numpy(), tree.predict_proba(X[:5]))
    row = explain.explain_row(tree, X[0])
    assert row["prediction"] == tree.predict(X[:1]).tolist()[0] and row["probabilities"] == list(
        tree.predict_proba(X[:1])[0])
