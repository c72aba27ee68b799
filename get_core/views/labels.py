"""The one node-label helper shared by the diagram, the node panel, the report and the exports.

Every human-facing description of a split or a leaf goes through here, so the diagram, the path rules and the
report say the same thing. Splits are shown in the user's original units (``ObliqueTree.split_in_original_units``)
with terms ordered by their size in scaled units (|a_j|: the term's swing across the feature's training range),
largest first, and the rest summarized: ``0.82·temp − 0.31·pressure + … (5 more) ≤ 12.4``. A split or leaf
with at most ``SENTENCE_TERMS`` terms is always written whole, as one sentence: ``0.8·temp − 0.3·vacuum ≤ 12.1``
(zero weights are never terms). Numbers are rounded to ``digits`` significant digits unless ``digits=None``, which
writes each exactly (the rules export's form); ``rounds`` says whether a split's text is rounded.

A split that uses one feature reads as a threshold, ``cylinders ≤ 4.5`` (``≥`` where its weight is negative), not
``0.2·cylinders ≤ 0.9``: its number is the last value the model sends left (``feature_threshold``), found with the
model's own test, so even the exact form routes every row as ``predict`` does. Rounded text leaves out terms too small
to matter (``NEGLIGIBLE``: a weight of 1e-28 beside ones near 1), and a split left with one term reads as a threshold
too; the exact form (``digits=None``) writes every term. Rounded numbers from 1,000 up are written whole with
thousands separators (``2,820``, not ``2.82e+03``; ``2820`` in ASCII, which files and code read).

``unicode=True`` gives the display form (``·``, ``−``, ``≤``); ``unicode=False`` gives plain ASCII (``*``, ``-``,
``<=``) for text files and code comments. Names show hidden characters escaped (``visible``); callers escape
for their medium (DOT, HTML).
"""

from __future__ import annotations

import functools
import math
import struct
import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from get_core.model import prune
from get_core.model.inputs import RawColumn
from get_core.model.tree import ObliqueTree

MINUS = "\u2212"
TIMES = "\u00b7"
LEQ = "\u2264"
GEQ = "\u2265"
ELLIPSIS = "\u2026"
LINE_SEPARATORS = "\u2028\u2029"  # besides control characters, what ``str.splitlines`` breaks at
BLANKS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85" + LINE_SEPARATORS)  # what a name shows as a space
HIDDEN = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})  # Unicode categories ``visible`` escapes
SENTENCE_TERMS = 3  # a split (or leaf) with at most this many terms is never summarized with "… (n more)"
# Rounded text leaves out a term whose scaled weight (its swing over the feature's training range) is below this share
# of the split's largest: it moves the weighted sum by less than the rounding of the numbers shown.
NEGLIGIBLE = 1e-9
WHOLE_BELOW = 1e15  # rounded numbers from 1,000 up to this are written whole, not in e-notation
_SEARCH_POINTS = 256  # values tried at once while narrowing a one-feature split's exact threshold


@dataclass(frozen=True)
class Term:
    """One term ``coef * feature`` of a split or a linear leaf, in original units."""

    index: int  # feature column
    name: str
    coef: float  # original units
    importance: float  # |coef| in scaled units, the ordering key


@dataclass(frozen=True)
class Threshold:
    """A split read as one feature against a number: left when ``term``'s feature is at most ``value`` (``below``,
    a positive weight) or at least ``value`` (a negative weight)."""

    term: Term
    below: bool
    value: float  # original units


def one_hot_group(name: str, categories: Sequence[str]) -> str:
    """The name a feature is shown under where one-hot levels count as one feature: ``column (one-hot)`` for an input
    ``column=level`` of a column in ``categories`` (the encoding's one-hot columns), else ``name`` itself."""
    column = next((c for c in categories if name.startswith(f"{c}=")), None)
    return name if column is None else f"{column} (one-hot)"


def fmt(value: float, digits: int | None = 3, unicode: bool = True) -> str:
    """``value`` with ``digits`` significant digits (from 1,000 up whole, with thousands separators in display form:
    ``2,820``), or with ``digits=None`` the shortest text that reads back as the same double (``repr``): the exact
    form, for rules that must route rows as ``predict`` does. Unicode minus in display form."""
    value = float(value) + 0.0  # + 0.0 turns -0.0 into 0.0
    if digits is None:
        text = repr(value).removesuffix(".0")
    elif 1000 <= abs(value) < WHOLE_BELOW:
        rounded = float(f"{value:.{digits}g}")
        decimals = max(0, digits - len(str(int(abs(rounded)))))
        text = f"{rounded:{',' if unicode else ''}.{decimals}f}"
    else:
        text = f"{value:.{digits}g}"
    return text.replace("-", MINUS) if unicode and text.startswith("-") else text


def split_terms(tree: ObliqueTree, node: int, digits: int | None = None) -> list[Term]:
    """Nonzero terms of branch ``node``'s hyperplane, largest (in scaled units) first; for text rounded to ``digits``
    (not None) without the negligible ones (``NEGLIGIBLE``)."""
    w, _ = tree.split_in_original_units(node)
    terms = _terms(w, np.abs(tree.weights[node - 1]), tree.feature_names)
    if digits is None or not terms:
        return terms
    return [t for t in terms if t.importance >= NEGLIGIBLE * terms[0].importance]


def feature_threshold(tree: ObliqueTree, node: int, digits: int | None = None) -> Threshold | None:
    """Branch ``node``'s split as one feature against a number, when it uses one feature (for rounded text: one
    that is not negligible), else None. For a one-feature split the number is exact: the last double the model
    sends left (first, for a negative weight), so ``x <= value`` routes every row as ``predict`` does (NaN aside,
    as for every rule)."""
    terms = split_terms(tree, node, digits)
    if len(terms) != 1:
        return None
    term, below = terms[0], terms[0].coef > 0
    exact = _exact_threshold(tree, node, term.index, below) if tree.split_widths[node - 1] == 1 else None
    return Threshold(term, below, exact if exact is not None else tree.split_in_original_units(node)[1] / term.coef)


def split_parts(tree: ObliqueTree, node: int, digits: int | None = 3, max_terms: int | None = 3,
                unicode: bool = True, go_right: bool = False, max_name: int | None = None) -> tuple[list[str], str, str]:
    """Branch ``node``'s split as (left-hand side's pieces, comparison, number): ``(["cylinders"], "≤", "4.5")``
    for one feature, ``(["0.82·temp", "− 0.31·pressure"], "≤", "12.4")`` otherwise; ``go_right`` negates it. A tree
    fitted on raw columns reads per column where that differs (``column_split_parts``)."""
    columns = in_columns(tree, node, digits)
    if columns is not None:
        return column_split_parts(tree, node, columns, digits, max_terms, unicode, go_right, max_name)
    single = feature_threshold(tree, node, digits)
    if single is None:
        _, c = tree.split_in_original_units(node)
        lhs = format_terms(split_terms(tree, node, digits), digits, max_terms, unicode, max_name)
        return lhs, ">" if go_right else (LEQ if unicode else "<="), fmt(c, digits, unicode)
    if go_right:
        op = ">" if single.below else "<"
    else:
        op = (LEQ if unicode else "<=") if single.below else (GEQ if unicode else ">=")
    return [shorten(single.term.name, max_name)], op, fmt(single.value, digits, unicode)


def leaf_terms(tree: ObliqueTree, leaf: int) -> list[Term]:
    """Nonzero slope terms of linear leaf ``leaf`` (empty for constant leaves), largest first."""
    _, k = tree.leaf_in_original_units(leaf)
    if tree.leaf_type == "constant":
        return []
    return _terms(k, np.abs(tree.leaf_coefs[leaf - tree.n_leaves]), tree.feature_names)


def format_terms(terms: list[Term], digits: int = 3, max_terms: int | None = 3, unicode: bool = True,
                 max_name: int | None = None) -> list[str]:
    """Signed term strings (``0.82·temp``, ``− 0.31·pressure``) for the first ``max_terms`` terms, then a summary
    string (``+ … (5 more)``) if at least two are left out (one more term takes the room of its summary); at most
    ``SENTENCE_TERMS`` terms are all shown. The first term carries its sign without a space."""
    whole = max_terms is None or len(terms) <= max(max_terms + 1, SENTENCE_TERMS)
    shown = terms if whole else terms[:max_terms]
    times, minus = (TIMES, MINUS) if unicode else ("*", "-")
    out = []
    for i, term in enumerate(shown):
        name = shorten(term.name, max_name)
        body = f"{fmt(abs(term.coef), digits, unicode)}{times}{name}"
        if i == 0:
            out.append((minus if term.coef < 0 else "") + body)
        else:
            out.append(f"{minus if term.coef < 0 else '+'} {body}")
    rest = len(terms) - len(shown)
    if rest:
        out.append(f"+ {ELLIPSIS if unicode else '...'} ({rest} more)")
    return out or ["0"]


def split_text(tree: ObliqueTree, node: int, digits: int = 3, max_terms: int | None = 3, unicode: bool = True,
               go_right: bool = False, max_name: int | None = None) -> str:
    """``0.82·temp − 0.31·pressure + … (5 more) ≤ 12.4`` or ``cylinders ≤ 4.5``; with ``go_right`` the negation
    (``>``)."""
    lhs, op, number = split_parts(tree, node, digits, max_terms, unicode, go_right, max_name)
    return f"{' '.join(lhs)} {op} {number}"


def rounds(tree: ObliqueTree, node: int, digits: int | None = 3) -> bool:
    """Whether branch ``node``'s split written with ``digits`` significant digits changes one of its numbers (a
    non-zero weight or the threshold, original units), so that a row near the split could read the other way."""
    if digits is None:
        return False
    single = feature_threshold(tree, node, digits)
    w, c = tree.split_in_original_units(node)
    shown = [single.value] if single is not None else [*w[w != 0], c]
    return any(float(fmt(v, digits, unicode=False)) != float(v) for v in shown)


def leaf_text(tree: ObliqueTree, leaf: int, digits: int = 3, max_terms: int | None = 3, unicode: bool = True,
              max_name: int | None = None) -> str:
    """The leaf's prediction: ``23.4``, or ``0.5·temp + 0.2·wind + … (3 more) + 3.1`` for a linear leaf, followed by
    ``, kept within [10, 40]`` when the leaf clamps its line to its training targets' range; a class leaf's class and
    its probability, ``good (75%)``; a logistic leaf's most common class and the top terms of its first odds,
    ``mostly good (75%); odds of 'bad': ×1.08 per +1 age, ×0.95 per +1,000 income``."""
    if tree.is_classifier:
        k = node_class(tree, leaf)
        text = f"{class_name(tree.classes[k], max_name)} ({percent(node_shares(tree, leaf)[k])})"
        effects = odds_effects(tree, leaf, max_terms)
        return text if not effects else f"mostly {text}; {odds_short(tree, effects[0], digits, unicode, max_name)}"
    text = leaf_line(tree, leaf, digits, max_terms, unicode, max_name)
    bounds = bounds_text(tree, leaf, digits, unicode)
    return text if bounds is None else f"{text}, {bounds}"


def leaf_line(tree: ObliqueTree, leaf: int, digits: int = 3, max_terms: int | None = 3, unicode: bool = True,
              max_name: int | None = None) -> str:
    """The leaf's model before any clamp: ``23.4``, or ``0.5·temp + 0.2·wind + … (3 more) + 3.1``."""
    h, _ = tree.leaf_in_original_units(leaf)
    terms = leaf_terms(tree, leaf)
    if not terms:
        return fmt(h, digits, unicode)
    parts = format_terms(terms, digits, max_terms, unicode, max_name)
    sign = (MINUS if unicode else "-") if h < 0 else "+"
    return " ".join(parts) + f" {sign} {fmt(abs(h), digits, unicode)}"


@dataclass(frozen=True)
class OddsTerm:
    """One feature's effect in a logistic leaf: each +``step`` (original units) multiplies the odds by ``factor``."""

    index: int
    name: str
    step: float
    factor: float
    importance: float  # |the log-odds' change| over the feature's span (``odds_effects``), the ordering key


@dataclass(frozen=True)
class OddsEffect:
    """How a logistic leaf's features move the odds of class ``cls`` against class ``against`` (indices into
    ``classes``), its largest terms first; ``more`` terms left out."""

    cls: int
    against: int
    terms: list[OddsTerm]
    more: int


def depth_text(tree: ObliqueTree) -> str:
    """"depth 3"; a class search's depth 0 (one logistic model, held as a depth-1 tree whose split sends every row
    left, ``engine.train.logistic_model``) as "depth 0 (one logistic model, no split)", not the depth it is held at."""
    return "depth 0 (one logistic model, no split)" if tree.meta.get("single_model") else f"depth {tree.depth}"


def has_logistic_model(tree: ObliqueTree, leaf: int) -> bool:
    """Whether ``leaf`` holds a logistic model whose logits vary with the row (not only its class shares)."""
    return bool(tree.is_classifier and tree.has_logistic_leaves and tree.logit_coefs[leaf - tree.n_leaves].any())


def odds_step(span: float) -> float:
    """The change a logistic leaf's effect is stated for, in a feature's own units: +1 for a span (training range)
    from 1 to 1,000, so that a year of age or a 0/1 column reads as itself; else the power of ten at most a tenth of
    the span (+1,000 for a range of 40,000, +0.01 for 0.3), so that the factor moves visibly."""
    if not span > 0 or 1 <= span <= 1000:
        return 1.0
    return float(10.0 ** math.floor(math.log10(span / 10)))


def odds_effects(tree: ObliqueTree, leaf: int, max_terms: int | None = 3,
                 spans: np.ndarray | None = None) -> list[OddsEffect]:
    """How logistic leaf ``leaf``'s features move its odds, before the leaf's small share m of even odds (``logit_mix``;
    none for a leaf without a model). Binary: the odds of the second class (the positive one, as scikit-learn's
    ``classes_[1]``) against the first. More classes: each other class's odds against the leaf's most common class
    among its training rows (``node_class``), the reference a reader sees on the leaf, in order of their shares.
    Terms are ordered by the log-odds' change over each feature's ``spans`` (original units: the leaf's typical
    range where its rows are at hand, ``class_node.leaf_spans``; by default the training range, as a split's terms
    are), the first ``max_terms`` kept; each factor is exp(that change per ``odds_step`` of the span)."""
    if not has_logistic_model(tree, leaf):
        return []
    i, shares = leaf - tree.n_leaves, node_shares(tree, leaf)
    spans = tree.x_scale if spans is None else np.asarray(spans, dtype=np.float64)
    if tree.n_classes == 2:
        pairs = [(1, 0)]
    else:
        ref = node_class(tree, leaf)
        pairs = [(int(c), ref) for c in np.argsort(-shares, kind="stable") if c != ref]
    effects = []
    for cls, against in pairs:
        slope = (tree.logit_coefs[i, cls] - tree.logit_coefs[i, against]) / tree.x_scale  # per original unit
        effect = np.abs(slope) * spans
        order = [int(j) for j in np.argsort(-effect, kind="stable") if slope[j] != 0]
        shown = order if max_terms is None else order[:max_terms]
        terms = []
        for j in shown:
            step = odds_step(float(spans[j]))
            with np.errstate(over="ignore"):
                factor = float(np.exp(slope[j] * step))
            terms.append(OddsTerm(j, tree.feature_names[j], step, factor, float(effect[j])))
        if terms:
            effects.append(OddsEffect(cls, against, terms, len(order) - len(shown)))
    return effects


def _odds_of(tree: ObliqueTree, effect: OddsEffect, max_name: int | None) -> str:
    """``the odds of 'yes'`` (binary) or ``the odds of 'b' against 'a'``."""
    of = f"the odds of '{class_name(tree.classes[effect.cls], max_name)}'"
    return of if tree.n_classes == 2 else f"{of} against '{class_name(tree.classes[effect.against], max_name)}'"


def _step_text(step: float, digits: int | None, unicode: bool) -> str:
    return "+" + fmt(step, digits, unicode)


def odds_short(tree: ObliqueTree, effect: OddsEffect, digits: int | None = 3, unicode: bool = True,
               max_name: int | None = None) -> str:
    """``odds of 'yes': ×1.08 per +1 age, ×0.95 per +1,000 income, … (2 more)``: a diagram's or a tooltip's line."""
    times = "×" if unicode else "x"
    parts = [f"{times}{fmt(t.factor, digits, unicode)} per {_step_text(t.step, digits, unicode)} "
             f"{shorten(t.name, max_name)}" for t in effect.terms]
    if effect.more:
        parts.append(f"{ELLIPSIS if unicode else '...'} ({effect.more} more)")
    return _odds_of(tree, effect, max_name).removeprefix("the ") + ": " + ", ".join(parts)


def odds_sentence(tree: ObliqueTree, effect: OddsEffect, digits: int | None = 3, unicode: bool = True,
                  where: str = "In this leaf") -> str:
    """``In this leaf, each +1 of age multiplies the odds of 'yes' by 1.08, each +1,000 of income by 0.95.``"""
    parts = [f"each {_step_text(t.step, digits, unicode)} of {shorten(t.name, None)}"
             + (f" multiplies {_odds_of(tree, effect, None)}" if k == 0 else "")
             + f" by {fmt(t.factor, digits, unicode)}" for k, t in enumerate(effect.terms)]
    more = f" ({effect.more} more feature{'s' if effect.more != 1 else ''} move{'s' if effect.more == 1 else ''} " \
           "them less)" if effect.more else ""
    return f"{where}, " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) \
        + more + "."


def logistic_note(tree: ObliqueTree, leaf: int, spans: str = "their training range") -> str:
    """What the odds sentences leave out: the leaf's share m of even odds, and the reference class; ``spans`` says
    what the features' effects are measured over."""
    i = leaf - tree.n_leaves
    against = ("the second class against the first" if tree.n_classes == 2 else
               "each class against the leaf's most common class")
    return (f"A logistic leaf: its probabilities are a softmax of one linear logit per class, with a "
            f"{percent(float(tree.logit_mix[i]))} share of even odds (1/{tree.n_classes} each) mixed in. Odds are "
            f"{against}, before that mix; features are ordered by their effect over {spans}.")


def class_name(label: object, max_len: int | None = None) -> str:
    """A class label as people read it: its text (a number or a boolean as Python writes it), on one line; a label
    of no visible text in quotes (``''``), which would otherwise read as nothing (and left Graphviz an empty
    ``<B></B>``, a syntax error)."""
    text = str(label)
    return shorten(text if text.strip() else repr(text), max_len)


#: Why a leaf whose training rows are all one class does not read 100% (``engine.classes.SMOOTHING``), said beside
#: leaf shares wherever they are shown.
SMOOTHED_SHARES = ("each leaf's class shares are smoothed by one extra row spread evenly over the classes, so no "
                   "leaf claims 0% or 100% from its training rows alone")


def percent(share: float) -> str:
    """A share in [0, 1] as a percentage with at most one decimal: ``80%``, ``33.3%``, ``0.4%``; ``<0.1%`` for a share
    too small to show but not zero, so that no class with rows reads as 0%."""
    value = 100.0 * float(share)
    if 0 < value < 0.05:
        return "<0.1%"
    return f"{value:.1f}".removesuffix(".0") + "%"


def node_shares(tree: ObliqueTree, node: int) -> np.ndarray:
    """Class shares (C,) of a classification tree's node: a leaf's predicted probabilities (``leaf_proba``), a branch
    node's training class counts over their sum (zeros where no row reached it)."""
    if tree.is_leaf(node):
        return tree.leaf_proba[node - tree.n_leaves]
    counts = tree.node_counts[node - 1]
    return counts / counts.sum() if counts.sum() > 0 else np.zeros_like(counts)


def node_class(tree: ObliqueTree, node: int) -> int:
    """Index of the class a node stands for: what a leaf predicts (its largest probability, the first on a tie), a
    branch node's majority class (first on a tie; the first class where no row reached it)."""
    return int(np.argmax(node_shares(tree, node)))


def shares_text(tree: ObliqueTree, shares: np.ndarray, max_classes: int | None = 3, unicode: bool = True,
                max_name: int | None = None) -> str:
    """``good 75%, bad 20%, ugly 5%``: classes by share, largest first (ties in class order), the first
    ``max_classes`` shown and the rest summarized (``… (4 more)``); classes with no share are left out."""
    order = [int(k) for k in np.argsort(-shares, kind="stable") if shares[k] > 0]
    shown = order if max_classes is None or len(order) <= max_classes + 1 else order[:max_classes]
    parts = [f"{class_name(tree.classes[k], max_name)} {percent(shares[k])}" for k in shown]
    if len(order) > len(shown):
        parts.append(f"{ELLIPSIS if unicode else '...'} ({len(order) - len(shown)} more)")
    return ", ".join(parts)


def bounds_text(tree: ObliqueTree, leaf: int, digits: int = 3, unicode: bool = True) -> str | None:
    """``kept within [10, 40]`` for a linear leaf that clamps its line to its training targets' range, else None."""
    bounds = tree.leaf_bounds_original(leaf)
    if bounds is None:
        return None
    return f"kept within [{fmt(bounds[0], digits, unicode)}, {fmt(bounds[1], digits, unicode)}]"


def node_level(tree: ObliqueTree, node: int) -> int:
    """A node's level below the root (the root: 0); a depth-0 tree's one model (held at node 2 under a split that
    sends every row left, ``depth_text``) is level 0 too."""
    return 0 if tree.meta.get("single_model") else len(path_to(node)) - 1


def path_to(node: int) -> list[int]:
    """Node ids from the root (1) down to ``node``, inclusive."""
    path = []
    while node >= 1:
        path.append(node)
        node //= 2
    return path[::-1]


def path_rules(tree: ObliqueTree, node: int, digits: int = 3, max_terms: int | None = 3,
               unicode: bool = True) -> list[str]:
    """The conditions a row satisfies to reach ``node``, one per ancestor that decides (a pass-through, which every
    row passes, is no condition: ``model.prune``), root first."""
    path = path_to(node)
    return [split_text(tree, parent, digits, max_terms, unicode, go_right=bool(child % 2))
            for parent, child in zip(path, path[1:]) if prune.passes_to(tree, parent) is None]


def node_kind(tree: ObliqueTree, node: int) -> str:
    if not 1 <= node <= tree.n_nodes:
        raise ValueError(f"Node {node} does not exist; this tree has nodes 1 to {tree.n_nodes}.")
    return "leaf" if tree.is_leaf(node) else "branch"


def visible(text: str) -> str:
    """``text`` with the characters a reader cannot see written as escapes (``\\u202e``): NUL and the other control
    characters, format characters such as the right-to-left override U+202E (which makes ``x\\u202egnp.exe`` look
    like ``xexe.png``) and the zero-width ones (two names that look alike must not read alike), private-use and
    unassigned code points. Rules, diagrams and the report show names through here, so they show what is there."""
    return "".join(_escaped(ch) if unicodedata.category(ch) in HIDDEN else ch for ch in text)


def _escaped(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"


def shorten(name: str, max_len: int | None) -> str:
    """``name`` cut to ``max_len`` characters with an ellipsis; line breaks, tabs and the other blank control
    characters become spaces, so a name never breaks a label, a rule or a code comment across lines, and every other
    hidden character is escaped (``visible``)."""
    name = visible("".join(" " if ch in BLANKS else ch for ch in name))
    if max_len is None or len(name) <= max_len:
        return name
    return name[: max(1, max_len - 1)] + ELLIPSIS


def _terms(coefs: np.ndarray, importance: np.ndarray, names: list[str]) -> list[Term]:
    order = [int(j) for j in np.argsort(-importance, kind="stable") if coefs[j] != 0]
    return [Term(j, names[j], float(coefs[j]), float(importance[j])) for j in order]


def _exact_threshold(tree: ObliqueTree, node: int, feature: int, below: bool) -> float | None:
    """The last double value of ``feature`` that one-feature split ``node`` sends left (``below``: its left side is
    the low one), or the first (not ``below``), by the model's own test; None if it sends every finite value one
    way."""
    j = feature
    return _threshold_of(float(tree.weights[node - 1, j]), float(tree.thresholds[node - 1]), float(tree.x_min[j]),
                         float(tree.x_scale[j]))


@functools.lru_cache(maxsize=4096)
def _threshold_of(weight: float, threshold: float, x_min: float, x_scale: float) -> float | None:
    """``_exact_threshold`` for a split ``weight * (x - x_min) / x_scale <= threshold``, asked of a one-feature stump
    with these numbers (``ObliqueTree.goes_left``, the model's test). Each round tries ``_SEARCH_POINTS`` values
    spread evenly over the doubles still in question. Cached: the diagram, its hover text and its rounding check
    ask for the same split."""
    stump = ObliqueTree(weights=[[weight]], thresholds=[threshold], leaf_intercepts=[0.0, 0.0],
                        leaf_coefs=np.zeros((2, 1)), n_samples=np.zeros(3), node_values=np.zeros(3),
                        x_min=[x_min], x_scale=[x_scale], feature_names=["x"])
    below = weight > 0
    lo, hi = _ordered(-np.finfo(float).max), _ordered(np.finfo(float).max)

    def left(keys: list[int]) -> np.ndarray:
        return stump.goes_left(1, _doubles(keys)[:, None])

    ends = left([lo, hi])
    if ends[0] == ends[1]:
        return None
    while hi - lo > 1:  # below: left(lo) and not left(hi); else the reverse
        keys = sorted({lo + i * (hi - lo) // (_SEARCH_POINTS - 1) for i in range(_SEARCH_POINTS)})  # Python ints
        sides = left(keys) == below  # True on the low side of the boundary
        k = int(np.argmin(sides))  # first key past the boundary (keys[0] = lo is on the low side)
        lo, hi = keys[k - 1], keys[k]
    return float(_doubles([lo if below else hi])[0])


def _ordered(value: float) -> int:
    """``value``'s place among the doubles, as an integer that orders as the doubles do."""
    bits = struct.unpack("<q", struct.pack("<d", value + 0.0))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _doubles(keys: list[int]) -> np.ndarray:
    """The doubles at places ``keys`` (``_ordered``'s inverse)."""
    k = np.array(keys, dtype=np.int64)
    bits = np.where(k >= 0, k, np.bitwise_or(-k, np.int64(-(1 << 63))))
    return bits.view(np.float64)


# ------------------------------------------------------------------ raw columns (``ObliqueTree.inputs``, issue 47)
MISSING_LEVEL = "(missing)"  # a category column's missing value, where training had some: a level of its own


@dataclass(frozen=True)
class ColumnTerm:
    """One raw column's part of a split, as its user reads it: a number's weight (``coef``, original units; 0 when
    the split only asks whether it is missing) with the weight of its "is missing" input (``missing``), or a
    category column's weight per category (``levels``: each non-zero one, largest first)."""

    column: RawColumn
    coef: float = 0.0
    missing: float = 0.0
    levels: tuple[tuple[str, float], ...] = ()
    importance: float = 0.0  # the largest |weight| of its inputs in scaled units, the ordering key

    @property
    def missing_as(self) -> float:
        """The value a missing number counts as in this split: its training mean plus its "if missing" weight over
        its own (``coef`` · value = ``coef`` · fill + ``missing``)."""
        return self.column.fill + (self.missing / self.coef if self.coef else 0.0)


def row_names(tree: ObliqueTree) -> list[str]:
    """The columns a row given to ``predict`` holds: a tree's raw columns where it has them (``inputs``), else its
    features."""
    return tree.feature_names if tree.inputs is None else tree.inputs.names


def input_labels(tree: ObliqueTree) -> list[str]:
    """Each engine input as its user reads it: a number's "is missing" input as ``income (if missing)``, a
    category's as ``colour=red`` (``colour=(missing)`` for its missing level), any other by its name."""
    if tree.inputs is None:
        return list(tree.feature_names)
    out = []
    for column in tree.inputs.columns:
        if column.kind == "number":
            out += [column.name] + ([f"{column.name} (if missing)"] if column.missing else [])
        else:
            out += [f"{column.name}={level}" for level in column.categories]
            out += [f"{column.name}={MISSING_LEVEL}"] if column.missing else []
    return out


def value_input(tree: ObliqueTree, column: str) -> int:
    """The engine input that holds number ``column``'s value (its scaling's index in ``x_min`` / ``x_scale``)."""
    if tree.inputs is None:
        return tree.feature_names.index(column)
    return int(np.flatnonzero(tree.groups == tree.inputs.names.index(column))[0])


def column_terms(tree: ObliqueTree, node: int, digits: int | None = None) -> list[ColumnTerm] | None:
    """Branch ``node``'s split per raw column, largest first (for rounded text without the negligible ones); None for
    a tree fitted on plain numbers (no ``inputs``), whose inputs are its columns."""
    if tree.inputs is None:
        return None
    w, _ = tree.split_in_original_units(node)
    scaled = np.abs(tree.weights[node - 1])
    groups = tree.groups
    terms = []
    for g, column in enumerate(tree.inputs.columns):
        inputs = np.flatnonzero(groups == g)
        if not np.any(w[inputs] != 0):
            continue
        importance = float(scaled[inputs].max())
        if column.kind == "number":
            missing = float(w[inputs[1]]) if column.missing else 0.0
            terms.append(ColumnTerm(column, coef=float(w[inputs[0]]), missing=missing, importance=importance))
        else:
            names = [*column.categories, *([MISSING_LEVEL] if column.missing else [])]
            order = np.argsort(-scaled[inputs], kind="stable")
            levels = tuple((names[k], float(w[inputs[k]])) for k in order if w[inputs[k]] != 0)
            terms.append(ColumnTerm(column, levels=levels, importance=importance))
    terms.sort(key=lambda t: -t.importance)
    if digits is None or not terms:
        return terms
    return [t for t in terms if t.importance >= NEGLIGIBLE * terms[0].importance]


def in_columns(tree: ObliqueTree, node: int, digits: int | None = None) -> list[ColumnTerm] | None:
    """``column_terms`` where the split needs the raw columns' words (a category column, or a number that had
    missing values in training); None where the plain form reads the same."""
    terms = column_terms(tree, node, digits)
    if terms is None or all(t.column.kind == "number" and not t.column.missing for t in terms):
        return None
    return terms


def term_count(tree: ObliqueTree, node: int, digits: int | None = 3) -> int:
    """How many terms branch ``node``'s text shows before any summary: raw columns where the tree has them (a
    category column and a number's "if missing" are one term), else non-zero weights."""
    terms = in_columns(tree, node, digits)
    return len(split_terms(tree, node, digits)) if terms is None else len(terms)


def category_sides(tree: ObliqueTree, node: int, column: RawColumn) -> tuple[dict[str, bool], bool]:
    """({level: goes left}, whether any other value goes left) at branch ``node``, by the model's own test: each
    level's row, and a row that sets none of the column's inputs (a category never seen in training, or a missing
    one where training had none)."""
    g = tree.inputs.names.index(column.name)
    inputs = np.flatnonzero(tree.groups == g)
    rows = np.zeros((len(inputs) + 1, tree.n_features))
    rows[np.arange(len(inputs)), inputs] = 1.0
    left = tree.goes_left(node, rows)
    names = [*column.categories, *([MISSING_LEVEL] if column.missing else [])]
    return dict(zip(names, left[:-1].tolist())), bool(left[-1])


def _missing_goes_left(tree: ObliqueTree, node: int, column: RawColumn) -> bool:
    """Whether a missing value of number ``column`` goes left at ``node`` (the model's own test, its value at the
    fill and its "is missing" input at 1)."""
    g = tree.inputs.names.index(column.name)
    value, flag = np.flatnonzero(tree.groups == g)[:2]
    row = np.zeros((1, tree.n_features))
    row[0, value], row[0, flag] = column.fill, 1.0
    return bool(tree.goes_left(node, row)[0])


def column_split_parts(tree: ObliqueTree, node: int, terms: list[ColumnTerm], digits: int | None = 3,
                       max_terms: int | None = 3, unicode: bool = True, go_right: bool = False,
                       max_name: int | None = None) -> tuple[list[str], str, str]:
    """``split_parts`` for a split read per raw column: one column reads ``colour in {red, blue}`` (or ``not in``,
    whichever also holds for values never seen), ``income ≤ 40,000 (if missing: counts as 42,000)`` or ``income is
    missing``; several read as terms, a category column as its weights (``colour[red 0.5, blue −0.3]``, others 0)."""
    if len(terms) == 1:
        return _one_column(tree, node, terms[0], digits, unicode, go_right, max_name)
    _, c = tree.split_in_original_units(node)
    whole = max_terms is None or len(terms) <= max(max_terms + 1, SENTENCE_TERMS)
    shown = terms if whole else terms[:max_terms]
    minus = MINUS if unicode else "-"
    out = []
    for i, term in enumerate(shown):
        body, negative = _column_body(term, digits, unicode, max_name)
        out.append(((minus if negative else "") + body) if i == 0 else f"{minus if negative else '+'} {body}")
    if len(terms) > len(shown):
        out.append(f"+ {ELLIPSIS if unicode else '...'} ({len(terms) - len(shown)} more)")
    return out, ">" if go_right else (LEQ if unicode else "<="), fmt(c, digits, unicode)


def _one_column(tree: ObliqueTree, node: int, term: ColumnTerm, digits: int | None, unicode: bool, go_right: bool,
                max_name: int | None) -> tuple[list[str], str, str]:
    """A split on one raw column in its own words: a category column's levels on the side described, a number's
    threshold with what a missing value counts as, or whether it is missing."""
    name = shorten(term.column.name, max_name)
    if term.column.kind == "category":
        sides, other = category_sides(tree, node, term.column)
        side = not go_right  # the side described: True = left
        listed = [level for level, left in sides.items() if (left == side) != (other == side)]
        shown = ", ".join(shorten(level, max_name) for level in listed)
        return [name], ("not in" if other == side else "in"), f"{{{shown}}}"
    if term.coef == 0:
        missing_left = _missing_goes_left(tree, node, term.column)
        return [name], "is", "missing" if missing_left == (not go_right) else "not missing"
    lhs, op, number = _value_threshold(tree, node, term, digits, unicode, go_right, max_name)
    return lhs, op, f"{number} (if missing: counts as {fmt(term.missing_as, digits, unicode)})"


def _value_threshold(tree: ObliqueTree, node: int, term: ColumnTerm, digits: int | None, unicode: bool,
                     go_right: bool, max_name: int | None) -> tuple[list[str], str, str]:
    """A number column's threshold where the split also weighs its "is missing" input (0 for a present value, so
    the value alone decides): the last value sent left, by the model's own test."""
    j = int(np.flatnonzero(tree.groups == tree.inputs.names.index(term.column.name))[0])
    below = term.coef > 0
    exact = _threshold_of(float(tree.weights[node - 1, j]), float(tree.thresholds[node - 1]), float(tree.x_min[j]),
                          float(tree.x_scale[j]))
    value = exact if exact is not None else tree.split_in_original_units(node)[1] / term.coef
    if go_right:
        op = ">" if below else "<"
    else:
        op = (LEQ if unicode else "<=") if below else (GEQ if unicode else ">=")
    return [shorten(term.column.name, max_name)], op, fmt(value, digits, unicode)


def _column_body(term: ColumnTerm, digits: int | None, unicode: bool, max_name: int | None) -> tuple[str, bool]:
    """One raw column's term without its sign, and whether it is negative: ``0.82·income (if missing: 42,000)``,
    ``3.1·[income missing]``, or a category column's weights ``colour[red 0.5, blue −0.3]`` (never negative)."""
    name = shorten(term.column.name, max_name)
    times = TIMES if unicode else "*"
    if term.column.kind == "category":
        whole = digits is None or len(term.levels) <= SENTENCE_TERMS + 1
        shown = term.levels if whole else term.levels[:SENTENCE_TERMS]
        parts = [f"{shorten(level, max_name)} {fmt(w, digits, unicode)}" for level, w in shown]
        if len(shown) < len(term.levels):
            parts.append(f"{ELLIPSIS if unicode else '...'} ({len(term.levels) - len(shown)} more)")
        return f"{name}[{', '.join(parts)}]", False
    if term.coef == 0:
        return f"{fmt(abs(term.missing), digits, unicode)}{times}[{name} missing]", term.missing < 0
    body = f"{fmt(abs(term.coef), digits, unicode)}{times}{name}"
    if term.column.missing:
        body += f" (if missing: {fmt(term.missing_as, digits, unicode)})"
    return body, term.coef < 0
