"""The one node-label helper shared by the diagram, the node panel, the report and the exports.

Every human-facing description of a split or a leaf goes through here, so the diagram, the path rules and the
report say the same thing. Splits are shown in the user's original units (``ObliqueTree.split_in_original_units``)
with terms ordered by their size in scaled units (|a_j|: the term's swing across the feature's training range),
largest first, and the rest summarized: ``0.82·temp − 0.31·pressure + … (5 more) ≤ 12.4``. A split or leaf
with at most ``SENTENCE_TERMS`` terms is always written whole, as one sentence: ``0.8·temp − 0.3·vacuum ≤ 12.1``
(zero weights are never terms). Numbers are rounded to ``digits`` significant digits unless ``digits=None``, which
writes each exactly (the rules export's form); ``rounds`` says whether a split's text is rounded.

``unicode=True`` gives the display form (``·``, ``−``, ``≤``); ``unicode=False`` gives plain ASCII (``*``, ``-``,
``<=``) for text files and code comments. Names show hidden characters escaped (``visible``); callers escape
for their medium (DOT, HTML).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from get_core.model.tree import ObliqueTree

MINUS = "\u2212"
TIMES = "\u00b7"
LEQ = "\u2264"
ELLIPSIS = "\u2026"
LINE_SEPARATORS = "\u2028\u2029"  # besides control characters, what ``str.splitlines`` breaks at
BLANKS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85" + LINE_SEPARATORS)  # what a name shows as a space
HIDDEN = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})  # Unicode categories ``visible`` escapes
SENTENCE_TERMS = 3  # a split (or leaf) with at most this many terms is never summarized with "… (n more)"


@dataclass(frozen=True)
class Term:
    """One term ``coef * feature`` of a split or a linear leaf, in original units."""

    index: int  # feature column
    name: str
    coef: float  # original units
    importance: float  # |coef| in scaled units, the ordering key


def fmt(value: float, digits: int | None = 3, unicode: bool = True) -> str:
    """``value`` with ``digits`` significant digits, or with ``digits=None`` the shortest text that reads back as the
    same double (``repr``): the exact form, for rules that must route rows as ``predict`` does. Unicode minus in
    display form."""
    value = float(value) + 0.0  # + 0.0 turns -0.0 into 0.0
    text = repr(value).removesuffix(".0") if digits is None else f"{value:.{digits}g}"
    return text.replace("-", MINUS) if unicode and text.startswith("-") else text


def split_terms(tree: ObliqueTree, node: int) -> list[Term]:
    """Nonzero terms of branch ``node``'s hyperplane, largest (in scaled units) first."""
    w, _ = tree.split_in_original_units(node)
    return _terms(w, np.abs(tree.weights[node - 1]), tree.feature_names)


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
    """``0.82·temp − 0.31·pressure + … (5 more) ≤ 12.4``; with ``go_right`` the negation (``>``)."""
    _, c = tree.split_in_original_units(node)
    lhs = " ".join(format_terms(split_terms(tree, node), digits, max_terms, unicode, max_name))
    op = ">" if go_right else (LEQ if unicode else "<=")
    return f"{lhs} {op} {fmt(c, digits, unicode)}"


def rounds(tree: ObliqueTree, node: int, digits: int | None = 3) -> bool:
    """Whether branch ``node``'s split written with ``digits`` significant digits changes one of its numbers (a
    non-zero weight or the threshold, original units), so that a row near the split could read the other way."""
    if digits is None:
        return False
    w, c = tree.split_in_original_units(node)
    return any(float(fmt(v, digits, unicode=False)) != float(v) for v in [*w[w != 0], c])


def leaf_text(tree: ObliqueTree, leaf: int, digits: int = 3, max_terms: int | None = 3, unicode: bool = True,
              max_name: int | None = None) -> str:
    """The leaf's prediction: ``23.4``, or ``0.5·temp + 0.2·wind + … (3 more) + 3.1`` for a linear leaf, followed by
    ``, kept within [10, 40]`` when the leaf clamps its line to its training targets' range."""
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


def bounds_text(tree: ObliqueTree, leaf: int, digits: int = 3, unicode: bool = True) -> str | None:
    """``kept within [10, 40]`` for a linear leaf that clamps its line to its training targets' range, else None."""
    bounds = tree.leaf_bounds_original(leaf)
    if bounds is None:
        return None
    return f"kept within [{fmt(bounds[0], digits, unicode)}, {fmt(bounds[1], digits, unicode)}]"


def path_to(node: int) -> list[int]:
    """Node ids from the root (1) down to ``node``, inclusive."""
    path = []
    while node >= 1:
        path.append(node)
        node //= 2
    return path[::-1]


def path_rules(tree: ObliqueTree, node: int, digits: int = 3, max_terms: int | None = 3,
               unicode: bool = True) -> list[str]:
    """The conditions a row satisfies to reach ``node``, one per ancestor, root first."""
    path = path_to(node)
    return [split_text(tree, parent, digits, max_terms, unicode, go_right=bool(child % 2))
            for parent, child in zip(path, path[1:])]


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
