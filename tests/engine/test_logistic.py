"""Logistic leaves (issue 52): the per-leaf fit and its fallbacks (engine.logistic), GETClassifier(leaf="logistic"),
depth 0 (one logistic model) and GETClassifierCV's choice of the leaf."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from get_core import GETClassifier, GETClassifierCV, GETRegressor
from get_core.budget import Budget
from get_core.config import GETConfig
from get_core.engine import logistic
from get_core.engine.train import logistic_model, train
from get_core.model.tree import logistic_proba


def _linear(n=600, seed=0, classes=3, p=4):
    """Classes by a noisy linear score: a logistic model's problem, which class-share leaves only approximate."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    score = X @ np.linspace(1.0, 0.2, p) + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


@parametrize_with_checks([GETClassifier(depth=1, leaf="logistic", n_starts=2, n_epochs=4, random_state=0),
                          GETClassifierCV(depths=(0, 1), leaf="auto", n_starts=2, n_epochs=4, random_state=0)],
                         expected_failed_checks=lambda e: {
                             "check_sample_weight_equivalence_on_dense_data":
                                 "random starts and each leaf's folds depend on the row count",
                             "check_class_weight_classifiers": "no min_weight_fraction_leaf (test_classifier.py)"})
def test_sklearn_contract_with_logistic_leaves(estimator, check):
    check(estimator)


def test_logistic_leaves_predict_from_their_models_and_stay_off_0_and_1():
    X, y = _linear()
    model = GETClassifier(depth=1, leaf="logistic", n_starts=2, n_epochs=30, random_state=0).fit(X, y)
    tree = model.tree_
    assert tree.has_logistic_leaves and any(s is not None for s in tree.meta["leaf_strengths"])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba.min() > 0 and proba.max() < 1
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    np.testing.assert_array_equal(tree.predict(X), model.predict(X))
    np.testing.assert_array_equal(tree.predict_proba(X), proba)
    shares = GETClassifier(depth=1, n_starts=2, n_epochs=30, random_state=0).fit(X, y)
    assert model.score(X, y) > shares.score(X, y) + 0.05  # a linear boundary: the models beat two leaves' shares
    assert tree.meta["train_accuracy"] == pytest.approx(model.score(X, y))


def test_a_leaf_of_few_rows_or_a_single_class_keeps_its_shares():
    X, y = _linear(n=200)
    config = GETConfig(depth=1, n_starts=1, n_epochs=1, random_state=0)
    tree = train(X, y, config, classes=[0, 1, 2])
    Xs = tree.scale_X(X)
    leaf = tree.apply(X) - tree.n_leaves
    few = np.flatnonzero(leaf == 0)[: logistic.MIN_ROWS - 1]
    rest = np.flatnonzero(leaf == 1)
    rest = rest[y[rest] != 2]  # leaf 1 lacks class 2
    rows = np.concatenate([few, rest])
    tree = train(X[rows], y[rows], config, classes=[0, 1, 2])
    logistic.fit_logistic_leaves(tree, tree.scale_X(X[rows]), y[rows], None, 0)
    for i in range(tree.n_leaves):
        if tree.meta["leaf_strengths"][i] is None:
            np.testing.assert_array_equal(tree.logit_coefs[i], 0.0)
            assert tree.logit_mix[i] == 0.0
            probe = np.zeros((1, tree.n_features))
            np.testing.assert_allclose(logistic_proba(tree, probe, np.array([i])), tree.leaf_proba[i:i + 1],
                                       rtol=1e-12)
    assert Xs.shape == X.shape


def test_a_leaf_models_the_classes_it_has_rows_of_and_gives_the_others_the_mixed_in_share():
    X, y = _linear(n=600)
    y[y == 2] = np.where(np.arange((y == 2).sum()) < 2, 2, 1)  # class 2: two rows, fewer than FOLDS
    tree = logistic_model(X, y, GETConfig(random_state=0), [0, 1, 2])
    assert tree.meta["leaf_strengths"][0] is not None
    proba = tree.predict_proba(X)
    np.testing.assert_allclose(proba[:, 2], tree.logit_mix[0] / 3)
    assert (np.argmax(proba, axis=1) == y).mean() > 0.9


def test_pure_noise_leaves_keep_their_class_shares():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(400, 3)), rng.integers(0, 2, 400)
    tree = logistic_model(X, y, GETConfig(random_state=0), [0, 1])
    assert tree.meta["leaf_strengths"][0] in (None, 0.01)  # no signal: shares or the strongest penalty
    assert np.abs(tree.predict_proba(X) - 0.5).max() < 0.1


def test_depth_0_is_one_logistic_model_like_scikit_learns():
    X, y = _linear(classes=2)
    tree = logistic_model(X, y, GETConfig(random_state=0), [0, 1])
    assert tree.depth == 1 and not tree.weights.any() and tree.meta["single_model"]
    assert (tree.apply(X) == tree.n_leaves).all()  # the split has no terms: every row goes left
    np.testing.assert_array_equal(tree.logit_coefs[0], tree.logit_coefs[1])
    reference = make_pipeline(StandardScaler(), LogisticRegression(C=tree.meta["leaf_strengths"][0],
                                                                   solver="newton-cholesky")).fit(tree.scale_X(X), y)
    mix = tree.logit_mix[0]
    np.testing.assert_allclose(tree.predict_proba(X), (1 - mix) * reference.predict_proba(tree.scale_X(X)) + mix / 2,
                               atol=1e-6)


def test_class_and_sample_weights_move_the_logistic_leaves():
    X, y = _linear(classes=2)
    y = np.where(np.arange(len(y)) % 4 == 0, y, 0)  # class 1 rare
    plain = GETClassifier(depth=1, leaf="logistic", n_starts=1, n_epochs=5, random_state=0).fit(X, y)
    balanced = GETClassifier(depth=1, leaf="logistic", n_starts=1, n_epochs=5, random_state=0,
                             class_weight="balanced").fit(X, y)
    assert (balanced.predict(X) == 1).sum() > (plain.predict(X) == 1).sum()
    weights = np.where(y == 1, len(y) / (2 * (y == 1).sum()), len(y) / (2 * (y == 0).sum()))
    weighted = GETClassifier(depth=1, leaf="logistic", n_starts=1, n_epochs=5, random_state=0).fit(X, y, weights)
    np.testing.assert_allclose(weighted.predict_proba(X), balanced.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_the_search_picks_logistic_leaves_on_a_linear_table_and_constant_leaves_on_boxes():
    X, y = _linear(n=900)
    cv = GETClassifierCV(depths=range(0, 3), leaf="auto", n_starts=2, n_epochs=30, random_state=0).fit(X, y)
    assert {(r["depth"], r["leaf"]) for r in cv.cv_results_} == {
        (0, "logistic"), (1, "constant"), (1, "logistic"), (2, "constant"), (2, "logistic")}
    assert cv.best_leaf_ == "logistic" and cv.best_depth_ <= 1  # one model, or a split whose two models tie it
    X_new, y_new = _linear(n=900, seed=7)
    assert cv.score(X_new, y_new) > 0.83  # the Bayes rate's side: class-share leaves reach 0.6-0.7 here
    rng = np.random.default_rng(0)
    B = rng.random((900, 2))
    boxes = ((B[:, 0] > 0.5) ^ (B[:, 1] > 0.5)).astype(int)  # XOR: no linear model, two axis splits
    cv = GETClassifierCV(depths=range(0, 3), leaf="auto", n_starts=2, n_epochs=60, random_state=0).fit(B, boxes)
    assert cv.best_depth_ == 2 and cv.score(B, boxes) > 0.95


def test_leaf_logistic_only_and_depth_0_needs_logistic_leaves():
    X, y = _linear(n=300)
    cv = GETClassifierCV(depths=(0, 1), leaf="logistic", n_starts=1, n_epochs=5, random_state=0).fit(X, y)
    assert {r["leaf"] for r in cv.cv_results_} == {"logistic"} and cv.tree_.has_logistic_leaves
    with pytest.raises(ValueError, match="depth 0"):
        GETClassifierCV(depths=(0, 1), n_starts=1, n_epochs=5).fit(X, y)
    with pytest.raises(ValueError, match="class_leaf='logistic' is for classification"):
        train(X, y.astype(float), GETConfig(depth=1, n_starts=1, n_epochs=1, class_leaf="logistic"))
    with pytest.raises(ValueError):
        GETRegressor(leaf="logistic").fit(X, y)


def test_a_budgeted_search_with_depth_0_replays_its_plan():
    X, y = _linear(n=300)
    params = dict(depths=(0, 1, 2), leaf="auto", time_budget=3, random_state=0)
    first = GETClassifierCV(**params).fit(X, y)
    assert first.plan_ is not None
    again = GETClassifierCV(**{**params, "replay_plan": first.plan_}).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))


@pytest.mark.parametrize("soft_phase", [True, False])
@pytest.mark.parametrize("settings", [dict(max_split_features=1), dict(polish=True), dict(time_budget=2),
                                      dict(class_weight="balanced")])
def test_sparse_polished_budgeted_and_weighted_fits_get_logistic_leaves(settings, soft_phase, monkeypatch):
    monkeypatch.setattr(logistic, "SOFT_PHASE", soft_phase)
    X, y = _linear(n=400)
    model = GETClassifier(depth=2, leaf="logistic", n_starts=2, n_epochs=20, random_state=0, **settings).fit(X, y)
    tree = model.tree_
    assert tree.has_logistic_leaves and tree.meta["config"]["class_leaf"] == "logistic"
    assert model.score(X, y) > 0.75  # class shares at depth 2: about 0.7
    if "max_split_features" in settings:
        assert tree.split_widths.max() <= 1
    shares = GETClassifier(depth=2, n_starts=2, n_epochs=20, random_state=0, **settings).fit(X, y).tree_
    if "time_budget" not in settings and not soft_phase:  # the same splits: the leaves are fitted after them
        np.testing.assert_array_equal(tree.weights, shares.weights)


def test_a_tie_in_validation_accuracy_goes_to_the_lower_validation_log_loss():
    X, y = _linear(n=600)
    cv = GETClassifierCV(depths=(1, 2), leaf="auto", n_starts=1, n_epochs=5, random_state=0, patience=1).fit(X, y)
    for depth in (1, 2):
        pair = [t for t, r in zip(cv.search_trees_, cv.cv_results_) if r["depth"] == depth]
        assert len(pair) == 2
    search = GETClassifierCV(leaf="auto")
    X_val, y_val = X[:200], y[:200]
    constant, logistic_tree = [t for t, r in zip(cv.search_trees_, cv.cv_results_) if r["depth"] == 1]
    assert search._tiebreak(logistic_tree, X_val, y_val, None) > search._tiebreak(constant, X_val, y_val, None)


def test_a_spent_budget_or_a_limit_leaves_the_smaller_leaves_their_shares_or_soft_trained_models():
    X, y = _linear(n=900)
    config = GETConfig(depth=2, n_starts=1, n_epochs=5, random_state=0)
    tree = train(X, y, config, classes=[0, 1, 2])
    Xs = tree.scale_X(X)
    rows = np.bincount(tree.apply(X) - tree.n_leaves, minlength=tree.n_leaves)
    spent = logistic.fit_logistic_leaves(tree, Xs, y, None, 0, budget=Budget(0.0))
    assert spent.meta["logistic_leaves_tried"] == 1  # the first leaf always runs: the one with the most rows
    modelled = [i for i, s in enumerate(spent.meta["leaf_strengths"]) if s is not None]
    assert modelled == [int(np.argmax(rows))]
    trained = (np.full((tree.n_leaves, 3), 0.5), np.ones((tree.n_leaves, 3, tree.n_features)))
    kept = logistic.fit_logistic_leaves(tree, Xs, y, None, 0, limit=1, trained=trained)
    untried = [i for i in range(tree.n_leaves) if i != int(np.argmax(rows))]
    np.testing.assert_array_equal(kept.logit_coefs[untried], 1.0)  # the soft phase's models, where no fit ran
    assert (kept.logit_mix[untried] > 0).all()
    limited = logistic.fit_logistic_leaves(tree, Xs, y, None, 0, limit=2)
    assert limited.meta["logistic_leaves_tried"] == 2
    assert {i for i, s in enumerate(limited.meta["leaf_strengths"]) if s is not None} <= set(np.argsort(-rows)[:2])


def test_a_budgeted_logistic_fit_records_its_leaf_count_and_replays_it():
    X, y = _linear(n=400)
    first = GETClassifier(depth=3, leaf="logistic", time_budget=2, random_state=0).fit(X, y)
    decisions = dict(first.tree_.meta["plan"]["decisions"])
    assert decisions["logistic_leaves"] == first.tree_.meta["logistic_leaves_tried"] >= 1
    again = GETClassifier(depth=3, leaf="logistic", replay_plan=first.tree_.meta["plan"]).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), first.predict_proba(X))


def test_the_auto_search_scores_each_fit_with_logistic_leaves_and_with_its_class_shares(monkeypatch):
    X, y = _linear(n=400)
    params = dict(depths=(1, 2), n_starts=2, n_epochs=10, random_state=0, patience=2)
    auto = GETClassifierCV(leaf="auto", **params).fit(X, y)
    constant = GETClassifierCV(leaf="constant", **params).fit(X, y)
    for depth in (1, 2):
        pair = [t for t, r in zip(auto.search_trees_, auto.cv_results_) if r["depth"] == depth]
        assert [t.has_logistic_leaves for t in pair] == [False, True]
        np.testing.assert_array_equal(pair[0].weights, pair[1].weights)  # one fit, its two leaf types
    assert not np.array_equal(auto.search_trees_[0].weights, constant.search_trees_[0].weights)  # trained for logits
    monkeypatch.setattr(logistic, "SEARCH_SOFT_PHASE", False)  # the variant: splits trained for class shares
    refit = GETClassifierCV(leaf="auto", **params).fit(X, y)
    for depth, shares in zip((1, 2), constant.search_trees_):
        pair = [t for t, r in zip(refit.search_trees_, refit.cv_results_) if r["depth"] == depth]
        for tree in pair:
            np.testing.assert_array_equal(tree.weights, shares.weights)
