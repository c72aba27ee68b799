"""get_core: gradient-based entire-tree optimization (GET) of oblique regression trees.

The heavy modules (torch) load lazily so that importing the package is cheap and has no global side effects.
"""

from get_core.tree import ObliqueTree

__all__ = ["ObliqueTree", "ModelFormatError", "GETRegressor", "GETRegressorCV", "ENGINE_VERSION",
           "CONSTANT_LEAF_ENGINE_VERSION"]

#: Bumped whenever training gives different trees for the same data, settings and seed, so that stored benchmark
#: results (bench/ cell files are keyed by it) are never mixed across engines. 2: the paper's alpha intervals and
#: stages warm-started from each start's best tree. 3: linear leaves chosen by generalized cross-validation
#: (``linear_leaves="gcv"``) and GETRegressorCV's patience 3. 4: a linear leaf's prediction is clamped to its
#: training targets' range (``clip_leaves=True``). "Same settings" includes the thread count: the fused CPU kernel
#: splits rows into blocks per thread, so float sums (and, rarely, the tree) can differ between thread counts; the
#: benchmarks pin one thread per fit. Options added later with defaults that train as before (``scaling``) need no
#: bump.
ENGINE_VERSION = 4
#: The last version that changed fixed-depth trees with constant leaves (GET, its polish, fixed-alpha ablations):
#: the training-optimality tables, which use nothing else, keep the cells of that version.
CONSTANT_LEAF_ENGINE_VERSION = 2


def __getattr__(name: str):
    if name in ("GETRegressor", "GETRegressorCV"):
        from get_core import estimator

        return getattr(estimator, name)
    if name == "ModelFormatError":
        from get_core import model_file

        return model_file.ModelFormatError
    raise AttributeError(name)
