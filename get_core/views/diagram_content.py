"""What the tree diagram shows, whatever draws it: which nodes (a few levels at a time), their colours and their
plain-text names (hover text, screen readers). ``views.diagram`` draws it with Graphviz.

Deep trees (depth up to 12, 8191 nodes) are shown a few levels at a time: ``visible_nodes`` keeps ``levels`` node
levels below the view root plus ``levels`` more under every node in ``expanded``; a shown branch whose children are
hidden says how many nodes it hides. Rows never reach the children of an empty node, so those are pruned, and a
pass-through split (``model.prune``) is never drawn: its live child stands in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from get_core.model import prune
from get_core.model.tree import ObliqueTree
from get_core.views import labels

ARIA_TERMS = 6  # terms read out in a node's accessible name (the tooltip and the node panel have them all)


LOW, MID, HIGH = (198, 219, 239), (255, 255, 204), (253, 174, 97)  # leaf fill: light blue - yellow - orange
#: Class colours (Okabe & Ito's palette for colour-blind readers, black left out), by class index, repeating after 7;
#: every label also names its class in words, so the diagram reads without colour too.
CLASS_PALETTE = (("#E69F00", "orange"), ("#56B4E9", "sky blue"), ("#009E73", "green"), ("#F0E442", "yellow"),
                 ("#0072B2", "blue"), ("#D55E00", "vermillion"), ("#CC79A7", "pink"))
CLASS_TINT = {"leaf": 0.5, "branch": 0.25}  # strength of the class colour in a node's fill (the rest white)


@dataclass(frozen=True)
class DiagramOptions:
    """What the diagram shows. ``levels``: node levels below ``root`` (1 = the root alone); ``expanded``: nodes
    under which ``levels`` more levels are shown; ``selected``: drawn with a red border (static renderings only, the
    clickable view highlights in the browser); ``paths``: (root-to-leaf nodes, colour) pairs whose edges and borders
    are drawn in that colour (a row's path before and after a what-if change, ``views.what_if``)."""

    levels: int = 4
    expanded: frozenset[int] = field(default_factory=frozenset)
    root: int = 1
    selected: int | None = None
    digits: int = 3
    max_terms: int = 3
    max_name: int = 22  # feature names longer than this are cut in labels (tooltips keep them, up to MAX_DOT_STRING)
    prune_empty: bool = True
    rankdir: str = "TB"
    paths: tuple[tuple[tuple[int, ...], str], ...] = ()


def visible_nodes(tree: ObliqueTree, options: DiagramOptions = DiagramOptions()) -> list[int]:
    """Nodes drawn for ``options``, in breadth-first order starting at ``options.root``."""
    check_node(tree, options.root)
    if options.levels < 1:
        raise ValueError(f"levels must be at least 1; got {options.levels}.")
    shown = []
    frontier = [(prune.shown(tree, options.root), options.levels - 1)]  # (node, further levels allowed below it)
    while frontier:
        nxt = []
        for node, budget in frontier:
            shown.append(node)
            if node in options.expanded:
                budget = max(budget, options.levels)
            if budget <= 0 or tree.is_leaf(node) or (options.prune_empty and tree.is_empty(node)):
                continue
            nxt += [(child, budget - 1) for child in prune.shown_children(tree, node)]
        frontier = nxt
    return shown


def reveal(tree: ObliqueTree, options: DiagramOptions, node: int) -> DiagramOptions:
    """``options`` with the ancestors of ``node`` expanded as needed so that ``node`` is drawn (the view root moves
    to 1 if ``node`` is outside its subtree). Nodes under an empty node stay hidden when empty subtrees are pruned."""
    check_node(tree, node)
    node = prune.shown(tree, node)  # a pass-through is drawn as its live child
    path = labels.path_to(node)
    if options.root not in path:
        options = replace(options, root=1)
    expanded = set(options.expanded)
    while True:
        shown = set(visible_nodes(tree, replace(options, expanded=frozenset(expanded))))
        if node in shown:
            break
        deepest = max((a for a in path if a in shown), default=None)
        if deepest is None or deepest in expanded:  # cannot open further (an empty subtree, a dead side)
            break
        expanded.add(deepest)
    return replace(options, expanded=frozenset(expanded))


def hidden_count(tree: ObliqueTree, node: int, shown: set[int] | frozenset[int]) -> int:
    """Number of descendants of ``node`` that are not drawn (0 for a leaf or a fully shown subtree); pass-throughs
    and the dead side below them are no nodes a reader would find there (``prune``)."""
    if tree.is_leaf(node) or prune.shown(tree, 2 * node) in shown:
        return 0
    count, stack = 0, list(prune.shown_children(tree, node))
    while stack:
        below = stack.pop()
        count += 1
        if not tree.is_leaf(below):
            stack.extend(prune.shown_children(tree, below))
    return count


def node_tooltip(tree: ObliqueTree, node: int, digits: int | None = None) -> str:
    """Plain-text hover text: the full split or leaf model, every term, names uncut, numbers exact by default (as
    the rules export writes them, so the hover text routes rows as the model does)."""
    if tree.is_empty(node):
        return f"node {node}: no training row reaches it"
    if tree.is_leaf(node) and tree.is_classifier:
        proba = ", ".join(f"{labels.class_name(c)} {labels.fmt(p, digits, False)}"
                          for c, p in zip(tree.classes, labels.node_shares(tree, node)))
        effects = labels.odds_effects(tree, node, None)
        if effects:  # every term of every class's odds, as the whole split is in a branch's
            return (f"leaf {node}: a logistic model; its training rows' shares {proba}; "
                    + "; ".join(labels.odds_short(tree, e, 3 if digits is None else digits, unicode=False)
                                for e in effects))
        return f"leaf {node}: class {labels.leaf_text(tree, node)}; probabilities {proba}"
    if tree.is_leaf(node):
        return f"leaf {node}: y = {labels.leaf_text(tree, node, digits, None, unicode=False)}"
    return f"node {node}: left if {labels.split_text(tree, node, digits, None, unicode=False)}"


def node_name(tree: ObliqueTree, node: int, digits: int = 3, max_terms: int = ARIA_TERMS) -> str:
    """What a screen reader says for a node: ``split 3: left if 0.82·temp ≤ 12.4`` or ``leaf 5: y = 23.4`` (control
    characters of feature names dropped, line breaks as spaces)."""
    if tree.is_empty(node):
        return f"{'leaf' if tree.is_leaf(node) else 'split'} {node}: empty, no training row reaches it"
    if tree.is_leaf(node):
        what = ("" if labels.has_logistic_model(tree, node) else "class ") if tree.is_classifier else "y = "
        return printable(f"leaf {node}: {what}{labels.leaf_text(tree, node, digits, max_terms)}")
    return printable(f"split {node}: left if {labels.split_text(tree, node, digits, max_terms)}")


def rounded_nodes(tree: ObliqueTree, nodes: list[int], digits: int | None) -> list[int]:
    """The branch nodes among ``nodes`` whose drawn split is rounded (``labels.rounds``)."""
    return [t for t in nodes if not tree.is_leaf(t) and not tree.is_empty(t) and labels.rounds(tree, t, digits)]


def leaf_colors(tree: ObliqueTree) -> dict[int, str]:
    """Fill colour of every non-empty leaf: its mean training target (constant leaves: the prediction) mapped
    from the lowest (light blue) to the highest (orange) leaf. A classification tree colours every non-empty node,
    branches too, by its class (``labels.node_class``), leaves stronger (``CLASS_TINT``)."""
    if tree.is_classifier:
        return {t: class_color(labels.node_class(tree, t), CLASS_TINT["leaf" if tree.is_leaf(t) else "branch"])
                for t in range(1, tree.n_nodes + 1) if not tree.is_empty(t)}
    leaves = [t for t in range(tree.n_leaves, 2 * tree.n_leaves) if not tree.is_empty(t)]
    values = {t: leaf_value(tree, t) for t in leaves}
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    return {t: color_scale((v - lo) / (hi - lo) if hi > lo else 0.5) for t, v in values.items()}


def class_color(k: int, strength: float = 1.0) -> str:
    """Hex colour of class ``k`` (``CLASS_PALETTE``), mixed with white: ``strength`` 1 the colour itself."""
    rgb = [int(CLASS_PALETTE[k % len(CLASS_PALETTE)][0][i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 + (c - 255) * strength):02x}" for c in rgb)


def leaf_value(tree: ObliqueTree, leaf: int) -> float:
    """The number a leaf is coloured by: its constant, or for a linear leaf the mean target of its rows."""
    if tree.leaf_type == "constant":
        return tree.leaf_in_original_units(leaf)[0]
    return tree.node_value_original(leaf)


def color_scale(u: float) -> str:
    """Hex colour for ``u`` in [0, 1] on the light blue - yellow - orange scale (dark text stays readable)."""
    u = min(1.0, max(0.0, float(u)))
    a, b, t = (LOW, MID, u * 2) if u <= 0.5 else (MID, HIGH, u * 2 - 1)
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))


def printable(text: str) -> str:
    text = str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return "".join(ch for ch in text if ord(ch) >= 32 and ord(ch) != 127)


def check_node(tree: ObliqueTree, node: int) -> None:
    if not isinstance(node, (int, np.integer)) or not 1 <= node <= tree.n_nodes:
        raise ValueError(f"Node {node!r} does not exist; this tree has nodes 1 to {tree.n_nodes}.")
