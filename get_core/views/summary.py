"""A plain-language summary of a fitted tree for a reviewer: how many rules, which features matter, how it compares
with the random forest, and where it is weakest. Shown on the Tree page and in the HTML report.

The numbers come from the model and the run's own rows:
  * rules: one per leaf that training rows reach; a rule is the ``depth`` conditions on the path to its leaf, and
    its length in terms is the number of non-zero weights along that path;
  * feature shares: per split, each term's share in standardized units (``node.term_shares``: |w_j| times the
    feature's standard deviation on the training rows reaching the split; without rows, the scaled weight |a_j|,
    i.e. per training range), averaged over the splits weighted by the training rows each split sorts;
  * comparison: test R2 and RMSE of the tree and of the stored forest baseline, on the same test rows;
  * weakest leaves: RMSE of the tree on each leaf's test rows, largest first, with their row counts.
A classification tree's summary speaks of classes instead: which class each group (leaf) predicts and the largest
group, the share of test rows classified correctly (accuracy) beside the forest's, and the leaves with the most
misclassified test rows.
Nothing here calls streamlit; sentences are plain text (callers escape them for Markdown or HTML).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from get_core.baselines import FOREST_TREES
from get_core.metrics import scores
from get_core.model import prune
from get_core.model.tree import ObliqueTree, raw_rows
from get_core.views import labels, node

TOP_FEATURES = 3
WEAKEST_LEAVES = 3


@dataclass(frozen=True)
class Weak:
    """A leaf and the tree's error on the test rows that reach it."""

    leaf: int
    rmse: float
    n_test: int


@dataclass(frozen=True)
class Wrong:
    """A leaf of a classification tree and the test rows that reach it and that it misclassifies: the class it
    predicts (``label``) and the true classes of the rows it gets wrong (``truths``: (class, rows), most first)."""

    leaf: int
    wrong: int
    n_test: int
    label: str = ""
    truths: tuple[tuple[str, int], ...] = ()

    def words(self, first: bool) -> str:
        """``leaf 4: it predicts 'no' there, and 2 of its 4 test rows (50%) are 'yes'`` (``first``), else the short
        ``leaf 5 (predicts 'yes'; 1 of its 2 test rows is 'no')``."""
        truths = _join([f"'{name}'" + (f" ({n:,})" if len(self.truths) > 1 else "") for name, n in self.truths])
        truths = truths.replace(" and ", " or ") if len(self.truths) > 1 else truths
        rows = f"{self.wrong:,} of its {self.n_test:,} test row{_s(self.n_test)}"
        verb = "is" if self.wrong == 1 else "are"
        if first:
            return (f"leaf {self.leaf}: it predicts '{self.label}' there, and {rows} "
                    f"({labels.percent(self.wrong / self.n_test)}) {verb} {truths}")
        return f"leaf {self.leaf} (predicts '{self.label}'; {rows} {verb} {truths})"


@dataclass(frozen=True)
class Group:
    """The largest leaf (group) of a classification tree: its training rows, its class and that class's
    probability."""

    leaf: int
    rows: int
    label: str
    share: float


#: How far (in R2 or accuracy) the tuned CART must lead the tree on the test rows for the summary to say so.
CART_HINT_MARGIN = 0.005


@dataclass(frozen=True)
class Summary:
    """What the summary says, as numbers; ``sentences`` words it."""

    n_rules: int  # leaves reached by training rows
    n_empty: int  # leaves no training row reaches
    n_conditions: int  # conditions in the longest rule (every rule's where no split was collapsed: the depth)
    longest_terms: int  # feature terms along the longest rule
    leaf_type: str
    shares: list[tuple[str, float]]  # (feature, % of the splits' weight over training ranges), largest first
    tree_scores: tuple[float | None, float | None] | None  # test (R2, RMSE); None without test rows
    forest_scores: tuple[float | None, float | None] | None  # the stored forest baseline's; None without one
    n_test: int
    weakest: list[Weak]
    target: str
    starved_share: float | None = None  # a time-budgeted fit's share of the CPU when it was starved (train.py)
    forest_trees: int = FOREST_TREES  # the forest's trees: fewer when the run's budget stopped it (baselines.py)
    cart: tuple[str, float] | None = None  # the depth-tuned CART baseline's name and test R2 (or accuracy)
    fewest_conditions: int | None = None  # conditions in the shortest rule, where rules differ in length

    # a classification tree: leaves per predicted class (class, leaves), most first; the largest group; test and
    # forest accuracy; the leaves with the most misclassified test rows
    groups: tuple[tuple[str, int], ...] = ()
    largest: Group | None = None
    accuracy: float | None = None
    forest_accuracy: float | None = None
    wrong: tuple[Wrong, ...] = ()
    # logistic leaves: how many leaves hold a model, and the largest one's odds in words (``labels.odds_sentence``)
    logistic: tuple[int, str] | None = None

    @property
    def is_classifier(self) -> bool:
        return bool(self.groups)

    def sentences(self) -> list[str]:
        """The summary as four or five short sentences for a reviewer (and a hint where CART does better)."""
        if self.is_classifier and self.n_conditions == 0 and self.logistic is not None:  # depth 0: one model
            parts = (self._one_model(), self._class_comparison() + self._cart_hint())
        elif self.is_classifier:
            parts = (self._rules(), self._groups(), self._logistic(), self._features(),
                     self._class_comparison() + self._cart_hint(), self._errs())
        else:
            parts = (self._rules(), self._features(), self._comparison() + self._cart_hint(), self._weakest())
        return [s for s in (*parts, self._starved()) if s]

    def _starved(self) -> str:
        if self.starved_share is None:
            return ""
        return (f"The machine was busy while this tree was trained: its time budget got {_percent(self.starved_share)}"
                " of the CPU its threads could use, so it searched less than on a free machine; train it again when"
                " the machine is quieter, or with a longer budget.")

    def _rules(self) -> str:
        leaves = {"constant": "each leaf predicts one number", "classes": "each leaf predicts one class, with the "
                  "share of each class among its training rows", "logistic": "each leaf predicts the probability of "
                  "each class with a logistic model of the features (a leaf without one: the share of each class "
                  "among its training rows)"}.get(
            self.leaf_type, "each leaf predicts with a straight-line formula of the features")
        text = (f"The tree predicts {self.target} with {self.n_rules:,} rule{_s(self.n_rules)}, one per leaf: a row "
                f"answers {self._questions()} yes/no question{_s(self.n_conditions)} from the top of the tree down "
                f"to its leaf, and {leaves}. The longest rule's questions weigh {self.longest_terms:,} "
                f"feature{_s(self.longest_terms)} in all (a feature asked twice counts twice).")
        if self.n_empty:
            one = self.n_empty == 1
            text += (f" {self.n_empty:,} more {'leaf' if one else 'leaves'} received no training row and "
                     f"{'is' if one else 'are'} never used.")
        return text

    def _questions(self) -> str:
        if self.fewest_conditions is None:
            return str(self.n_conditions)
        return f"{self.fewest_conditions} to {self.n_conditions}"

    def _features(self) -> str:
        top = [(name, share) for name, share in self.shares if share > 0][:TOP_FEATURES]
        if not top:
            return "No split uses any feature with a non-zero weight."
        listed = _join([f"{name} ({share:.0f}%)" for name, share in top])
        how = "each feature's weight over its training range, a one-hot column's levels together"
        return (f"The feature{'s' if len(top) > 1 else ''} that matter{'' if len(top) > 1 else 's'} most "
                f"{'are' if len(top) > 1 else 'is'} {listed}: the share of the questions' weight, counting {how}, "
                "with busier questions counting more.")

    def _comparison(self) -> str:
        if self.tree_scores is None:
            return "The run's test rows are not available, so the tree's accuracy is not stated here."
        r2, rmse = self.tree_scores
        text = f"On the {self.n_test:,} test rows set aside before training, the tree "
        text += (f"explains {_percent(r2)} of the variation in {self.target} (R\u00b2 {r2:.2f}), with"
                 if r2 is not None else "has")
        text += f" a typical error of {_num(rmse)} (root mean squared error, in {self.target}'s units)"
        if self.forest_scores is None:
            return text + "; no random forest was fitted for this run, so there is no comparison."
        if self.forest_cut:
            return text + f"; {self._cut_forest()}"
        forest_r2, forest_rmse = self.forest_scores
        text += (f"; {self._forest()} " + (f"explains {_percent(forest_r2)}" if forest_r2 is not None
                                                      else "was fitted") + f" (typical error {_num(forest_rmse)})")
        gap = _gap(r2, forest_r2)
        return text + (f", {gap}." if gap else ".")

    def _cart_hint(self) -> str:
        """Where the depth-tuned CART beats the tree on the test rows by half a point or more, say so and what to
        try (issue 48: at the default depth GET was under CART on two of four class tables, and nothing said so)."""
        mine = self.accuracy if self.is_classifier else (self.tree_scores or (None, None))[0]
        if self.cart is None or mine is None or self.cart[1] is None or self.cart[1] - mine < CART_HINT_MARGIN:
            return ""
        done = (f"classifies {labels.percent(self.cart[1])} of the same test rows correctly" if self.is_classifier
                else f"explains {_percent(self.cart[1])} of the variation on the same test rows")
        return (f" {self.cart[0]} {done}, ahead of this tree: try a smaller depth, or let the Train page choose the "
                "depth for you.")

    @property
    def forest_cut(self) -> bool:
        """Whether the run's forest has fewer trees than the usual ``FOREST_TREES``: runs stored before issue 48 grew
        as many as their time budget allowed, which is no fair baseline."""
        return self.forest_trees < FOREST_TREES

    def _forest(self) -> str:
        return f"a random forest of {self.forest_trees} trees"

    def _cut_forest(self) -> str:
        """Why a budget-cut forest gets no comparison."""
        return (f"this run's random forest has only {self.forest_trees} trees (its time budget cut it, as runs stored "
                f"before the baselines were fitted at their usual settings did), so it is no fair baseline and no "
                f"comparison is made.")

    def _groups(self) -> str:
        counted = [f"'{name}' in {n:,}" + (f" of its {self.n_rules:,} groups" if i == 0 else "")
                   for i, (name, n) in enumerate(self.groups) if n]
        if not counted:
            return "No training row reached any leaf, so no group predicts a class from data."
        text = f"The tree predicts {_join(counted)}"
        never = [f"'{name}'" for name, n in self.groups if not n]
        if never:
            text += f"; no group predicts {_join(never).replace(' and ', ' or ')}"
        if self.largest is not None:
            g = self.largest
            text += (f"; the largest group, leaf {g.leaf} with {g.rows:,} training row{_s(g.rows)}, predicts "
                     f"'{g.label}' with probability {labels.percent(g.share)} ({labels.SMOOTHED_SHARES})")
        return text + "."

    def _logistic(self) -> str:
        if self.logistic is None:
            return ""
        n, odds = self.logistic
        return (f"{n:,} of the {self.n_rules:,} leaves hold a logistic model, so the class they predict changes with "
                f"the row within the leaf (their groups above count their training rows' most common class). {odds}")

    def _one_model(self) -> str:
        """A tree with no split and a logistic leaf (a class search's depth 0): no rules or groups to speak of."""
        return (f"The model predicts {self.target} with one logistic model of the features and no split (depth 0): "
                f"every row's class probabilities come from the same model. {self.logistic[1]}")

    def _class_comparison(self) -> str:
        if self.accuracy is None:
            return "The run's test rows are not available, so the tree's accuracy is not stated here."
        text = (f"On the {self.n_test:,} test rows set aside before training, the tree classifies "
                f"{labels.percent(self.accuracy)} correctly (accuracy {self.accuracy:.3f})")
        if self.forest_accuracy is None:
            return text + "; no random forest was fitted for this run, so there is no comparison."
        if self.forest_cut:
            return text + f"; {self._cut_forest()}"
        points = 100 * (self.forest_accuracy - self.accuracy)
        text += f"; {self._forest()} classifies {labels.percent(self.forest_accuracy)} correctly"
        if abs(points) < 0.5:
            return text + ", so the single readable tree is as accurate as the forest."
        if points > 0:
            return text + f", so the single readable tree gives up {_points(points)} of accuracy."
        return text + f", so the single readable tree is {_points(-points)} more accurate."

    def _errs(self) -> str:
        if not self.wrong:
            return "It classifies every test row correctly." if self.accuracy == 1.0 else ""
        first, *rest = self.wrong
        text = f"It errs most in {first.words(True)}."
        return text + (f" Next come {_join([w.words(False) for w in rest])}." if rest else "")

    def _weakest(self) -> str:
        if not self.weakest:
            return ""
        listed = _join([f"leaf {w.leaf} (typical error {_num(w.rmse)} on its {w.n_test:,} test row{_s(w.n_test)})"
                        if i == 0 else f"leaf {w.leaf} ({_num(w.rmse)} on {w.n_test:,} row{_s(w.n_test)})"
                        for i, w in enumerate(self.weakest)])
        overall = self.tree_scores[1] if self.tree_scores else None
        tail = f", against {_num(overall)} over all test rows" if overall is not None else ""
        return f"It is least accurate in {listed}{tail}."


def summarize(tree: ObliqueTree, X_test: Any = None, y_test: Any = None,
              baselines: Mapping[str, Any] | None = None, target: str | None = None,
              categories: Sequence[str] = ()) -> Summary:
    """The summary of ``tree`` (its test rows for the scores and the weakest leaves, its stored ``baselines`` for the
    forest; each optional). The feature shares come from the model alone, so a run and the same model loaded from
    its JSON name the same top features (issue 35); the levels of each one-hot column in ``categories`` count as one
    feature."""
    has_test = X_test is not None and y_test is not None and len(np.ravel(y_test)) > 0
    empty = sum(tree.is_empty(t) for t in prune.live_leaves(tree))
    if tree.is_classifier:
        return _class_summary(tree, X_test if has_test else None, y_test, baselines, target, empty, categories)
    tree_scores = weakest = None
    if has_test:
        X_test = raw_rows(tree, X_test)
        y_test = np.asarray(y_test, dtype=np.float64).ravel()
        tree_scores = scores(y_test, tree.predict(X_test))
        weakest = weakest_leaves(tree, X_test, y_test)
    forest = (baselines or {}).get("models", {}).get("random_forest")
    return Summary(cart=_cart(baselines, "r2") if has_test else None, n_rules=len(prune.live_leaves(tree)) - empty,
                   n_empty=empty, **_conditions(tree),
                   longest_terms=longest_rule_terms(tree), leaf_type=tree.leaf_type,
                   shares=grouped_shares(feature_shares(tree), categories), tree_scores=tree_scores,
                   forest_scores=(forest.get("r2"), forest.get("rmse")) if forest and has_test else None,
                   n_test=len(y_test) if has_test else 0, weakest=weakest or [],
                   target=str(target or tree.meta.get("target") or "the target"),
                   starved_share=_starved_share(tree.meta),
                   forest_trees=int(forest.get("n_trees", FOREST_TREES)) if forest else FOREST_TREES)


def _cart(baselines: Mapping[str, Any] | None, score: str) -> tuple[str, float] | None:
    """The stored CART baseline's name and test ``score`` (None where it has none)."""
    cart = (baselines or {}).get("models", {}).get("cart") or {}
    value = cart.get(score)
    return None if not isinstance(value, (int, float)) else (str(cart.get("name", "CART")), float(value))


def _conditions(tree: ObliqueTree) -> dict[str, int | None]:
    """``n_conditions`` and ``fewest_conditions`` of a Summary: the splits that decide (pass-throughs, ``prune``,
    ask nothing) on the way to each leaf a row can reach."""
    asked = [sum(prune.passes_to(tree, a) is None for a in labels.path_to(int(t))[:-1]) for t in prune.live_leaves(tree)]
    return {"n_conditions": max(asked), "fewest_conditions": min(asked) if min(asked) < max(asked) else None}


def _starved_share(meta: Mapping[str, Any]) -> float | None:
    """The CPU share a model file records for a starved fit, else None (also for a file that records it wrongly)."""
    share = meta.get("cpu_share")
    starved = meta.get("starved") is True and isinstance(share, (int, float)) and not isinstance(share, bool)
    return float(share) if starved and np.isfinite(share) else None


def _class_summary(tree: ObliqueTree, X_test: Any, y_test: Any, baselines: Mapping[str, Any] | None,
                   target: str | None, empty: int, categories: Sequence[str]) -> Summary:
    """``summarize`` for a classification tree (``X_test`` None without test rows)."""
    used = [int(t) for t in prune.live_leaves(tree) if not tree.is_empty(t)]
    predicted = [labels.node_class(tree, t) for t in used]
    groups = sorted(((labels.class_name(c, 40), predicted.count(k)) for k, c in enumerate(tree.classes)),
                    key=lambda g: -g[1])
    largest = max(used, key=lambda t: (tree.n_samples[t - 1], -t), default=None)
    group = None if largest is None else Group(
        largest, int(tree.n_samples[largest - 1]), labels.class_name(tree.classes[labels.node_class(tree, largest)], 40),
        float(labels.node_shares(tree, largest).max()))
    accuracy = forest_accuracy = None
    wrong: list[Wrong] = []
    if X_test is not None:
        X_test = raw_rows(tree, X_test)
        hit = tree.predict(X_test) == np.asarray(y_test).ravel()
        accuracy = float(hit.mean())
        wrong = misclassified_leaves(tree, X_test, y_test)
        forest = (baselines or {}).get("models", {}).get("random_forest") or {}
        forest_accuracy = forest.get("accuracy")
    return Summary(cart=None if X_test is None else _cart(baselines, "accuracy"), n_rules=len(used), n_empty=empty,
                   **_conditions(tree),
                   longest_terms=longest_rule_terms(tree),
                   leaf_type="logistic" if tree.has_logistic_leaves else tree.leaf_type, logistic=_logistic(tree, used),
                   shares=grouped_shares(feature_shares(tree), categories), tree_scores=None,
                   forest_scores=None, n_test=0 if X_test is None else len(X_test), weakest=[],
                   target=str(target or tree.meta.get("target") or "the target"), groups=tuple(groups),
                   largest=group, accuracy=accuracy, forest_accuracy=forest_accuracy, wrong=tuple(wrong))


def _logistic(tree: ObliqueTree, used: list[int]) -> tuple[int, str] | None:
    """(leaves with a logistic model, the odds of the largest such leaf in words), or None without one."""
    modelled = [t for t in used if labels.has_logistic_model(tree, t)]
    if not modelled:
        return None
    largest = max(modelled, key=lambda t: (tree.n_samples[t - 1], -t))
    rows = int(tree.n_samples[largest - 1])
    effect = labels.odds_effects(tree, largest)[0]
    where = ("In this model" if _conditions(tree)["n_conditions"] == 0 else
             f"In the largest, leaf {largest} with {rows:,} training row{_s(rows)}")
    return len(modelled), labels.odds_sentence(tree, effect, where=where)


def feature_shares(tree: ObliqueTree, X_train: Any = None) -> list[tuple[str, float]]:
    """(feature, %) for every feature, largest first: its share of each split (``node.term_shares`` on the training
    rows reaching the split, or the scaled weights without rows), averaged over the splits weighted by the training
    rows each one sorts (the model's counts). A tree fitted on raw columns counts each raw column once (its
    categories, a number and its "is missing" input summed): importance is the user's columns'."""
    raw = tree
    total = np.zeros(tree.n_features)
    X = None
    if X_train is not None:
        tree, X = node.engine_view(raw, X_train)
    path = tree.decision_path(X) if X is not None and len(X) else None
    for t in range(1, tree.n_branches + 1):
        rows = int(tree.n_samples[t - 1])
        if rows == 0:
            continue
        if path is not None:
            reach = X[path[:, t.bit_length() - 1] == t]
            terms, share = node.term_shares(tree, t, reach if len(reach) >= 2 else X)
        else:
            terms = np.flatnonzero(tree.weights[t - 1])
            scaled = np.abs(tree.weights[t - 1, terms])
            share = 100.0 * scaled / scaled.sum() if scaled.sum() > 0 else np.full(terms.size, np.nan)
        total[terms] += rows * np.nan_to_num(share)
    weight = total.sum()
    shares = 100.0 * total / weight if weight > 0 else total
    names = raw.feature_names
    if raw.inputs is not None:
        shares, names = np.bincount(raw.groups, weights=shares, minlength=len(raw.inputs.names)), raw.inputs.names
    order = np.argsort(-shares, kind="stable")
    return [(names[j], float(shares[j])) for j in order]


def grouped_shares(shares: list[tuple[str, float]], categories: Sequence[str]) -> list[tuple[str, float]]:
    """``shares`` with the one-hot inputs ``column=level`` of each column in ``categories`` summed into one entry
    ``column (one-hot)``, largest first (text only: the model and its exports keep one input per level)."""
    total: dict[str, float] = {}
    for name, share in shares:
        key = labels.one_hot_group(name, categories)
        total[key] = total.get(key, 0.0) + share
    return sorted(total.items(), key=lambda item: -item[1])


def longest_rule_terms(tree: ObliqueTree) -> int:
    """The most feature terms on any root-to-leaf path: non-zero split weights, a raw column once for a tree fitted
    on raw columns (``ObliqueTree.split_terms``: its categories, a number and its "if missing")."""
    widths = tree.split_terms
    best = np.zeros(2 * tree.n_leaves, dtype=np.int64)  # best[t]: terms from the root to node t, exclusive
    for t in range(1, tree.n_branches + 1):
        best[2 * t] = best[2 * t + 1] = best[t] + widths[t - 1]
    return int(best[tree.n_leaves:].max())


def weakest_leaves(tree: ObliqueTree, X_test: np.ndarray, y_test: np.ndarray, n: int = WEAKEST_LEAVES) -> list[Weak]:
    """The ``n`` leaves with the largest RMSE on their test rows (leaves with none are skipped), largest first."""
    leaf = tree.apply(X_test)
    error = (tree.predict(X_test) - y_test) ** 2
    found = [Weak(int(t), float(np.sqrt(error[leaf == t].mean())), int(np.sum(leaf == t))) for t in np.unique(leaf)]
    return sorted(found, key=lambda w: (-w.rmse, w.leaf))[:n]


def misclassified_leaves(tree: ObliqueTree, X_test: Any, y_test: Any, n: int = WEAKEST_LEAVES) -> list[Wrong]:
    """The ``n`` leaves of a classification tree with the most misclassified test rows (leaves that err on none are
    skipped), most first: each with its predicted class and the true classes of the rows it gets wrong. Pass the
    run's own test rows, so the counts are the ones the Compare page's confusion matrix sums."""
    X_test = raw_rows(tree, X_test)
    y_test = np.asarray(y_test).ravel()
    leaf, predicted = tree.apply(X_test), tree.predict(X_test)
    miss = predicted != y_test
    found = []
    for t in np.unique(leaf[miss]):
        here = miss & (leaf == t)
        truths, counts = np.unique(y_test[here], return_counts=True)
        order = sorted(zip(counts.tolist(), truths.tolist()), key=lambda c: (-c[0], str(c[1])))
        found.append(Wrong(int(t), int(counts.sum()), int(np.sum(leaf == t)),
                           labels.class_name(predicted[here][0], 40),
                           tuple((labels.class_name(c, 40), k) for k, c in order)))
    return sorted(found, key=lambda w: (-w.wrong, w.leaf))[:n]


def _percent(r2: float) -> str:
    return f"{100 * r2:.0f}%"


def _gap(tree_r2: float | None, forest_r2: float | None) -> str:
    if tree_r2 is None or forest_r2 is None:
        return ""
    points = 100 * (forest_r2 - tree_r2)
    if abs(points) < 0.5:
        return "so the single readable tree is as accurate as the forest"
    if points > 0:
        return f"so the single readable tree gives up {points:.0f} percentage points of explained variation"
    return f"so the single readable tree is {-points:.0f} percentage points more accurate than the forest"


def _points(points: float) -> str:
    """``3 percentage points``; ``1 percentage point``."""
    return f"{points:.0f} percentage point{_s(round(points))}"


def _num(value: float | None) -> str:
    """A number for people: 3 significant digits, thousands separators from 1,000 up."""
    if value is None or not np.isfinite(value):
        return "\u2013"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _s(n: int) -> str:
    return "" if n == 1 else "s"
