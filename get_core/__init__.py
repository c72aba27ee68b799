"""get_core: gradient-based entire-tree optimization (GET) of oblique regression trees.

The heavy modules (torch) load lazily so that importing the package is cheap and has no global side effects.
"""

from get_core.tree import ModelFormatError, ObliqueTree

__all__ = ["ObliqueTree", "ModelFormatError", "GETRegressor", "GETRegressorCV"]


def __getattr__(name: str):
    if name in ("GETRegressor", "GETRegressorCV"):
        from get_core import estimator

        return getattr(estimator, name)
    raise AttributeError(name)
