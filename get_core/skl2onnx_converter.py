"""skl2onnx converters for the GET estimators, so that ``skl2onnx.to_onnx`` converts a fitted GET estimator (alone or
as the last step of a scikit-learn pipeline) into the same graph ``get_core.to_onnx`` writes.

The converter copies ``to_onnx``'s graph into skl2onnx's container, every internal name given a fresh one in the
container's scope (the ``If`` branch's names too), and wires its ``X`` and outputs to skl2onnx's variables. The
outputs are ``to_onnx``'s: a regressor's ``variable`` (rows, the prediction), a classifier's ``label`` and
``probabilities`` (rows x classes; no ZipMap). The graph needs opset 17: pass ``target_opset`` >= 17 (or none).
skl2onnx is optional: ``register()`` raises ImportError without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from get_core.estimator import GETClassifier, GETClassifierCV, GETRegressor, GETRegressorCV
from get_core.model import onnx_graph

REGRESSORS = (GETRegressor, GETRegressorCV)
CLASSIFIERS = (GETClassifier, GETClassifierCV)


def register() -> None:
    """Registers the four GET estimators with skl2onnx (idempotent)."""
    from skl2onnx import update_registered_converter

    for cls in REGRESSORS + CLASSIFIERS:
        update_registered_converter(cls, f"GetExplorer{cls.__name__}", _shape, _convert, parser=_parse)


def _parse(scope, model, inputs, custom_parsers=None) -> list:
    """One operator whose outputs are the graph's: the prediction, or the label and the probabilities."""
    from skl2onnx.common.data_types import (BooleanTensorType, DoubleTensorType, FloatTensorType, Int64TensorType,
                                            StringTensorType)

    operator = scope.declare_local_operator(f"GetExplorer{type(model).__name__}", model)
    operator.inputs = inputs
    real = DoubleTensorType if isinstance(inputs[0].type, DoubleTensorType) else FloatTensorType
    if isinstance(model, CLASSIFIERS):
        kind = np.asarray(model.tree_.classes).dtype.kind
        # the label's type as to_onnx writes it (onnxruntime refuses a graph whose declared type differs)
        label = {"U": StringTensorType, "S": StringTensorType, "b": BooleanTensorType, "i": Int64TensorType,
                 "u": Int64TensorType}.get(kind, DoubleTensorType)
        operator.outputs.append(scope.declare_local_variable("label", label([None])))
        operator.outputs.append(scope.declare_local_variable("probabilities", real([None, len(model.classes_)])))
    else:
        operator.outputs.append(scope.declare_local_variable("variable", real([None])))
    return list(operator.outputs)


def _shape(operator) -> None:
    """The types were set by the parser."""


def _convert(scope, operator, container) -> None:
    import onnx

    if container.target_opset < onnx_graph.OPSET:
        raise RuntimeError(f"the GET graph needs opset {onnx_graph.OPSET} or later; skl2onnx was asked for "
                           f"{container.target_opset}: pass target_opset={onnx_graph.OPSET}.")
    dtype = "float64" if operator.inputs[0].type.to_onnx_type().tensor_type.elem_type == onnx.TensorProto.DOUBLE \
        else "float32"
    graph = onnx.load_from_string(onnx_graph.to_onnx(operator.raw_operator, dtype)).graph
    names = {graph.input[0].name: operator.inputs[0].full_name}  # "X", or "raw" for raw inputs
    for ours, theirs in zip((o.name for o in graph.output), operator.outputs):
        names[ours] = theirs.full_name

    def rename(name: str) -> str:
        if name and name not in names:
            names[name] = scope.get_unique_variable_name(f"get_{name}")
        return names.get(name, name)

    for init in graph.initializer:
        array = onnx.numpy_helper.to_array(init)
        container.add_initializer(rename(init.name), init.data_type, list(array.shape), array.ravel().tolist())
    for node in graph.node:
        container.add_node(node.op_type, [rename(i) for i in node.input], [rename(o) for o in node.output],
                           name=scope.get_unique_operator_name(f"get_{node.name}"), op_version=onnx_graph.OPSET,
                           **{a.name: _attribute(a, rename) for a in node.attribute})


def _attribute(attribute, rename) -> Any:
    """An attribute's value; a subgraph (the ``If`` branches) with every name renamed as the outer graph's."""
    import onnx

    value = onnx.helper.get_attribute_value(attribute)
    if isinstance(value, onnx.GraphProto):
        value = _renamed_graph(value, rename)
    return value


def _renamed_graph(graph, rename):
    import onnx

    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    for init in copy.initializer:
        init.name = rename(init.name)
    for output in copy.output:
        output.name = rename(output.name)
    for node in copy.node:
        node.input[:] = [rename(i) for i in node.input]
        node.output[:] = [rename(o) for o in node.output]
        node.name = rename(node.name)
    return copy
