"""get_core: gradient-based entire-tree optimization (GET) of oblique regression trees.

The heavy modules (torch) load lazily so that importing the package is cheap and has no global side effects.
"""

from get_core.config import CONSTANT_LEAF_ENGINE_VERSION, ENGINE_VERSION
from get_core.tree import ObliqueTree

__all__ = ["ObliqueTree", "ModelFormatError", "GETRegressor", "GETRegressorCV", "ENGINE_VERSION",
           "CONSTANT_LEAF_ENGINE_VERSION"]


def __getattr__(name: str):
    if name in ("GETRegressor", "GETRegressorCV"):
        from get_core import estimator  # the estimators load torch: only when asked for

        return getattr(estimator, name)
    if name == "ModelFormatError":
        from get_core import model_file

        return model_file.ModelFormatError
    raise AttributeError(name)
