"""get_core: gradient-based entire-tree optimization (GET) of oblique trees.

Three wings: ``engine/`` trains (the only package that imports torch), ``data/`` reads and encodes user tables,
``model/`` is the fitted ``ObliqueTree`` with its model file and generated code. The estimators, the exports, the
baselines, the views and the run store sit beside them. Heavy modules load lazily, so importing the package is cheap.
"""

from importlib import import_module

from get_core.config import CONSTANT_LEAF_ENGINE_VERSION, ENGINE_VERSION
from get_core.model.tree import ObliqueTree

#: The one home of the package's version: pyproject.toml reads it (setuptools' dynamic version), CITATION.cff repeats
#: it (tests/test_install.py checks both).
__version__ = "0.1.0"

__all__ = ["ObliqueTree", "ModelFormatError", "GETRegressor", "GETRegressorCV", "GETClassifier", "GETClassifierCV",
           "counterfactual", "CounterfactualError", "ENGINE_VERSION", "CONSTANT_LEAF_ENGINE_VERSION",
           "to_onnx"]

#: Names that load on first use: the estimators load torch, and the short module paths the README has always shown
#: (``from get_core import model_file``) stay valid after the regroup.
_LAZY = {"GETRegressor": ("get_core.estimator", "GETRegressor"),
         "GETRegressorCV": ("get_core.estimator", "GETRegressorCV"),
         "GETClassifier": ("get_core.estimator", "GETClassifier"),
         "GETClassifierCV": ("get_core.estimator", "GETClassifierCV"),
         "ModelFormatError": ("get_core.model.model_file", "ModelFormatError"),
         "model_file": ("get_core.model.model_file", None),
         "codegen": ("get_core.model.codegen", None),
         "reading": ("get_core.data.reading", None),
         "counterfactual": ("get_core.model.counterfactual", "counterfactual"),
         "CounterfactualError": ("get_core.model.counterfactual", "CounterfactualError"),
         "to_onnx": ("get_core.model.onnx_graph", "to_onnx")}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(name)
    module, attribute = _LAZY[name]
    loaded = import_module(module)
    return loaded if attribute is None else getattr(loaded, attribute)
