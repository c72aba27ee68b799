"""GETClassifier on planted oblique classification trees (``tests.planted.planted_classes``): test accuracy against
the Bayes accuracy (1 - flip = 90%) and CART of the same depth, with ``time_budget`` seconds.

Per depth and seed: ``--rows`` training rows and 20,000 test rows from the same planted tree (dense splits on 6
features, 4 classes, 10% of labels flipped to another class), GETClassifier(depth, time_budget) with seed 0.

Usage: nice python -m bench.studies.planted_classes --depths 3 4 --seeds 0 1 2 --budget 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from get_core import GETClassifier
from tests.planted import planted_classes

BAYES = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 4])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--budget", type=float, default=10.0)
    args = parser.parse_args()
    print("| depth | seed | Bayes | GET test acc | GET train acc | CART test acc | GET seconds |\n"
          "|---:|---:|---:|---:|---:|---:|---:|")
    for depth in args.depths:
        for seed in args.seeds:
            X, y, _ = planted_classes(args.rows, depth, seed)
            X_test, y_test, _ = planted_classes(20000, depth, seed)  # the same tree (seed), other rows (n)
            start = time.perf_counter()
            model = GETClassifier(depth=depth, time_budget=args.budget, random_state=0).fit(X, y)
            seconds = time.perf_counter() - start
            cart = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y).score(X_test, y_test)
            print(f"| {depth} | {seed} | {100 * BAYES:.1f} | {100 * model.score(X_test, y_test):.2f} | "
                  f"{100 * model.tree_.meta['train_accuracy']:.2f} | {100 * cart:.2f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
