"""GETRegressorCV's search observer and kept trees: every search fit is announced, scored and kept, in order, and
watching a search never changes its result."""

import numpy as np

from get_core import GETRegressorCV
from get_core.config import GETConfig

SEARCH = dict(depths=(1, 2, 3), n_starts=2, n_epochs=6, patience=5, random_state=0)


def _data(n: int = 120):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, 4))
    return X, np.where(X[:, 0] + X[:, 1] > 1, 1.0, 0.0) + 0.3 * X[:, 2]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def fit_started(self, config: GETConfig, refit: bool) -> None:
        self.events.append(("fit", config.depth, config.max_split_features, refit))

    def scored(self, result: dict, tree) -> None:
        self.events.append(("scored", result, tree))


def test_an_observed_search_ends_exactly_as_an_unobserved_one():
    X, y = _data()
    plain = GETRegressorCV(**SEARCH).fit(X, y)
    watched = GETRegressorCV(**SEARCH).fit(X, y, observer=Recorder())
    assert watched.cv_results_ == plain.cv_results_
    np.testing.assert_array_equal(watched.predict(X), plain.predict(X))


def test_each_depth_is_announced_then_scored_with_its_tree_and_the_refit_comes_last():
    X, y = _data()
    recorder = Recorder()
    cv = GETRegressorCV(**SEARCH).fit(X, y, observer=recorder)
    fits = [e for e in recorder.events if e[0] == "fit"]
    assert fits == [("fit", 1, None, False), ("fit", 2, None, False), ("fit", 3, None, False),
                    ("fit", cv.best_depth_, None, True)]
    scored = [e for e in recorder.events if e[0] == "scored"]
    assert [r["depth"] for _, r, _ in scored] == [1, 2, 3]
    assert [e[0] for e in recorder.events[:2]] == ["fit", "scored"]  # announced before, scored after
    for (_, result, tree), kept, entry in zip(scored, cv.search_trees_, cv.cv_results_):
        assert tree is kept and tree.depth == result["depth"]
        assert {k: result[k] for k in entry} == entry
        assert result["n_parameters"] == tree.n_nonzero_parameters
        assert result["widest_split"] == int(tree.split_widths.max())
        assert tree.n_samples[0] == 80  # fitted on the search's train part (2/3 of 120 rows), not refit


def test_the_validated_tree_is_the_kept_tree_of_the_chosen_depth():
    X, y = _data()
    cv = GETRegressorCV(**SEARCH).fit(X, y)
    chosen = [t for t, r in zip(cv.search_trees_, cv.cv_results_) if r["depth"] == cv.best_depth_]
    assert cv.validated_tree_ is chosen[0]
    assert cv.tree_.n_samples[0] == 120  # the refit on all rows is another tree


def test_the_features_per_split_path_reports_each_k_with_its_tree():
    X, y = _data()
    recorder = Recorder()
    cv = GETRegressorCV(depths=(2,), n_starts=2, n_epochs=6, random_state=0,
                        max_split_features="auto").fit(X, y, observer=recorder)
    scored = [(r["max_split_features"], r["widest_split"]) for kind, r, *_ in recorder.events if kind == "scored"]
    assert [k for k, _ in scored] == [1, 2, 3, None]  # 5 >= 4 features: the dense tree, tried once
    assert all(k is None or width <= k for k, width in scored)
    assert recorder.events[-1] == ("fit", 2, cv.best_max_split_features_, True)
