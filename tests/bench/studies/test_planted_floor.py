"""bench.studies.planted_floor: its reference trees are the planted tree (same routing of every row) or close to it,
and its report has one row per training size and method."""

import numpy as np
from sklearn.metrics import r2_score

from bench.studies.planted_floor import DEPTH, normal_angles, reference_splits, report, tree_with_splits
from tests.planted import noise_ceiling, planted_oblique, planted_paths, planted_tree


def test_the_planted_reference_routes_every_row_as_the_planted_tree_does():
    X, y, _ = planted_oblique(3000, DEPTH, 7, noise=0.3)
    weights, thresholds = reference_splits(X, 7, "planted")
    tree = tree_with_splits(X, y, weights, thresholds)
    X_new = np.random.default_rng(1).random((2000, X.shape[1]))  # rows the leaves were not fitted on
    assert np.array_equal(tree.decision_path(X_new), planted_paths(X_new, *planted_tree(DEPTH, 7)[:2]))
    assert np.allclose(normal_angles(weights, 7), 0.0, atol=1e-5)  # arccos near 1 keeps about 1e-6 degrees


def test_a_side_classifier_on_many_rows_recovers_the_planted_splits():
    X, y, _ = planted_oblique(20_000, DEPTH, 3, noise=0.3)
    X_te, y_te, clean_te = planted_oblique(4000, DEPTH, 3, noise=0.3)
    weights, thresholds = reference_splits(X, 3, "logistic-true")
    assert np.median(normal_angles(weights, 3)) < 0.5
    tree = tree_with_splits(X, y, weights, thresholds)
    assert r2_score(y_te, tree.predict(X_te)) / noise_ceiling(clean_te, 0.3) > 0.985


def test_the_report_gives_every_seed_and_the_median_per_size_and_method():
    def record(rows, seed, method, share, **extra):
        return {"rows": rows, "seed": seed, "method": method, "share_of_ceiling": share, "train_r2": 90.0 + seed,
                **extra}

    planted = [{**record(6000, seed, "planted", 100.0, median_angle=0.0), "train_r2": 90.5} for seed in (0, 1)]
    text = report([record(6000, 1, "get-10", 97.0), record(6000, 0, "get-10", 95.0), record(6000, 2, "get-10", 99.5),
                   record(6000, 0, "svm-true", 98.0, median_angle=0.4), record(12000, 0, "get-10", 99.0), *planted])
    lines = text.splitlines()
    # train R2 90, 91 and 92 on seeds 0, 1, 2; the planted tree's 90.5 on seeds 0 and 1 (none on 2): gaps -0.5, +0.5
    get_10 = "| 6,000 | get-10 | 95.0 / 97.0 / 99.5 | 97.0 | 91.00 | +0.00 |  |"
    svm = "| 6,000 | svm-true | 98.0 | 98.0 | 90.00 | -0.50 | 0.40 |"
    assert get_10 in lines and svm in lines and "| 6,000 | planted | 100.0 / 100.0 | 100.0 | 90.50 |  | 0.00 |" in lines
    assert lines.index(svm) < lines.index(get_10)  # references first
    assert lines[-1] == "| 12,000 | get-10 | 99.0 | 99.0 | 90.00 |  |  |"  # no planted tree on 12,000 rows here
