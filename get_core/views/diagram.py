"""The tree diagram drawn by Graphviz: node labels as HTML-like markup, DOT source, SVG and layout. What it shows
(which nodes, colours, plain-text names) is ``views.diagram_content``'s.

Built as a ``graphviz.Digraph`` (the package quotes names and attributes) and rendered through the package's ``pipe``
with Graphviz's ``dot``. Clicking: in ``clickable_svg`` each node's ``<g>`` carries ``id="get-node-<heap id>"`` and
class ``get-node``, so the browser side (``diagram_component/tree.js``, mounted by the page as a Streamlit
components-v2 component) maps a click to a node id. ``layout`` gives the same positions as data (``dot -Tjson0``).

No streamlit here: the page reads ``component_assets()`` and declares the component itself.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import graphviz
import numpy as np

from get_core.errors import GETExplorerError
from get_core.model import prune
from get_core.model.tree import ObliqueTree
from get_core.views import labels
from get_core.views.diagram_content import (CLASS_PALETTE, DiagramOptions, class_color, hidden_count, leaf_colors,
                                           node_name, node_tooltip, printable, rounded_nodes, visible_nodes)

NODE_ID_PREFIX = "get-node-"
# graphviz's pipe has no timeout, so what dot is given is bounded instead. Its time grows faster than the node count
# and slowly with text (2 shared cores, 200 features, tooltips at MAX_DOT_STRING: 2047 nodes 6 s, 4095 nodes 29 s).
MAX_DRAWN_NODES = 2047  # a full depth-10 tree; the page draws at most 127 nodes until subtrees are expanded
MAX_DOT_STRING = 16_000  # bytes; Graphviz (2.43) refuses a quoted string longer than 16384
SENTENCE_WIDTH = 48  # characters: a short split longer than this breaks before its threshold
TITLE_WIDTH = 60  # characters a line of the diagram's title holds
# A tree opens with the levels that fit a box this wide with text at least READABLE of its natural size
# (``readable_levels``): the Tree page's box is as wide as the page (a 1,400 px window less the sidebar), the report's
# the window's. READABLE is also the browser side's smallest opening scale (diagram_component/tree.js).
OPEN_WIDTH_PX = 1100
READABLE = 0.6
#: A logistic leaf's label shows the odds of at most this many classes, each with its largest terms (the node panel
#: lists them all): the diagram stays a map, not the model.
LOGISTIC_CLASSES, LOGISTIC_TERMS = 2, 2
MAX_OPEN_LEVELS = 7  # more levels than this make an unreadable picture; deeper parts open with "Expand"
ASSETS = Path(__file__).with_name("diagram_component")
BRANCH_FILL = "#f7f7f7"
#: A split's edges: its written condition holds (left) or not. Words, not "≤" / ">": a split written "cylinders ≥ 4.5"
#: (a negative weight) sends its "≥" side left, so symbols on the edges would contradict the condition above them.
EDGE_LABELS = ("yes", "no")
BAR_WIDTH = 96  # points: a class leaf's bar of class shares
BAR_CLASSES = 20  # a bar's cells: the largest shares, the rest one grey cell (OTHER_CLASSES_FILL)
OTHER_CLASSES_FILL = "#bbbbbb"
LEGEND_CLASSES = 50  # classes the title names with their colours (the app's most); the rest are counted
SELECTED_COLOR = "#d62728"
_NODE_STATEMENT = re.compile(r"^\tn\d+ \[", re.M)  # one per node in to_dot's output; no text holds a line break
# A node's group in dot's SVG: dot writes the '-' of "get-node-" as "&#45;".
_NODE_GROUP = re.compile(r'(<g id="get(?:-|&#45;)node(?:-|&#45;)(\d+)" class="[^"]*")')


class GraphvizError(GETExplorerError, RuntimeError):
    """Graphviz's ``dot`` is missing or failed; the message says which and what to do."""


# ---------------------------------------------------------------------------------------------- labels
def node_label(tree: ObliqueTree, node: int, options: DiagramOptions = DiagramOptions(),
               hidden: int = 0) -> str:
    """Graphviz HTML-like label (without the outer ``<>``); every user-provided string is escaped."""
    n = int(tree.n_samples[node - 1])
    is_leaf = tree.is_leaf(node)
    head = f"<B>{'leaf ' if is_leaf else ''}#{node}</B>  {n:,} row{'s' if n != 1 else ''}"
    if tree.is_empty(node):
        return head + '<BR ALIGN="LEFT"/><I>empty: no training row</I><BR ALIGN="LEFT"/>'
    if is_leaf:
        lines = _class_leaf_lines(tree, node, options) if tree.is_classifier else _leaf_lines(tree, node, options)
    else:
        lines = _branch_lines(tree, node, options)
        if tree.is_classifier:
            lines.append("mostly " + _class_share(tree, node, options))
    if hidden:
        lines.append(f"<I>\u25b8 {hidden:,} nodes below</I>")
    text = head + '<BR ALIGN="LEFT"/>' + '<BR ALIGN="LEFT"/>'.join(lines) + '<BR ALIGN="LEFT"/>'
    if not (is_leaf and tree.is_classifier):
        return text
    return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0"><TR><TD ALIGN="LEFT" '
            f'BALIGN="LEFT">{text}</TD></TR><TR><TD ALIGN="LEFT">{share_bar(labels.node_shares(tree, node))}</TD>'
            "</TR></TABLE>")


def _class_share(tree: ObliqueTree, node: int, options: DiagramOptions) -> str:
    """``<B>good</B> 75%``: the node's class (what a leaf predicts, a branch's majority) and its share."""
    k = labels.node_class(tree, node)
    name = escape_html_label(labels.class_name(tree.classes[k], options.max_name))
    return f"<B>{name}</B> {escape_html_label(labels.percent(labels.node_shares(tree, node)[k]))}"  # '<0.1%' too


def _class_leaf_lines(tree: ObliqueTree, node: int, options: DiagramOptions) -> list[str]:
    """A class leaf: the class it predicts, then every class's share in words (largest first), so that the leaf
    reads without its colours."""
    shares = labels.shares_text(tree, labels.node_shares(tree, node), max_classes=2, max_name=options.max_name)
    effects = labels.odds_effects(tree, node, max_terms=LOGISTIC_TERMS)
    if not effects:
        return [f"\u0177 = {_class_share(tree, node, options)}", escape_html_label(shares)]
    lines = [f"mostly {_class_share(tree, node, options)}", escape_html_label(shares)]
    lines += [escape_html_label(labels.odds_short(tree, e, max_name=options.max_name))
              for e in effects[:LOGISTIC_CLASSES]]
    if len(effects) > LOGISTIC_CLASSES:
        more = len(effects) - LOGISTIC_CLASSES
        lines.append(f"<I>\u2026 and {more:,} more class{'es' if more > 1 else ''} (node panel)</I>")
    return lines


def share_bar(shares: np.ndarray, width: int = BAR_WIDTH) -> str:
    """A Graphviz HTML table: one cell per class with a share, as wide as its share of ``width`` points (at least
    1), in the class's colour, in class order; beyond ``BAR_CLASSES`` classes the smaller shares share one grey cell
    at the end (a thousand 1-point cells overflowed the bar and the page)."""
    shown = np.flatnonzero(shares > 0)
    if len(shown) > BAR_CLASSES:
        shown = np.sort(shown[np.argsort(-shares[shown], kind="stable")[:BAR_CLASSES]])
    rest = float(shares.sum() - shares[shown].sum())
    parts = [(float(shares[k]), class_color(k)) for k in shown] + ([(rest, OTHER_CLASSES_FILL)] if rest > 0 else [])
    cells = "".join(f'<TD WIDTH="{max(1, round(width * v))}" HEIGHT="7" FIXEDSIZE="TRUE" BGCOLOR="{color}"></TD>'
                    for v, color in parts)
    total = sum(max(1, round(width * v)) for v, _ in parts)  # the table's own width: never stretched
    return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" FIXEDSIZE="TRUE" WIDTH="{total}" '
            f'HEIGHT="7"><TR>{cells}</TR></TABLE>')


def class_legend(tree: ObliqueTree) -> str:
    """``fill: orange bad, sky blue good``: the colour of each class, in words (the first ``LEGEND_CLASSES``, then
    how many more)."""
    named = ", ".join(f"{CLASS_PALETTE[k % len(CLASS_PALETTE)][1]} {labels.class_name(c, 40)}"
                      for k, c in enumerate(tree.classes[:LEGEND_CLASSES]))
    more = tree.n_classes - LEGEND_CLASSES
    return "fill: " + named + (f" and {more:,} more classes" if more > 0 else "")


def readable_levels(tree: ObliqueTree, render: Callable[[str], str] | None = None, width_px: float = OPEN_WIDTH_PX,
                    readable: float = READABLE) -> int:
    """The most levels (up to ``MAX_OPEN_LEVELS``, at least two) whose picture, fitted to ``width_px``, keeps its
    text at least ``readable`` of its natural size: a tree opens so, deeper levels collapsed ("▸ n nodes below"),
    rather than shrunk to unreadable text (issue 35: "Fit" drew a depth-4 tree's labels 4 px high). ``render``
    draws DOT as SVG (``render_svg`` by default; a page passes its cached one)."""
    render = render or render_svg
    for levels in range(min(tree.depth + 1, MAX_OPEN_LEVELS), 2, -1):
        if svg_width_px(render(to_dot(tree, DiagramOptions(levels=levels)))) * readable <= width_px:
            return levels
    return min(tree.depth + 1, 2)


def svg_width_px(svg: str) -> float:
    """The natural width of Graphviz's SVG in CSS pixels (it writes points: 1 pt = 4/3 px); 0 when it has none."""
    match = re.search(r'<svg[^>]*?\swidth="([0-9.]+)(pt|px)?"', svg)
    if not match:
        return 0.0
    return float(match.group(1)) * (4 / 3 if match.group(2) in (None, "pt") else 1.0)


def _branch_lines(tree: ObliqueTree, node: int, options: DiagramOptions) -> list[str]:
    """A short split (at most ``labels.SENTENCE_TERMS`` terms) as one sentence, ``0.8·temp − 0.3·vacuum ≤ 12.1``
    or ``cylinders ≤ 4.5``, broken before its threshold only when it is long; a dense one two terms a line, its
    largest terms first and the rest summarized, the threshold on its own line."""
    terms, op, number = labels.split_parts(tree, node, options.digits, options.max_terms, max_name=options.max_name)
    threshold = f"{op} {number}"
    if labels.term_count(tree, node, options.digits) <= labels.SENTENCE_TERMS:
        sentence = " ".join([*terms, threshold])
        lines = [sentence] if len(sentence) <= SENTENCE_WIDTH else [" ".join(terms), threshold]
    else:
        lines = [" ".join(terms[i:i + 2]) for i in range(0, len(terms), 2)] + [threshold]
    return [escape_html_label(line) for line in lines]


def _leaf_lines(tree: ObliqueTree, node: int, options: DiagramOptions) -> list[str]:
    h, _ = tree.leaf_in_original_units(node)
    terms = labels.leaf_terms(tree, node)
    if not terms:
        return [f"\u0177 = <B>{escape_html_label(labels.fmt(h, options.digits))}</B>"]
    parts = labels.format_terms(terms, options.digits, max(1, options.max_terms - 1), max_name=options.max_name)
    sign = labels.MINUS if h < 0 else "+"
    parts.append(f"{sign} {labels.fmt(abs(h), options.digits)}")
    lines = [" ".join(parts[i:i + 2]) for i in range(0, len(parts), 2)]
    lines = [escape_html_label(line) for line in lines]
    lines[0] = "\u0177 = " + lines[0]
    bounds = labels.bounds_text(tree, node, options.digits)
    if bounds is not None:  # the line is clamped to the leaf's training targets
        lines.append(escape_html_label(bounds))
    lines.append(f"mean {escape_html_label(labels.fmt(tree.node_value_original(node), options.digits))}")
    return lines


# ---------------------------------------------------------------------------------------------- DOT
def to_graph(tree: ObliqueTree, options: DiagramOptions = DiagramOptions()) -> graphviz.Digraph:
    """The diagram as a ``graphviz.Digraph``: HTML-like labels, node ids ``get-node-<t>``, edges labelled
    ``EDGE_LABELS``. The package quotes every identifier and attribute; ``escape_dot_string`` and ``escape_html_label`` make
    user-given text show verbatim inside those quotes."""
    shown = visible_nodes(tree, options)
    shown_set = set(shown)
    colors = leaf_colors(tree)
    title = "GET oblique tree" if options.root == 1 else f"Subtree under node {options.root}"
    if tree.is_classifier:
        title += f" ({class_legend(tree)})"
    if rounded_nodes(tree, shown, options.digits):
        title += f" (numbers rounded to {options.digits} significant digits; hover a node for its exact split)"
    tooltip = escape_dot_string(title)
    # a title on one line set the picture's width (1,085 px for three nodes of a class tree): wrapped, "\n" centred
    title = graphviz.nohtml("\\n".join(escape_dot_string(line) for line in textwrap.wrap(title, TITLE_WIDTH)))
    graph = graphviz.Digraph(
        "GET",
        graph_attr={"rankdir": options.rankdir, "nodesep": "0.25", "ranksep": "0.45", "fontname": "Helvetica",
                    "label": title, "labelloc": "t", "fontsize": "12", "tooltip": tooltip},
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica", "fontsize": "10",
                   "margin": "0.12,0.06"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9", "arrowsize": "0.6"})
    for node in shown:
        hidden = hidden_count(tree, node, shown_set) if not (options.prune_empty and tree.is_empty(node)) else 0
        graph.node(f"n{node}", f"<{node_label(tree, node, options, hidden)}>",
                   _attributes=_node_attributes(tree, node, options, colors, hidden))
    for node in shown:
        if tree.is_leaf(node):
            continue
        for child, text in zip(prune.shown_children(tree, node), EDGE_LABELS):
            if child in shown_set:
                graph.edge(f"n{node}", f"n{child}", label=text, id=f"get-edge-{node}-{child}",
                           _attributes=_path_edge(options, node, child))
    return graph


def _path_colors(options: DiagramOptions, node: int) -> list[str]:
    """The colours of the highlighted paths through ``node``, in ``options.paths`` order."""
    return [color for path, color in options.paths if node in path]


def _path_edge(options: DiagramOptions, node: int, child: int) -> dict[str, str]:
    """An edge on highlighted paths: thick, in their colours (parallel strokes where several share it)."""
    colors = [color for path, color in options.paths if node in path and child in path]
    return {"color": ":".join(colors), "penwidth": "2.5", "class": "get-path-edge"} if colors else {}


def _node_attributes(tree: ObliqueTree, node: int, options: DiagramOptions, colors: dict[int, str],
                     hidden: int) -> dict[str, str]:
    attrs = {
        "id": NODE_ID_PREFIX + str(node),  # tree.js maps a click to a node through this id and the class
        "class": "get-node " + ("get-leaf" if tree.is_leaf(node) else "get-branch"),
        "tooltip": escape_dot_string(node_tooltip(tree, node)),
    }
    if tree.is_empty(node):
        attrs.update(style="rounded,dashed", color="#aaaaaa", fontcolor="#888888", fillcolor="white")
    else:
        attrs["fillcolor"] = colors.get(node, BRANCH_FILL)
    if hidden:
        attrs["penwidth"] = "2"
    on_paths = _path_colors(options, node)
    if on_paths:  # the border of the last path given (the new one) where both pass
        attrs.update(color=on_paths[-1], penwidth="3")
        attrs["class"] += " get-path-node"
    if node == options.selected:
        attrs.update(color=SELECTED_COLOR, penwidth="3")
    return attrs


def to_dot(tree: ObliqueTree, options: DiagramOptions = DiagramOptions()) -> str:
    """DOT source of the diagram (what ``render_svg`` and the page's DOT download take)."""
    return to_graph(tree, options).source


def escape_dot_string(text: str) -> str:
    """``text`` for a DOT escString (``tooltip``, ``label``) that Graphviz shows verbatim; the graphviz package adds
    the quotes and escapes ``"``.

    Graphviz (2.43) unescapes such strings twice (``\\\\`` -> ``\\``, then ``\\N``, ``\\G`` ... are
    substituted) and decodes XML entities, so a backslash becomes four backslashes and ``& < >`` become entities;
    line breaks become spaces and other control characters are dropped; text that would pass Graphviz's string limit
    is cut with an ellipsis. Marked ``nohtml`` so that no value is ever read as an HTML-like label.
    tests/views/test_diagram.py checks the round trip through ``dot -Tsvg``.
    """
    text = printable(text)
    escaped = _escape_esc_string(text)
    if len(escaped.encode("utf-8")) > MAX_DOT_STRING:  # cut: every character escapes to at most 5 bytes (&amp;)
        escaped = _escape_esc_string(text[:MAX_DOT_STRING // 5 - 1] + labels.ELLIPSIS)
    return graphviz.nohtml(escaped)


def _escape_esc_string(text: str) -> str:
    return text.replace("\\", "\\" * 4).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_html_label(text: str) -> str:
    """Text for a Graphviz HTML-like label, shown verbatim: ``& < > " '`` as entities, a backslash as two escaped
    backslashes (Graphviz decodes entities, then unescapes ``\\\\`` and substitutes ``\\N``), ``]`` as an entity
    (Graphviz's HTML lexer fails on a ``]`` right after a tag: a class labelled ``]``), line breaks as spaces, other
    control characters dropped."""
    return html.escape(printable(text), quote=True).replace("\\", "&#92;&#92;").replace("]", "&#93;")


# ---------------------------------------------------------------------------------------------- rendering
def render(dot_source: str, fmt: str = "svg") -> bytes:
    """``dot_source`` laid out by Graphviz's ``dot`` into ``fmt`` (``svg``, ``json0`` ...), through the graphviz
    package. The package has no timeout, so the number of nodes is bounded instead (``MAX_DRAWN_NODES``)."""
    nodes = len(_NODE_STATEMENT.findall(dot_source))
    if nodes > MAX_DRAWN_NODES:
        raise GraphvizError(f"This view has {nodes:,} nodes, more than the {MAX_DRAWN_NODES:,} that can be drawn "
                            "quickly; collapse expanded subtrees or show fewer levels (the DOT download has them all).")
    try:
        return graphviz.Source(dot_source, engine="dot").pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        raise GraphvizError("Graphviz's 'dot' program was not found. Install Graphviz (Debian: apt-get install "
                            "graphviz; the README's set-up command does this) and restart the app.") from None
    except graphviz.CalledProcessError as exc:
        message = (exc.stderr or b"").decode("utf-8", "replace").strip()
        raise GraphvizError(f"Graphviz failed (exit {exc.returncode}): {message[:500]}") from None
    except OSError as exc:  # dot stopped reading its input (the package writes it line by line)
        raise GraphvizError(f"Graphviz failed: {exc}") from None


def render_svg(dot_source: str) -> str:
    """SVG markup (no XML prolog, doctype or comments) ready to inline in HTML."""
    return clean_svg(render(dot_source, "svg").decode("utf-8"))


def clean_svg(svg: str) -> str:
    svg = re.sub(r"<\?xml.*?\?>", "", svg, flags=re.S)
    svg = re.sub(r"<!DOCTYPE.*?>", "", svg, flags=re.S)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    return svg.strip() + "\n"


def clickable_svg(tree: ObliqueTree, options: DiagramOptions = DiagramOptions()) -> str:
    """The diagram as inline SVG whose node groups are ``<g id="get-node-<t>" class="node get-node ..."
    tabindex="0" role="button" aria-label="...">`` (``with_node_names``)."""
    return with_node_names(render_svg(to_dot(tree, options)), tree)


def with_node_names(svg: str, tree: ObliqueTree) -> str:
    """``svg`` (Graphviz output of ``to_dot``) with every node group focusable by keyboard and named: ``tabindex="0"
    role="button" aria-label="<node_name>"``, so Tab reaches the nodes and Enter selects one (``tree.js``)."""

    def named(match: re.Match) -> str:
        node = int(match.group(2))
        if not 1 <= node <= tree.n_nodes:
            return match.group(0)
        name = html.escape(node_name(tree, node), quote=True)
        return f'{match.group(1)} tabindex="0" role="button" aria-label="{name}"'

    return _NODE_GROUP.sub(named, svg)


def node_id_from_element_id(element_id: str) -> int | None:
    """``get-node-12`` -> 12; anything else -> None."""
    match = re.fullmatch(re.escape(NODE_ID_PREFIX) + r"(\d+)", element_id or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class NodeBox:
    """A laid-out node in points, origin at the bottom left (Graphviz's convention)."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    nodes: dict[int, NodeBox]
    edges: list[tuple[int, int]]


def layout(dot_source: str) -> Layout:
    """Node positions and sizes from ``dot -Tjson0`` for a DOT made by ``to_dot`` (ids are heap numbers)."""
    data = json.loads(render(dot_source, "json0").decode("utf-8"))
    _, _, width, height = (float(v) for v in data["bb"].split(","))
    nodes: dict[int, NodeBox] = {}
    gvid_to_node: dict[int, int] = {}
    for obj in data.get("objects", []):
        node = node_id_from_element_id(obj.get("id", ""))
        if node is None:
            continue
        x, y = (float(v) for v in obj["pos"].split(","))
        nodes[node] = NodeBox(x, y, 72.0 * float(obj["width"]), 72.0 * float(obj["height"]))
        gvid_to_node[obj["_gvid"]] = node
    edges = [(gvid_to_node[e["tail"]], gvid_to_node[e["head"]]) for e in data.get("edges", [])
             if e["tail"] in gvid_to_node and e["head"] in gvid_to_node]
    return Layout(width, height, nodes, edges)


def component_assets() -> dict[str, str]:
    """``{"js": ..., "css": ...}`` of the browser side of the clickable diagram, for
    ``st.components.v2.component(name, js=..., css=...)`` in the page. The component takes
    ``data={"svg": str, "selected": int | None}`` (the svg from ``clickable_svg`` or ``with_node_names``) and sets the
    trigger value ``clicked`` (node id)."""
    return {"js": (ASSETS / "tree.js").read_text(encoding="utf-8"),
            "css": (ASSETS / "tree.css").read_text(encoding="utf-8")}


