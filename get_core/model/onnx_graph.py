"""ONNX export of a fitted ``ObliqueTree``: one batched graph of standard operators, run by onnxruntime anywhere.

ONNX's tree operator tests one feature per node, so it cannot hold an oblique split. The graph here is the GEMM
strategy Hummingbird compiles forests with, for one oblique tree:

  xs = (X - x_min) / x_scale                          Sub, Div: the same doubles as ``ObliqueTree.scale_X``
  margins = xs' @ W.T                                  one MatMul of every row against every split (n, B)
  right = margins > b                                  Greater
  node = 2 node + right[node - 1], depth times         GatherElements: each row's path, root to leaf
  y = y_min + y_scale * clamp(h[leaf] + k[leaf]·xs)    Gather, Mul, Split, Add per feature (linear leaves), Where

The NaN rules are ``predict``'s: a split ignores the features it gives weight 0 (a NaN or infinity there cannot
route the row), a NaN in a feature it uses sends the row left, infinities in the features it uses give the sum of
their signed infinities (+inf: right; -inf or +inf plus -inf: left). The MatMul runs on xs' (xs with every NaN and
infinity replaced by 0); only when the rows hold a non-finite value does an ``If`` branch count, with three more
MatMuls, which splits each row's NaN and infinities reach. A linear leaf uses all features, as ``predict`` does
(0 x NaN is NaN).

Precision: float64 (default) computes the same scaling, comparisons and leaf arithmetic as ``predict``: a linear
leaf's terms are added one Add at a time in feature order from 0.0, as ``predict`` adds them, so a row in the same
leaf gets ``predict``'s value to the last bit. The splits' MatMul adds in an order of its own, so a split's sum can
differ from ``predict``'s in its last bits; a row whose margin is within that rounding of its threshold could take
the other branch (none did on the shared datasets' models: docs/BENCHMARKS.md, "Prediction speed"). float32 rounds inputs, weights and sums to single precision: rows
near a split may change leaves; its error is measured there too. A split whose weights or threshold pass
``FLOAT32_SPLIT_MAX`` is divided by a power of two first (the same split; in float32 its numbers would overflow to
infinity and route every row by NaN), and a model whose scaling or leaves pass float32's range is refused in a
sentence (``float32_problem``): its predictions cannot be written in float32.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from get_core.model.tree import ObliqueTree, refuse_logistic_leaves

OPSET = 17
DTYPES = ("float64", "float32")
#: A float32 graph's splits are scaled by a power of two where a weight or the threshold passes this magnitude: the
#: margins, sums of up to 200 products of inputs in [0, 1] and more, then stay far from float32's 3.4e38.
FLOAT32_SPLIT_MAX = 2.0 ** 64


def to_onnx(model: Any, dtype: str = "float64") -> bytes:
    """The serialized ONNX model (bytes) of a fitted GET estimator or ``ObliqueTree``: input ``X`` (rows x
    features, original units, ``dtype``); outputs ``prediction`` (rows, original target units, ``dtype``), or for a
    classification tree ``label`` (rows, the labels' own type) and ``probabilities`` (rows x classes, ``dtype``);
    last ``leaf`` (rows, int64 heap id of the leaf each row reaches)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    tree = getattr(model, "tree_", model)
    if not isinstance(tree, ObliqueTree):
        raise TypeError(f"to_onnx needs a fitted GET estimator or an ObliqueTree; got {type(model).__name__}.")
    refuse_logistic_leaves(tree, "The ONNX export")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}; got {dtype!r}.")
    if tree.inputs is not None:  # the graph of the engine's inputs, behind one that encodes the raw columns
        return _raw_inputs_graph(to_onnx(dataclasses.replace(tree, inputs=None), dtype), tree, np.dtype(dtype))
    real = np.dtype(dtype)
    if real == np.float32 and (problem := float32_problem(tree)):
        raise ValueError(f"This model cannot be exported with dtype='float32': {problem}. Export it with "
                         "dtype='float64'.")
    elem = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    p, depth, L = tree.n_features, tree.depth, tree.n_leaves
    nodes: list = []
    inits: list = []

    def const(name: str, value: Any, as_type: Any = None) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=as_type or real), name))
        return name

    def op(kind: str, inputs: list[str], output: str | list[str], **attrs: Any) -> str:
        """Adds a node; its (first) output's name. Several outputs (Split) come as a list."""
        outputs = output if isinstance(output, list) else [output]
        nodes.append(helper.make_node(kind, inputs, outputs, name=outputs[0], **attrs))
        return outputs[0]

    weights, thresholds = tree.weights, tree.thresholds
    if real == np.float32:
        weights, thresholds = float32_splits(weights, thresholds)
    W_T = const("W_T", weights.T)  # (p, B)
    xs = op("Div", [op("Sub", ["X", const("x_min", tree.x_min)], "x_shifted"), const("x_scale", tree.x_scale)], "xs")
    finite = op("Equal", [op("Sub", [xs, xs], "xs_minus_xs"), const("zero", 0.0)], "xs_finite")  # inf-inf: NaN
    nonfinite = op("Not", [finite], "xs_nonfinite")
    xs_clean = op("Where", [nonfinite, "zero", xs], "xs_clean")
    margins = op("MatMul", [xs_clean, W_T], "margins_finite")
    right_finite = op("Greater", [margins, const("thresholds", thresholds)], "right_finite")
    any_nonfinite = op("ReduceMax", [op("Cast", [nonfinite], "nonfinite_int", to=TensorProto.INT32)],
                       "any_nonfinite_int", keepdims=0)
    condition = op("Cast", [any_nonfinite], "any_nonfinite", to=TensorProto.BOOL)
    nodes.append(helper.make_node("If", [condition], ["right"], name="right",
                                  then_branch=_nonfinite_branch(tree, xs, right_finite, real, elem),
                                  else_branch=helper.make_graph(
                                      [helper.make_node("Identity", [right_finite], ["right_else"])], "finite", [],
                                      [helper.make_tensor_value_info("right_else", TensorProto.BOOL, None)])))
    right = op("Cast", ["right"], "right_int", to=TensorProto.INT64)
    node = op("ConstantOfShape", [op("Slice", [op("Shape", ["X"], "x_shape"), const("s0", [0], np.int64),
                                               const("s1", [1], np.int64)], "n_rows")], "node_0",
              value=helper.make_tensor("one", TensorProto.INT64, [1], [1]))
    node = op("Unsqueeze", [node, const("axis1", [1], np.int64)], "node_0_col")
    one, two = const("one_i", 1, np.int64), const("two_i", 2, np.int64)
    for level in range(depth):
        went = op("GatherElements", [right, op("Sub", [node, one], f"row_{level}")], f"went_{level}", axis=1)
        node = op("Add", [op("Mul", [node, two], f"twice_{level}"), went], f"node_{level + 1}")
    leaf = op("Squeeze", [node, "axis1"], "leaf")
    index = op("Sub", [leaf, const("n_leaves", L, np.int64)], "leaf_index")
    if getattr(tree, "is_classifier", False):
        outputs = _class_outputs(tree, index, const, op, elem)
    else:
        _regression_output(tree, index, xs, const, op)
        outputs = [helper.make_tensor_value_info("prediction", elem, [None])]
    outputs.append(helper.make_tensor_value_info("leaf", TensorProto.INT64, [None]))
    graph = helper.make_graph(nodes, "get_oblique_tree", [helper.make_tensor_value_info("X", elem, [None, p])],
                              outputs, inits)
    opset = [helper.make_opsetid("", OPSET)]
    # The IR version the opset needs, not this onnx's newest: an older onnxruntime refuses a newer IR it cannot read.
    onnx_model = helper.make_model(graph, opset_imports=opset, ir_version=helper.find_min_ir_version_for(opset),
                                   producer_name="GET Explorer")
    kind = "classification" if getattr(tree, "is_classifier", False) else "regression"
    onnx_model.doc_string = (f"GET oblique {kind} tree: depth {depth}, {tree.leaf_type} leaves, features "
                             + ", ".join(tree.feature_names))
    onnx.checker.check_model(onnx_model)
    return onnx_model.SerializeToString()


def _raw_inputs_graph(engine_model: bytes, tree: ObliqueTree, real: np.dtype) -> bytes:
    """``engine_model`` (the graph of ``tree``'s engine inputs, input ``X``) reading the raw columns instead: input
    ``raw`` (rows x columns, a number or a category's code, its index among the column's categories; NaN where a
    value is missing), encoded into ``X`` as ``inputs.encode`` does: a number column's value, its training mean where
    it is NaN or infinite, and its "if missing" input; a category column's one-hot of the code (none for another
    code), and its missing input (NaN)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load_from_string(engine_model)
    elem = TensorProto.DOUBLE if real == np.float64 else TensorProto.FLOAT
    nodes, inits, parts = [], [], []

    def const(name: str, value: Any, as_type: Any = None) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=as_type or real), name))
        return name

    def op(kind: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [output], name=output, **attrs))
        return output

    axis = const("raw_axis", [1], np.int64)
    for j, column in enumerate(tree.inputs.columns):
        value = op("Slice", ["raw", const(f"raw_{j}_from", [j], np.int64), const(f"raw_{j}_to", [j + 1], np.int64),
                             axis], f"raw_{j}")  # (n, 1)
        if column.kind == "number":
            missing = op("Or", [op("IsNaN", [value], f"raw_{j}_nan"), op("IsInf", [value], f"raw_{j}_inf")],
                         f"raw_{j}_missing")
            parts.append(op("Where", [missing, const(f"raw_{j}_fill", [[column.fill]]), value], f"raw_{j}_value"))
        else:
            codes = const(f"raw_{j}_codes", [np.arange(len(column.categories))])  # (1, K)
            parts.append(op("Cast", [op("Equal", [value, codes], f"raw_{j}_is")], f"raw_{j}_onehot", to=elem))
            missing = op("IsNaN", [value], f"raw_{j}_missing")
        if column.missing:
            parts.append(op("Cast", [missing], f"raw_{j}_missing_input", to=elem))
    op("Concat", parts, "X", axis=1)
    graph = model.graph
    kept = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + kept)
    graph.initializer.extend(inits)
    graph.input[0].CopyFrom(helper.make_tensor_value_info("raw", elem, [None, len(tree.inputs.columns)]))
    model.doc_string += ("; it reads the raw columns " + ", ".join(tree.inputs.names)
                         + " (numbers, or category codes in the order of each column's categories; NaN: missing)")
    onnx.checker.check_model(model)
    return model.SerializeToString()


def float32_splits(weights: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights`` (B, p) and ``thresholds`` (B,) with each split whose largest magnitude passes ``FLOAT32_SPLIT_MAX``
    divided by the power of two that brings it to 1 (exact in float64: the same split, the same signs)."""
    largest = np.maximum(np.abs(weights).max(axis=1, initial=0.0), np.abs(thresholds))
    shift = np.where(largest > FLOAT32_SPLIT_MAX, np.ceil(np.log2(np.maximum(largest, 1.0))), 0.0)
    return np.ldexp(weights, -shift[:, None].astype(int)), np.ldexp(thresholds, -shift.astype(int))


def float32_problem(tree: ObliqueTree) -> str | None:
    """Why ``tree``'s predictions cannot be computed in float32 (a field, or the largest leaf value in target units,
    beyond float32's range), or None."""
    limit = float(np.finfo(np.float32).max)
    fields = {"x_min": tree.x_min, "x_scale": tree.x_scale, "y_min": tree.y_min, "y_scale": tree.y_scale,
              "leaf_intercepts": tree.leaf_intercepts, "leaf_coefs": tree.leaf_coefs}
    for name, values in fields.items():
        largest = float(np.max(np.abs(np.asarray(values, dtype=np.float64)), initial=0.0))
        if largest > limit:
            return f"its {name} reach {largest:.3g}, beyond float32's range (±{limit:.3g})"
    if not getattr(tree, "is_classifier", False):
        largest = abs(tree.y_min) + tree.y_scale * float(np.max(np.abs(tree.leaf_intercepts), initial=0.0))
        if largest > limit:
            return f"its leaves predict up to {largest:.3g}, beyond float32's range (±{limit:.3g})"
    return None


def _regression_output(tree: ObliqueTree, index: str, xs: str, const, op) -> None:
    """``prediction`` = y_min + y_scale * the leaf's value (intercept, plus its line for a linear leaf), clamped."""
    value = op("Gather", [const("leaf_intercepts", tree.leaf_intercepts), index], "leaf_intercept", axis=0)
    if tree.leaf_type == "linear":
        coefs = op("Gather", [const("leaf_coefs", tree.leaf_coefs), index], "row_coefs", axis=0)
        value = op("Add", [value, _ordered_sum(op("Mul", [coefs, xs], "terms"), tree.n_features, const, op)],
                   "leaf_raw")
    lower = op("Gather", [const("leaf_lower", tree.leaf_lower), index], "lower", axis=0)
    upper = op("Gather", [const("leaf_upper", tree.leaf_upper), index], "upper", axis=0)
    value = op("Where", [op("Less", [value, lower], "below"), lower,  # NaN stays NaN, as np.clip leaves it
                         op("Where", [op("Greater", [value, upper], "above"), upper, value], "clamped_high")],
               "clamped")
    op("Add", [const("y_min", tree.y_min), op("Mul", [const("y_scale", tree.y_scale), value], "scaled")],
       "prediction")


def _ordered_sum(terms: str, p: int, const, op) -> str:
    """Per row, 0.0 plus each of the p columns of ``terms`` in feature order, one Add at a time: the order
    ``predict`` adds a linear leaf's terms in (a ReduceSum adds in an order of its own, which differs in the last
    bits and, where the terms cancel, by far more relative to the sum)."""
    columns = [f"term_{j}" for j in range(p)]
    op("Split", [terms, const("term_widths", np.ones(p), np.int64)], columns, axis=1)
    total = const("sum_start", 0.0)
    for j, column in enumerate(columns):
        total = op("Add", [total, column], f"linear_sum_{j}")
    return op("Squeeze", [total, "axis1"], "linear_sum")


def _class_outputs(tree: ObliqueTree, index: str, const, op, elem: int) -> list:
    """``label`` (the leaf's first most probable class, in the labels' own type: text, integer, float or boolean)
    and ``probabilities`` (rows x classes, the leaf's ``leaf_proba``), as ``predict`` and ``predict_proba`` give."""
    from onnx import TensorProto, helper

    labels = np.asarray(tree.classes)
    if labels.dtype.kind in "US":
        label_type, values = TensorProto.STRING, [str(c).encode("utf-8") for c in tree.classes]
        op("Constant", [], "classes", value=helper.make_tensor("classes_value", label_type, [len(values)], values))
    else:
        label_type = {"b": TensorProto.BOOL, "i": TensorProto.INT64, "u": TensorProto.INT64}.get(labels.dtype.kind,
                                                                                                 TensorProto.DOUBLE)
        const("classes", labels, {TensorProto.BOOL: np.bool_, TensorProto.INT64: np.int64}.get(label_type,
                                                                                                np.float64))
    winner = op("Gather", [const("leaf_class_index", np.argmax(tree.leaf_proba, axis=1), np.int64), index],
                "class_index", axis=0)
    op("Gather", ["classes", winner], "label", axis=0)
    op("Gather", [const("leaf_proba", tree.leaf_proba), index], "probabilities", axis=0)
    return [helper.make_tensor_value_info("label", label_type, [None]),
            helper.make_tensor_value_info("probabilities", elem, [None, len(tree.classes)])]


def _nonfinite_branch(tree: ObliqueTree, xs: str, right_finite: str, real: np.dtype, elem: int):
    """The ``If`` branch for rows holding NaN or infinities: per row and split, whether a used feature is NaN, and
    whether its infinities give +inf and/or -inf terms; those decide the branch, the finite margin the rest."""
    from onnx import TensorProto, helper, numpy_helper

    w = tree.weights.T  # (p, B)
    used, positive, negative = (w != 0), (w > 0), (w < 0)
    inits = [numpy_helper.from_array(np.asarray(a, dtype=real), name) for name, a in
             (("used", used), ("positive", positive), ("negative", negative), ("nf_zero", 0.0))]
    nodes = []

    def op(kind: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [output], name=output, **attrs))
        return output

    def indicator(kind: str, inputs: list[str], output: str, **attrs: Any) -> str:
        return op("Cast", [op(kind, inputs, output + "_bool", **attrs)], output, to=elem)

    nan = indicator("IsNaN", [xs], "nan")
    plus_inf = indicator("IsInf", [xs], "plus_inf", detect_negative=0)
    minus_inf = indicator("IsInf", [xs], "minus_inf", detect_positive=0)

    def hits(rows: str, splits: str, output: str) -> str:
        return op("Greater", [op("MatMul", [rows, splits], output + "_count"), "nf_zero"], output)

    nan_used = hits(nan, "used", "nan_used")
    up = op("Or", [hits(plus_inf, "positive", "up_a"), hits(minus_inf, "negative", "up_b")], "up")
    down = op("Or", [hits(plus_inf, "negative", "down_a"), hits(minus_inf, "positive", "down_b")], "down")
    blocked = op("Or", [nan_used, down], "left_forced")  # NaN, -inf, or +inf + -inf = NaN: left
    op("And", [op("Not", [blocked], "not_blocked"), op("Or", [up, right_finite], "up_or_right")], "right_then")
    return helper.make_graph(nodes, "nonfinite", [], [helper.make_tensor_value_info("right_then", TensorProto.BOOL,
                                                                                    None)], inits)
