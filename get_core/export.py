"""Exports of a fitted ``ObliqueTree``: rules text, DOT/SVG and the HTML review report.

Free functions reading the model arrays. Every split and leaf is worded by the one node-label helper,
``get_core.views.labels``, as in the diagram. The model file is ``get_core.model.model_file``; standalone Python and C
source is ``get_core.model.codegen``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from typing import Any

import numpy as np

from get_core import baselines as baseline_models
from get_core.data.encoding import Encoding
from get_core.model import codegen, prune
from get_core.model.inputs import MISSING
from get_core.model.model_file import model_json, plain
from get_core.model.tree import ObliqueTree
from get_core.views import diagram, diagram_content, labels, summary


# ---------------------------------------------------------------------------------------------- rules
def rules_text(tree: ObliqueTree, decimals: int | None = None, target_name: str | None = None) -> str:
    """Nested if/else rules in original units (``rule_lines``) under a short header. Numbers are exact by default
    (``decimals=None``: each the shortest text that reads back as the model's double), so the rules route rows as
    ``predict`` does; with ``decimals`` they are rounded to that many significant digits and the header says so."""
    target = target_name or tree.meta.get("target") or "the target"
    if tree.is_classifier:
        return _class_rules_text(tree, decimals, target)
    header = [
        f"# GET oblique regression tree: depth {tree.depth}, {tree.leaf_type} leaves, {tree.n_features} features, "
        f"{tree.n_parameters} parameters.",
        f"# Each 'if' is a weighted sum of features in their original units; 'return' gives "
        f"{labels.shorten(str(target), None)}.",
        "# Terms are ordered by their size over the feature's training range, largest first.",
        "# Numbers are written in full (each reads back as the model's own double), so the rules send a row to the "
        "leaf the model does." if decimals is None else
        f"# Numbers are rounded to {decimals} significant digits: a row near a split may go the other way than in the "
        "model.",
    ]
    if tree.has_leaf_bounds:
        header.append("# clip(v, lo, hi) keeps v within [lo, hi], the training targets of that leaf (their range; "
                      "for a line, without outliers: Tukey's far fences).")
    return "\n".join(header + inputs_lines(tree) + [""] + rule_lines(tree, decimals)) + "\n"


def _class_rules_text(tree: ObliqueTree, decimals: int | None, target: str) -> str:
    classes = ", ".join(codegen.label_literal(c) for c in tree.classes)
    header = [
        f"# GET oblique classification tree: {labels.depth_text(tree)}, {tree.n_classes} classes ({classes}), "
        f"{tree.n_features} features, {tree.n_parameters} parameters.",
        f"# Each 'if' is a weighted sum of features in their original units; 'return' gives the predicted class of "
        f"{labels.shorten(str(target), None)},",
        "# the one with the largest probability in its leaf (the first on a tie).",
        *(["# A leaf with a logistic model lists each class's logit (original units); its probabilities are "
           "(1 - m) * softmax(logits) + m / C,",
           "# and 'return' gives the class with the largest. A leaf without one lists its class probabilities."]
          if tree.has_logistic_leaves else
          ["# Each leaf's comment lists its class probabilities (what predict_proba gives), in the order of the "
           "classes."]),
        "# Terms are ordered by their size over the feature's training range, largest first.",
        "# Numbers are written in full (each reads back as the model's own double), so the rules send a row to the "
        "leaf the model does." if decimals is None else
        f"# Numbers are rounded to {decimals} significant digits: a row near a split may go the other way than in the "
        "model.",
    ]
    return "\n".join(header + inputs_lines(tree) + [""] + rule_lines(tree, decimals)) + "\n"


def inputs_lines(tree: ObliqueTree) -> list[str]:
    """How the rules' features come from a raw table's columns (a tree with ``inputs``), one comment line each; none
    for plain numeric inputs. A value is missing when it is empty, NaN or infinite."""
    if tree.inputs is None:
        return []
    lines = ["# The features come from the table's columns; a value is missing when it is empty, NaN or infinite:"]
    for column in tree.inputs.columns:
        name = labels.shorten(column.name, None)
        if column.kind == "number":
            lines.append(f"#   {name}: its number; a missing {name} counts as {column.fill!r}"
                         + (f", and {name}={MISSING} is 1 (else 0)." if column.missing else "."))
        else:
            lines.append(f"#   {name}=<category> is 1 for the row's category of {name}, else 0 (one for each of "
                         f"{len(column.categories)}; a category not seen in training sets none)"
                         + (f"; {name}={MISSING} is 1 when {name} is missing." if column.missing else
                            "; a missing value sets none."))
    return lines


def rule_lines(tree: ObliqueTree, decimals: int | None = None) -> list[str]:
    """The tree as nested if/else rules, one line per test or leaf, every term shown: each test is the node's
    hyperplane and each return its leaf's model, as the diagram labels them (``views.labels``) in plain ASCII."""
    lines: list[str] = []
    _add_rules(tree, 1, 0, decimals, lines)
    return lines


def _add_rules(tree: ObliqueTree, node: int, indent: int, decimals: int | None, out: list[str]) -> None:
    pad = "    " * indent
    node = prune.shown(tree, node)  # a pass-through decides nothing: its live child's rules stand in its place
    if tree.is_leaf(node) and tree.has_logistic_leaves and tree.logit_coefs[node - tree.n_leaves].any():
        out.extend(_logistic_leaf_rules(tree, node, decimals, pad))
        return
    if tree.is_leaf(node) and tree.is_classifier:
        proba = ", ".join(f"{codegen.label_literal(c)} {labels.fmt(p, decimals, False)}"
                          for c, p in zip(tree.classes, labels.node_shares(tree, node)))
        label = codegen.label_literal(tree.classes[labels.node_class(tree, node)])
        out.append(f"{pad}return {label}  # leaf {node}, {tree.n_samples[node - 1]} train rows; probabilities {proba}")
        return
    if tree.is_leaf(node):
        out.append(f"{pad}return {_leaf_rule(tree, node, decimals)}  # leaf {node}, "
                   f"{tree.n_samples[node - 1]} train rows")
        return
    out.append(f"{pad}if {labels.split_text(tree, node, decimals, None, unicode=False)}:  # node {node}")
    _add_rules(tree, 2 * node, indent + 1, decimals, out)
    out.append(f"{pad}else:")
    _add_rules(tree, 2 * node + 1, indent + 1, decimals, out)


def _logistic_leaf_rules(tree: ObliqueTree, node: int, decimals: int | None, pad: str) -> list[str]:
    """A logistic leaf as comment lines, one logit per class in original units (w / x_scale per feature, the
    intercept less the terms at x_min), and its return of the most probable class."""
    i = node - tree.n_leaves
    lines = [f"{pad}# leaf {node}, {tree.n_samples[node - 1]} train rows: a logistic model, m = "
             f"{labels.fmt(tree.logit_mix[i], decimals, False)}"]
    for c, b, w in zip(tree.classes, tree.logit_intercepts[i], tree.logit_coefs[i]):
        k = w / tree.x_scale
        terms = [f"{labels.fmt(kj, decimals, False)}*{name}" for kj, name in zip(k, tree.feature_names) if kj != 0]
        lines.append(f"{pad}#   logit {codegen.label_literal(c)} = "
                     + " + ".join(terms + [labels.fmt(b - k @ tree.x_min, decimals, False)]))
    return lines + [f"{pad}return the class of the largest probability  # leaf {node}"]


def _leaf_rule(tree: ObliqueTree, leaf: int, decimals: int | None) -> str:
    """``23.4``, ``0.5*temp + 3.1``, or ``clip(0.5*temp + 3.1, 10, 40)`` for a linear leaf with bounds."""
    line = labels.leaf_line(tree, leaf, decimals, None, unicode=False)
    bounds = tree.leaf_bounds_original(leaf)
    if bounds is None:
        return line
    return f"clip({line}, {labels.fmt(bounds[0], decimals, False)}, {labels.fmt(bounds[1], decimals, False)})"


# ---------------------------------------------------------------------------------------------- diagram
def dot_source(tree: ObliqueTree, options: diagram_content.DiagramOptions | None = None) -> str:
    """DOT of the diagram; by default the whole tree (every level)."""
    return diagram.to_dot(tree, options or diagram_content.DiagramOptions(levels=tree.depth + 1))


def svg_source(tree: ObliqueTree, options: diagram_content.DiagramOptions | None = None) -> str:
    """Standalone SVG file of the diagram (rendered by Graphviz's dot)."""
    return '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + diagram.render_svg(dot_source(tree, options))


# ---------------------------------------------------------------------------------------------- HTML report
REPORT_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ddd; padding: .25em .6em; }
th { background: #f4f4f4; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f8f8f8; border: 1px solid #e4e4e4; padding: .8em; overflow: auto; font-size: .85em; }
.note { color: #666; font-size: .9em; }
.diagram-box { width: 96vw; margin-left: calc(50% - 48vw); }
.diagram { overflow: auto; max-height: 85vh; border: 1px solid #e4e4e4; padding: .5em; }
.diagram svg { max-width: none; }
.diagram-box > label { font-size: .9em; margin-right: .8em; }
"""
# The report has no script: the diagram opens fitted to the width of a box as wide as the window, with the levels that
# stay readable so (``diagram.readable_levels``; at its natural size a wide tree opened with its root off-screen,
# issue 35), and these radio buttons scale it by CSS alone (``zoom``).
ZOOMS = {"fit": "fit width", "50": "50%", "75": "75%", "100": "100%", "150": "150%"}
ZOOM_CSS = ("".join(f"#get-zoom-{z}:checked ~ .diagram svg {{ zoom: {int(z) / 100:g}; }}\n"
                    for z in ZOOMS if z != "fit")
            + "#get-zoom-fit:checked ~ .diagram svg { max-width: 100%; height: auto; }\n")


def html_report(tree: ObliqueTree, *, title: str = "GET oblique tree: review report", metrics: dict | None = None,
                baselines: dict | None = None, data_info: dict | None = None, params: dict | None = None,
                diagram_levels: int | None = None, include_model: bool = True, created: str | None = None,
                encoding: Encoding | None = None, in_words: summary.Summary | None = None) -> str:
    """One self-contained HTML page (no scripts, no external files) for reviewers who will not run the app.

    Sections: the summary in plain words (``in_words``: ``views.summary.summarize`` with the run's rows and
    baselines; by default the model's own, without test scores), summary, metrics (``metrics``: name -> value), comparison with CART and the random forest
    (``baselines`` from ``baseline_models.fit_baselines``, GET's row from ``baseline_models.evaluate_tree``-like entry
    ``baselines["get"]`` when present), the diagram as inline SVG (top ``diagram_levels`` levels, by default as many as
    stay readable fitted to the window, ``diagram.readable_levels``; Graphviz's dot),
    the rules, the features' training ranges, the data (``data_info``) and training parameters (``params``), and
    the model JSON (``include_model``, with the run's ``encoding``: ``model_json``) so the report carries the model
    itself. Every user-provided string is escaped, its hidden characters (NUL, U+202E, zero-width) shown as escapes.
    """

    created = created or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_shown(title)}</title><style>{REPORT_CSS}{ZOOM_CSS}</style></head><body>",
        f"<h1>{_shown(title)}</h1>",
        f'<p class="note">Generated by GET Explorer on {_shown(created)}.</p>',
        "<h2>In plain words</h2>",
        "<ul>" + "".join(f"<li>{_shown(s)}</li>" for s in (in_words or summary.summarize(tree)).sentences()) + "</ul>",
        "<h2>Summary</h2>",
        _html_table([("Depth", labels.depth_text(tree).removeprefix("depth ")), ("Leaves", f"{'logistic' if tree.has_logistic_leaves else tree.leaf_type}"
                                                       f" ({len(prune.live_leaves(tree))})"),
                     *([("Classes", ", ".join(labels.class_name(c) for c in tree.classes))] if tree.is_classifier
                       else []),
                     ("Features", tree.n_features), ("Parameters (paper's count)", tree.n_parameters),
                     ("Training rows", int(tree.n_samples[0]))]),
    ]
    if metrics:
        parts += ["<h2>Metrics</h2>", _html_table(list(metrics.items()))]
    if baselines:
        parts += _comparison_section(baselines, tree)
    parts += ["<h2>Diagram</h2>", _report_diagram(tree, diagram_levels)]
    parts += ["<h2>Rules</h2>", f"<pre>{escape(rules_text(tree))}</pre>", *_features_section(tree)]
    if data_info:
        parts += ["<h2>Data</h2>", _html_table(list(data_info.items()))]
    if params:
        parts += ["<h2>Training parameters</h2>", _html_table(list(params.items()))]
    if include_model:
        parts += _model_section(tree, encoding)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _comparison_section(baselines: dict, tree: ObliqueTree) -> list[str]:
    """The report's table of GET against CART and the random forest (``baseline_models.comparison_rows``): a
    classifier's by its class scores, a regressor's by R² and RMSE."""
    rows = baseline_models.comparison_rows(baselines, baselines.get("get"))
    scores = (["Test accuracy", "Balanced accuracy", "Log loss", "ROC AUC"] if tree.is_classifier
              else ["Test R\u00b2", "Test RMSE"])
    header = ["Model", *scores, "Parameters", "Features per split (most)", "Size (bytes, pickled)",
              "Prediction ms / 10,000 rows", "Fit seconds"]
    keys = [*(baseline_models.CLASS_METRICS if tree.is_classifier else ("r2", "rmse")), "n_parameters",
            "features_per_split", "size_bytes", "predict_ms_per_10k", "fit_seconds"]
    leaf = ("C-1 per leaf (its free class shares, C classes), and (C-1)·p more per leaf with a logistic model"
            if tree.has_logistic_leaves else "C-1 per leaf (its free class shares, C classes)" if tree.is_classifier
            else "1 (or p+1 for linear) per leaf")
    return ["<h2>Comparison with CART and a random forest</h2>",
            _html_grid(header, [[row.get(k) for k in ["name", *keys]] for row in rows]),
            '<p class="note">Parameters as the paper counts them: CART and forest trees 2 per branch node and 1 '
            f"per leaf; the oblique tree p+1 per branch node and {leaf}.</p>"]


def _features_section(tree: ObliqueTree) -> list[str]:
    """The report's table of the features' training ranges (or 1st-99th percentiles, with robust scaling)."""
    ranges = [[j, name, float(lo), float(lo + sc)] for j, (name, lo, sc)
              in enumerate(zip(tree.feature_names, tree.x_min, tree.x_scale))]
    robust = tree.scaling == "robust"
    return [f"<h2>Features ({'training 1st-99th percentiles' if robust else 'training range'})</h2>",
            _html_grid(["#", "Feature", *(("1st percentile", "99th percentile") if robust else ("Min", "Max"))],
                       ranges)]


def _model_section(tree: ObliqueTree, encoding: Encoding | None) -> list[str]:
    """The model JSON embedded in the report (``<`` ``>`` ``&`` escaped, so no text can close the script)."""
    payload = model_json(tree, encoding=encoding)
    payload = payload.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return ["<h2>Model</h2>", '<p class="note">The model JSON is embedded in this file '
            '(<code>script#get-model</code>); save it as a .json file to load it into GET Explorer.</p>',
            f'<script type="application/json" id="get-model">{payload}</script>']


def _report_diagram(tree: ObliqueTree, levels: int | None) -> str:
    try:
        levels = diagram.readable_levels(tree) if levels is None else max(1, min(levels, tree.depth + 1))
    except diagram.GraphvizError as exc:
        return f'<p class="note">Diagram unavailable: {escape(str(exc))}</p>'

    note = "" if levels > tree.depth else (f'<p class="note">The top {levels} levels of {tree.depth + 1}; the rules '
                                           "below cover the whole tree.</p>")
    try:
        svg = diagram.render_svg(diagram.to_dot(tree, diagram_content.DiagramOptions(levels=levels)))
    except diagram.GraphvizError as exc:
        return f'<p class="note">Diagram unavailable: {escape(str(exc))}</p>'
    zoom = "".join(f'<input type="radio" name="get-zoom" id="get-zoom-{z}"{" checked" if z == "fit" else ""}>'
                   f'<label for="get-zoom-{z}">{label}</label>' for z, label in ZOOMS.items())
    return note + f'<div class="diagram-box">Size: {zoom}<div class="diagram">{svg}</div></div>'


def _shown(text: Any) -> str:
    """A user-given string for the report's HTML: hidden characters escaped (``labels.visible``), then HTML's own."""
    return escape(labels.visible(str(text)))


def _html_table(items: list[tuple[Any, Any]]) -> str:
    rows = "".join(f"<tr><th>{_shown(str(k))}</th>{_html_cell(v)}</tr>" for k, v in items)
    return f"<table>{rows}</table>"


def _html_grid(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_shown(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_html_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _html_cell(value: Any) -> str:
    if value is None:
        return "<td>\u2013</td>"
    if isinstance(value, (bool, np.bool_)):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, np.integer)):
        return f'<td class="num">{int(value):,}</td>'
    if isinstance(value, (float, np.floating)):
        return f'<td class="num">{float(value):.4g}</td>'
    if isinstance(value, (dict, list, tuple)):
        value = json.dumps(plain(value), ensure_ascii=False)
    return f"<td>{_shown(str(value))}</td>"
