"""Which per-leaf soft loss trains GETClassifier, and how much smoothing its leaf probabilities get.

For each table: one stratified 75/25 split (seed 0), GET at depth 4 with a fixed budget (4 starts x 2 stages x 300
epochs, no polish, seed 0), once per soft loss (``engine.classes.SOFT_LOSSES``): training Gini (the Brier score at
the leaves' class shares, the hard criterion both share), training and test accuracy. Then, on the Brier trees, the
test log loss of the leaf probabilities at several smoothing strengths (``classes.smoothed``; 0 = raw shares, a
share of 0 clipped at 1e-15 as scikit-learn's log_loss would need).

Usage: nice python -m bench.studies.class_loss --data-dir ../shared/datasets/classification --datasets pima_diabetes banknote wine_quality_red segment
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score

from bench.classify.run import DATA_DIR, load_table, stratified_split
from get_core.config import GETConfig
from get_core.engine import classes
from get_core.engine.train import train

STRENGTHS = (0.0, 0.5, 1.0, 2.0, 5.0)


def log_loss(proba: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-15, None))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| dataset | loss | train Gini | train acc | test acc | " +
          " | ".join(f"test log loss s={s:g}" for s in STRENGTHS) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(STRENGTHS))
    for name in args.datasets:
        X, y = load_table(args.data_dir / f"{name}.csv")
        X_tr, X_te, y_tr, y_te = stratified_split(X, y, 0, 0.25)
        labels = list(range(int(y.max()) + 1))
        for loss in classes.SOFT_LOSSES:
            tree = train(X_tr, y_tr, GETConfig(depth=args.depth, n_starts=4, n_epochs=args.epochs, random_state=0),
                         classes=labels, class_loss=loss)
            counts = tree.node_counts[tree.n_leaves - 1:]
            leaf = tree.apply(X_te) - tree.n_leaves
            losses = [log_loss(classes.smoothed(counts, s)[leaf], y_te) if loss == "brier" else np.nan
                      for s in STRENGTHS]
            print(f"| {name} | {loss} | {tree.meta['train_brier']:.4f} | {100 * tree.meta['train_accuracy']:.2f} | "
                  f"{100 * accuracy_score(y_te, tree.predict(X_te)):.2f} | " +
                  " | ".join("" if np.isnan(v) else f"{v:.3f}" for v in losses) + " |", flush=True)


if __name__ == "__main__":
    main()
