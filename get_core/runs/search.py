"""Runs whose depth, or features per split, are chosen for the user: the paper's protocol (``GETRegressorCV``, or for a
class target ``GETClassifierCV``, scored by validation accuracy where the regressor scores R2) in the worker, shown
live and kept tree by tree.

A run asks for it with ``params["search"] = {"depths": [1, ..., D], "split_features": "auto" | None}``: the depths
to try (one depth: the config's, fixed) and whether k is chosen on the path of ``config.SPLIT_FEATURE_PATH``
(None: the config's ``max_split_features``, fixed). A class search may add ``"leaf"``: "auto" (``GETClassifierCV``
scores each depth's tree with its logistic leaves and with its class shares, keeping both as points of the chart,
and may try depth 0, one logistic model), or one kind; without it the config's ``class_leaf`` (``spec.search_leaf``).
``GETRegressorCV`` splits the run's training rows 2:1 into the search's train and validation parts, fits each
depth (per k) on the train part and scores it on the validation part, stops after ``patience`` depths without gain,
and refits the chosen depth and k on all training rows.

As each search fit is scored, the worker stores (through its ``Channel``):
  * ``search-tree-<key>``: that fit's tree (model JSON), ``key`` naming its depth, k and logistic leaves
    (``spec.tree_key``). These are the trees the search itself fitted on its train
    part and scored on validation, not refits: refitting every depth on all rows would double the run's time, and
    they are the trees whose validation score the chart shows. Only the chosen one is refit;
  * ``search``: every point so far (depth, k, L1, validation and search-train score, parameters a reader checks,
    widest split, tree key), the name of its score (``score``: ``validation_r2`` or ``validation_accuracy``) and, once
    known, the choice; the run's page draws it live (``views.search_chart``);
  * ``model``: the tree of the highest validation score so far, so a cancel that has to cut the worker off (the hard
    stop, ``worker.Heartbeat``) still keeps a tree.
At the end ``model`` is the refit. A search cancelled in time keeps the tree the search chose among the fits so far
(``validated_tree_``: a deeper tree must beat a shallower one by ``tol``, and a path of k prefers
fewer features within ``sparsity_tolerance``), not its refit: a refit stopped early is no better founded. The
run's message says which tree it kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from get_core.config import GETConfig, split_feature_path
from get_core.data.encoding import model_frame
from get_core.estimator import GETClassifierCV, GETRegressorCV, estimator_params
from get_core.model import model_file
from get_core.model.tree import ObliqueTree
from get_core.runs.channel import Channel, Ending
from get_core.runs.records import RunStatus
from get_core.runs.spec import FITS, SEARCH, TREE_PREFIX, tree_key
from get_core.views.search_chart import features_label, point_label


@dataclass
class FitWindow:
    """Where the fit under way sits in the run: its index among the fits, how many are planned (the run's progress
    is ``(index + fraction) / planned``), a label for the run's phase (None: the trainer's own), and its stages'
    place on the run's loss curves: after the ``first_stage`` stages of the earlier fits (a k-sparse fit has one
    stage more than a dense one, so this is a running count); ``n_stages`` is the current fit's, as reported."""

    index: int = 0
    planned: int = 1
    label: str | None = None
    first_stage: int = 0
    n_stages: int = 0

    def next_fit(self, index: int) -> None:
        self.index, self.first_stage, self.n_stages = index, self.first_stage + self.n_stages, 0


@dataclass
class SearchRecorder:
    """The ``estimator.SearchObserver`` of a run: moves the progress window along and stores each scored fit."""

    channel: Channel
    window: FitWindow
    spec: Mapping[str, Any]
    n_features: int
    points: list[dict] = field(default_factory=list)
    fits: list[dict] = field(default_factory=list)  # per fit begun: its first stage on the curves and its name
    score: str = "validation_r2"  # the search's score in its points: validation_r2, or validation_accuracy
    best: tuple[float, str] | None = None  # (validation score, tree key) of the best point so far
    search: Any = None  # the search estimator: at its refit, its ``best_depth_`` (a config's depth is at least 1)
    _started: int = 0

    def fit_started(self, config: GETConfig, refit: bool) -> None:
        self.window.next_fit(self._started)
        self._started += 1
        k = config.max_split_features
        splits = "" if not self.spec.get("split_features") else f", {_features_text(k)}"
        depth = (getattr(self.search, "best_depth_", config.depth) if refit else
                 self._next_depth(k, config.depth))
        what = "depth 0 (one logistic model)" if depth == 0 else f"depth {depth}"
        if refit:
            self.window.planned = self.window.index + 1
            self.window.label = f"refit of {what}{splits} on all training rows"
            self._save(status="refitting")
        else:
            self.window.planned = self.window.index + 1 + self._remaining(depth, k) + 1  # this, later, refit
            self.window.label = f"search: {what}{splits}"
        # one logistic model trains no splits: no curve, and the curves do not wait for one (views.curves)
        self.fits.append({"first_stage": self.window.first_stage, "name": f"{'refit, ' if refit else ''}{what}{splits}",
                          **({"curve": False} if depth == 0 else {})})
        self.channel.put_json(FITS, self.fits)  # the curves draw each fit on its own epochs (views.curves)

    def _next_depth(self, k: int | None, depth: int) -> int:
        """The depth of the search fit now starting for ``k``: the one after the last scored for ``k`` (the search
        goes up the depths one fit each); the config's ``depth`` is at least 1, so depth 0 is told apart so."""
        depths = list(self.spec["depths"])
        done = [p["depth"] for p in self.points if p["max_split_features"] == k]
        later = [d for d in depths if not done or d > done[-1]]
        return later[0] if later else depth

    def scored(self, result: dict, tree: ObliqueTree) -> None:
        key = tree_key(result["depth"], result["max_split_features"], result.get("leaf"))
        self.channel.put_json(TREE_PREFIX + key, model_file.to_dict(tree))
        self.points.append({**{k: _plain(v) for k, v in result.items()}, "key": key})
        if self.best is None or result[self.score] > self.best[0]:
            self.best = (result[self.score], key)
            self.channel.put_json("model", model_file.to_dict(tree))
            self.channel.on_stop(_cancelled_ending(self.points, key))
        self._save(status="searching")

    def finish(self, status: str, chosen: Mapping[str, Any] | None) -> None:
        self._save(status=status, chosen=dict(chosen) if chosen else None)

    def _remaining(self, depth: int, k: int | None) -> int:
        """Search fits still possible after (depth, k): the later depths of this k and every depth of later ks."""
        depths = list(self.spec["depths"])
        ks = split_feature_path("auto", self.n_features) if self.spec.get("split_features") else [k]
        later_ks = len(ks) - 1 - ks.index(k) if k in ks else 0
        return len(depths) - 1 - depths.index(depth) + later_ks * len(depths)

    def _save(self, status: str, chosen: dict | None = None) -> None:
        self.channel.put_json(SEARCH, {"depths": list(self.spec["depths"]),
                                       "split_features": self.spec.get("split_features"), "status": status,
                                       "score": self.score, "points": self.points, "chosen": chosen})


def search_fit(X_train: np.ndarray, y_train: np.ndarray, config: GETConfig, spec: Mapping[str, Any],
               feature_names: list[str], channel: Channel, window: FitWindow, on_progress: Any,
               class_weight: Any = None, classify: bool = False) -> tuple[ObliqueTree, Ending | None]:
    """Run the search; returns the run's tree and, when the search was cancelled, how the run ends (the best
    validated tree is kept). The baselines take the config the tree records (its depth, k and budget share). With
    ``classify`` y holds class labels and ``GETClassifierCV`` (weighted by ``class_weight``) chooses by validation
    accuracy."""
    cls = GETClassifierCV if classify else GETRegressorCV
    params = estimator_params(cls, config)
    auto = bool(spec.get("split_features"))
    cv = cls(**{**params, "depths": list(spec["depths"]),
                "max_split_features": "auto" if auto else config.max_split_features,
                **({"class_weight": class_weight, "leaf": spec.get("leaf") or config.class_leaf} if classify else {})})
    recorder = SearchRecorder(channel, window, spec, len(feature_names), score=cls._score_key, search=cv)
    cv.fit(model_frame(X_train, feature_names), y_train, on_progress=on_progress, observer=recorder)
    leaf = getattr(cv, "best_leaf_", None)  # a class search's
    chosen = {"depth": cv.best_depth_, "max_split_features": cv.best_max_split_features_, "l1": cv.best_l1_,
              cls._score_key: getattr(cv, f"best_{cls._score_key}_"), **({"leaf": leaf} if leaf else {}),
              "key": tree_key(cv.best_depth_, cv.best_max_split_features_, leaf)}
    if cv.tree_.meta.get("cancelled") or channel.cancelled():
        recorder.finish("cancelled", chosen)
        return cv.validated_tree_, _cancelled_ending(recorder.points, chosen["key"])
    recorder.finish("done", chosen)
    return cv.tree_, None


def _cancelled_ending(points: list[dict], key: str) -> Ending:
    point = next(p for p in points if p["key"] == key)
    return Ending(RunStatus.CANCELLED, f"Cancelled by request during the search; the best tree validated so far "
                  f"({point_label(point, True, parameters=False)}) is kept, fitted on the search's part of the "
                  "training rows.")


def _features_text(k: int | None) -> str:
    return features_label(k)


def _plain(value: Any) -> Any:
    """A JSON value from numpy's scalars."""
    return value.item() if isinstance(value, np.generic) else value
