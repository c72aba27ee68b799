"""Exports of a fitted ``ObliqueTree``: model JSON, rules text, standalone Python and C, DOT/SVG, HTML report.

Free functions reading the model arrays. Generated code reproduces ``ObliqueTree.predict`` step by step in scaled
units: ``xs = (x - x_min) / x_scale``; at branch t go right when ``sum_j W[t-1][j] * xs[j] > B[t-1]`` (so NaN goes
left, as in numpy); leaf value ``y_min + y_scale * (h + sum_j K[j] * xs[j])``. Every constant is written with
Python's ``repr`` (the shortest decimal that round-trips, exact for any correctly rounding C compiler), so the code
uses the model's doubles bit for bit. Sums run left to right; numpy's einsum may add in another order, so margins and
linear-leaf outputs can differ in the last bits (relative 1e-15); constant-leaf outputs are identical.

Feature names become identifiers by ``feature_identifiers`` (documented there and listed in each generated file).
"""

from __future__ import annotations

import json
import keyword
import math
import re
import unicodedata
from datetime import datetime, timezone
from html import escape
from string import Template
from typing import Any, Sequence

import numpy as np

from get_core import compare
from get_core.tree import ModelFormatError, ObliqueTree
from get_core.views import diagram

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long register
restrict return short signed sizeof static struct switch typedef union unsigned void volatile while _Bool _Complex
_Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local bool true false NULL main
""".split())


# ---------------------------------------------------------------------------------------------- model JSON
def model_json(tree: ObliqueTree, indent: int | None = None) -> str:
    """The model as JSON text (``ObliqueTree.to_dict``), loadable by ``load_model_json``."""
    return json.dumps(tree.to_dict(), indent=indent, allow_nan=False, default=_json_default)


def load_model_json(source: str | bytes) -> ObliqueTree:
    """Parse and validate model JSON; raises ModelFormatError with a readable message for anything malformed."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError:
            raise ModelFormatError("The model file is not UTF-8 text; export it again from GET Explorer.") from None
    if not source.strip():
        raise ModelFormatError("The model file is empty.")
    try:
        data = json.loads(source)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"The model file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                               f"{exc.msg}).") from None
    try:
        return ObliqueTree.from_dict(data)
    except ModelFormatError:
        raise
    except (ValueError, TypeError) as exc:  # shape checks in the constructor
        raise ModelFormatError(f"The model file is inconsistent: {exc}") from None


# ---------------------------------------------------------------------------------------------- rules
def rules_text(tree: ObliqueTree, decimals: int = 4, target_name: str | None = None) -> str:
    """Nested if/else rules in original units (``ObliqueTree.export_text``) under a short header."""
    target = target_name or tree.meta.get("target") or "the target"
    header = [
        f"# GET oblique regression tree: depth {tree.depth}, {tree.leaf_type} leaves, {tree.n_features} features, "
        f"{tree.n_parameters} parameters.",
        f"# Each 'if' is a weighted sum of features in their original units; 'return' gives {_one_line(target)}.",
        "# Terms are ordered by their size over the feature's training range, largest first.",
    ]
    if tree.has_leaf_bounds:
        header.append("# clip(v, lo, hi) keeps v within [lo, hi], the range of the training targets in that leaf.")
    return "\n".join(header) + "\n\n" + tree.export_text(decimals=decimals)


# ---------------------------------------------------------------------------------------------- identifiers
def feature_identifiers(names: Sequence[str]) -> list[str]:
    """ASCII identifiers valid in both Python and C, one per feature name, unique, in order.

    Mapping: accents are stripped (NFKD), every run of characters outside ``[A-Za-z0-9_]`` becomes ``_``, leading
    and trailing ``_`` are dropped; an empty result becomes ``x<j>``; a result starting with a digit or equal to a
    Python or C keyword gets an ``f_`` prefix; repeats get ``_2``, ``_3``, ... (also avoiding earlier identifiers).
    """
    used: set[str] = set()
    out = []
    for j, name in enumerate(names):
        ascii_name = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
        ident = re.sub(r"[^A-Za-z0-9_]+", "_", ascii_name).strip("_") or f"x{j}"
        if ident[0].isdigit() or keyword.iskeyword(ident) or ident in C_KEYWORDS:
            ident = "f_" + ident
        base, k = ident, 2
        while ident in used:
            ident, k = f"{base}_{k}", k + 1
        used.add(ident)
        out.append(ident)
    return out


# ---------------------------------------------------------------------------------------------- Python
_PYTHON = Template('''"""Standalone prediction for a GET oblique regression tree, generated by GET Explorer.

No dependencies. Depth $depth, $leaf_type leaves, $p features. predict(x) takes the feature values in FEATURES
order and computes what GET Explorer's ObliqueTree.predict computes: xs = (x - X_MIN) / X_SCALE; from node 1,
at node t go right (to 2t+1) when W[t-1].xs > B[t-1], else left (to 2t); the leaf's model gives the prediction.
"""

# index, identifier (keyword of predict_named), original feature name
$mapping

FEATURES = $features
IDENTIFIERS = $identifiers
N_FEATURES = $p
DEPTH = $depth
X_MIN = $x_min
X_SCALE = $x_scale
Y_MIN = $y_min
Y_SCALE = $y_scale
# split of branch node t (heap numbering, root 1) is row t-1
W = (
$weights
)
B = $thresholds
# leaf node t is row t - 2**DEPTH
LEAF_INTERCEPT = $intercepts
$leaf_coef_table

def _scaled(x):
    if len(x) != N_FEATURES:
        raise ValueError(f'expected {N_FEATURES} feature values, got {len(x)}')
    return [(float(x[j]) - X_MIN[j]) / X_SCALE[j] for j in range(N_FEATURES)]


def _leaf(xs):
    node = 1
    for _ in range(DEPTH):
        w = W[node - 1]
        s = 0.0
        for j in range(N_FEATURES):
            s += w[j] * xs[j]
        node = 2 * node + 1 if s > B[node - 1] else 2 * node
    return node


def leaf(x):
    """Heap id of the leaf that row x reaches."""
    return _leaf(_scaled(x))


def predict(x):
    """Prediction for one row x (feature values in FEATURES order), in the target's original units."""
    xs = _scaled(x)
    i = _leaf(xs) - 2 ** DEPTH
$leaf_value

def predict_named(**values):
    """predict() with keyword arguments named by IDENTIFIERS."""
    missing = [n for n in IDENTIFIERS if n not in values]
    unexpected = [n for n in values if n not in IDENTIFIERS]
    if missing or unexpected:
        raise TypeError(f'missing features {missing}, unexpected {unexpected}')
    return predict([values[n] for n in IDENTIFIERS])
''')

_PYTHON_CONSTANT_LEAF = "    return Y_MIN + Y_SCALE * LEAF_INTERCEPT[i]\n"
_PYTHON_LINEAR_LEAF = """    k = LEAF_COEF[i]
    f = 0.0
    for j in range(N_FEATURES):
        f += k[j] * xs[j]
    v = min(max(LEAF_INTERCEPT[i] + f, LEAF_LOWER[i]), LEAF_UPPER[i])
    return Y_MIN + Y_SCALE * v
"""


def python_source(tree: ObliqueTree) -> str:
    """A dependency-free Python module with ``predict(x)`` (a sequence in FEATURES order), ``predict_named(**kw)``
    (keyword arguments named by IDENTIFIERS) and ``leaf(x)``."""
    idents = feature_identifiers(tree.feature_names)
    linear = tree.leaf_type == "linear"
    rows = lambda matrix: "\n".join(f"    {_py_floats(row)}," for row in matrix)  # noqa: E731
    return _PYTHON.substitute(
        depth=tree.depth, leaf_type=tree.leaf_type, p=tree.n_features,
        mapping="\n".join(f"#   {j:>3}  {ident}  {ascii(name)}"
                          for j, (ident, name) in enumerate(zip(idents, tree.feature_names))),
        features=_py_tuple([ascii(n) for n in tree.feature_names]), identifiers=_py_tuple([repr(i) for i in idents]),
        x_min=_py_floats(tree.x_min), x_scale=_py_floats(tree.x_scale), y_min=_f(tree.y_min),
        y_scale=_f(tree.y_scale), weights=rows(tree.weights), thresholds=_py_floats(tree.thresholds),
        intercepts=_py_floats(tree.leaf_intercepts),
        leaf_coef_table=(f"LEAF_COEF = (\n{rows(tree.leaf_coefs)}\n)\n"
                         "# a linear leaf's value (scaled units) is clamped to [LEAF_LOWER, LEAF_UPPER]\n"
                         f"LEAF_LOWER = {_py_floats(_bounds(tree.leaf_lower))}\n"
                         f"LEAF_UPPER = {_py_floats(_bounds(tree.leaf_upper))}\n") if linear else "",
        leaf_value=_PYTHON_LINEAR_LEAF if linear else _PYTHON_CONSTANT_LEAF)


# ---------------------------------------------------------------------------------------------- C
_C = Template("""/* Standalone prediction for a GET oblique regression tree, generated by GET Explorer. No dependencies.
 * Depth $depth, $leaf_type leaves, $p features. ${prefix}_predict(x) computes what GET Explorer's
 * ObliqueTree.predict computes: xs = (x - X_MIN) / X_SCALE; from node 1, at node t go right (to 2t+1) when
 * W[t-1].xs > B[t-1], else left (to 2t); the leaf's model gives the prediction.
 * For results equal to the Python model's, compile without fused multiply-add contraction
 * (gcc/clang: -ffp-contract=off; the pragmas below ask for it) and with SSE2 doubles, not x87 (-mfpmath=sse).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=off")
#endif

#define ${P}_N_FEATURES $p
#define ${P}_DEPTH $depth

/* feature indices by identifier; the original names are in ${P}_FEATURE_NAMES */
$index_macros

const char *const ${P}_FEATURE_NAMES[$p] = {
$names
};
static const double ${P}_X_MIN[$p] = $x_min;
static const double ${P}_X_SCALE[$p] = $x_scale;
static const double ${P}_Y_MIN = $y_min;
static const double ${P}_Y_SCALE = $y_scale;
/* split of branch node t (heap numbering, root 1) is row t-1 */
static const double ${P}_W[$n_branches][$p] = {
$weights
};
static const double ${P}_B[$n_branches] = $thresholds;
/* leaf node t is row t - 2^DEPTH */
static const double ${P}_LEAF_INTERCEPT[$n_leaves] = $intercepts;
$leaf_coef_table
static int ${prefix}_leaf_scaled(const double xs[${P}_N_FEATURES]) {
    int node = 1;
    for (int level = 0; level < ${P}_DEPTH; ++level) {
        const double *w = ${P}_W[node - 1];
        double s = 0.0;
        for (int j = 0; j < ${P}_N_FEATURES; ++j) s += w[j] * xs[j];
        node = (s > ${P}_B[node - 1]) ? 2 * node + 1 : 2 * node;
    }
    return node;
}

static void ${prefix}_scale(const double x[${P}_N_FEATURES], double xs[${P}_N_FEATURES]) {
    for (int j = 0; j < ${P}_N_FEATURES; ++j) xs[j] = (x[j] - ${P}_X_MIN[j]) / ${P}_X_SCALE[j];
}

/* Heap id of the leaf that row x reaches. */
int ${prefix}_leaf(const double x[${P}_N_FEATURES]) {
    double xs[${P}_N_FEATURES];
    ${prefix}_scale(x, xs);
    return ${prefix}_leaf_scaled(xs);
}

/* Prediction for one row x (features in the order of the FEATURE_NAMES), in the target's original units. */
double ${prefix}_predict(const double x[${P}_N_FEATURES]) {
    double xs[${P}_N_FEATURES];
    ${prefix}_scale(x, xs);
    int i = ${prefix}_leaf_scaled(xs) - (1 << ${P}_DEPTH);
$leaf_value}
""")

_C_CONSTANT_LEAF = Template("    return ${P}_Y_MIN + ${P}_Y_SCALE * ${P}_LEAF_INTERCEPT[i];\n")
_C_LINEAR_LEAF = Template("""    double f = 0.0;
    for (int j = 0; j < ${P}_N_FEATURES; ++j) f += ${P}_LEAF_COEF[i][j] * xs[j];
    double v = ${P}_LEAF_INTERCEPT[i] + f;
    v = v < ${P}_LEAF_LOWER[i] ? ${P}_LEAF_LOWER[i] : (v > ${P}_LEAF_UPPER[i] ? ${P}_LEAF_UPPER[i] : v);
    return ${P}_Y_MIN + ${P}_Y_SCALE * v;
""")


def c_source(tree: ObliqueTree, prefix: str = "get") -> str:
    """A dependency-free C99 file with ``double <prefix>_predict(const double x[])`` and
    ``int <prefix>_leaf(const double x[])``; ``x`` holds the features in the order of ``<PREFIX>_FEATURE_NAMES``,
    whose indices also have ``#define <PREFIX>_X_<IDENTIFIER>`` macros."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise ValueError(f"prefix must be a C identifier; got {prefix!r}.")
    P = prefix.upper()
    linear = tree.leaf_type == "linear"
    rows = lambda matrix: "\n".join(f"    {_c_floats(row)}," for row in matrix)  # noqa: E731
    coef_table = f"static const double {P}_LEAF_COEF[{tree.n_leaves}][{tree.n_features}] = {{\n" \
                 f"{rows(tree.leaf_coefs)}\n}};\n" \
                 "/* a linear leaf's value (scaled units) is clamped to [LEAF_LOWER, LEAF_UPPER] */\n" \
                 f"static const double {P}_LEAF_LOWER[{tree.n_leaves}] = {_c_floats(_bounds(tree.leaf_lower))};\n" \
                 f"static const double {P}_LEAF_UPPER[{tree.n_leaves}] = {_c_floats(_bounds(tree.leaf_upper))};\n"
    return _C.substitute(
        prefix=prefix, P=P, depth=tree.depth, leaf_type=tree.leaf_type, p=tree.n_features,
        n_branches=tree.n_branches, n_leaves=tree.n_leaves,
        index_macros="\n".join(f"#define {P}_X_{ident} {j}"
                               for j, ident in enumerate(feature_identifiers(tree.feature_names))),
        names="\n".join(f"    {_c_string(name)}," for name in tree.feature_names),
        x_min=_c_floats(tree.x_min), x_scale=_c_floats(tree.x_scale), y_min=_f(tree.y_min), y_scale=_f(tree.y_scale),
        weights=rows(tree.weights), thresholds=_c_floats(tree.thresholds), intercepts=_c_floats(tree.leaf_intercepts),
        leaf_coef_table=coef_table if linear else "",
        leaf_value=(_C_LINEAR_LEAF if linear else _C_CONSTANT_LEAF).substitute(P=P))


# ---------------------------------------------------------------------------------------------- diagram
def dot_source(tree: ObliqueTree, options: diagram.DiagramOptions | None = None) -> str:
    """DOT of the diagram; by default the whole tree (every level)."""
    return diagram.to_dot(tree, options or diagram.DiagramOptions(levels=tree.depth + 1))


def svg_source(tree: ObliqueTree, options: diagram.DiagramOptions | None = None) -> str:
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
.diagram { overflow: auto; border: 1px solid #e4e4e4; padding: .5em; }
.diagram svg { max-width: 100%; height: auto; } .note { color: #666; font-size: .9em; }
"""


def html_report(tree: ObliqueTree, *, title: str = "GET oblique tree: review report", metrics: dict | None = None,
                baselines: dict | None = None, data_info: dict | None = None, params: dict | None = None,
                diagram_levels: int = 6, include_model: bool = True, created: str | None = None) -> str:
    """One self-contained HTML page (no scripts, no external files) for reviewers who will not run the app.

    Sections: summary, metrics (``metrics``: name -> value), comparison with CART and the random forest
    (``baselines`` from ``compare.fit_baselines``, GET's row from ``compare.evaluate_tree``-like entry
    ``baselines["get"]`` when present), the diagram as inline SVG (top ``diagram_levels`` levels; Graphviz's dot),
    the rules, the features' training ranges, the data (``data_info``) and training parameters (``params``), and
    the model JSON (``include_model``) so the report carries the model itself. Every user-provided string is escaped.
    """

    created = created or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{REPORT_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">Generated by GET Explorer on {escape(created)}.</p>',
        "<h2>Summary</h2>",
        _html_table([("Depth", tree.depth), ("Leaves", f"{tree.leaf_type} ({tree.n_leaves})"),
                     ("Features", tree.n_features), ("Parameters (paper's count)", tree.n_parameters),
                     ("Training rows", int(tree.n_samples[0]))]),
    ]
    if metrics:
        parts += ["<h2>Metrics</h2>", _html_table(list(metrics.items()))]
    if baselines:
        rows = compare.comparison_rows(baselines, baselines.get("get"))
        header = ["Model", "Test R\u00b2", "Test RMSE", "Parameters", "Size (bytes, pickled)",
                  "Prediction ms / 10,000 rows", "Fit seconds"]
        keys = ["name", "r2", "rmse", "n_parameters", "size_bytes", "predict_ms_per_10k", "fit_seconds"]
        parts += ["<h2>Comparison with CART and a random forest</h2>",
                  _html_grid(header, [[row.get(k) for k in keys] for row in rows]),
                  '<p class="note">Parameters as the paper counts them: CART and forest trees 2 per branch node and 1 '
                  "per leaf; the oblique tree p+1 per branch node and 1 (or p+1 for linear) per leaf.</p>"]
    parts += ["<h2>Diagram</h2>", _report_diagram(tree, diagram_levels)]
    parts += ["<h2>Rules</h2>", f"<pre>{escape(rules_text(tree))}</pre>"]
    ranges = [[j, name, float(lo), float(lo + sc)] for j, (name, lo, sc)
              in enumerate(zip(tree.feature_names, tree.x_min, tree.x_scale))]
    parts += ["<h2>Features (training range)</h2>", _html_grid(["#", "Feature", "Min", "Max"], ranges)]
    if data_info:
        parts += ["<h2>Data</h2>", _html_table(list(data_info.items()))]
    if params:
        parts += ["<h2>Training parameters</h2>", _html_table(list(params.items()))]
    if include_model:
        payload = model_json(tree).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        parts += ["<h2>Model</h2>", '<p class="note">The model JSON is embedded in this file '
                  '(<code>script#get-model</code>); save it as a .json file to load it into GET Explorer.</p>',
                  f'<script type="application/json" id="get-model">{payload}</script>']
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _report_diagram(tree: ObliqueTree, levels: int) -> str:
    levels = max(1, min(levels, tree.depth + 1))
    note = "" if levels > tree.depth else (f'<p class="note">The top {levels} levels of {tree.depth + 1}; the rules '
                                           "below cover the whole tree.</p>")
    try:
        svg = diagram.render_svg(diagram.to_dot(tree, diagram.DiagramOptions(levels=levels)))
    except diagram.GraphvizError as exc:
        return f'<p class="note">Diagram unavailable: {escape(str(exc))}</p>'
    return note + f'<div class="diagram">{svg}</div>'


def _html_table(items: list[tuple[Any, Any]]) -> str:
    rows = "".join(f"<tr><th>{escape(str(k))}</th>{_html_cell(v)}</tr>" for k, v in items)
    return f"<table>{rows}</table>"


def _html_grid(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
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
        value = json.dumps(value, default=_json_default, ensure_ascii=False)
    return f"<td>{escape(str(value))}</td>"


# ---------------------------------------------------------------------------------------------- helpers
def _f(value: float) -> str:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError("The model holds a non-finite number; it cannot be exported as code.")
    return repr(value)


def _bounds(values: np.ndarray) -> np.ndarray:
    """Leaf bounds for code: an absent (infinite) bound becomes the largest double, which clamps no finite value."""
    top = np.finfo(np.float64).max
    return np.clip(values, -top, top)


def _py_floats(values: Any) -> str:
    return _py_tuple([_f(v) for v in np.asarray(values, dtype=np.float64).ravel()])


def _py_tuple(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _c_floats(values: Any) -> str:
    return "{" + ", ".join(_f(v) for v in np.asarray(values, dtype=np.float64).ravel()) + "}"


def _c_string(text: str) -> str:
    """A C string literal holding ``text``'s UTF-8 bytes: printable ASCII as is (``\\``, ``"`` and ``?`` escaped,
    the last against trigraphs), every other byte as a three-digit octal escape."""
    out = []
    for byte in str(text).encode("utf-8"):
        ch = chr(byte)
        if ch in '\\"?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _one_line(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text)).strip()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
