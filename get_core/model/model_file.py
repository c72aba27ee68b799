"""The model file: an ``ObliqueTree`` as JSON, and every check a file from anywhere must pass to load.

``to_dict`` / ``from_dict`` are the format as plain data (what the run store keeps); ``model_json`` /
``load_model_json`` the file's text, with the run's ``Encoding`` in ``meta["encoding"]`` (``model_encoding``). A file
anyone may have edited is refused with a ``ModelFormatError`` whose sentence names the field at fault.

Bounds, each far beyond what GET Explorer writes and each checked before the step it protects:
- the text, before ``json.loads`` builds anything: ``MAX_MODEL_MB`` bytes, ``MAX_MODEL_ITEMS`` commas and brackets,
  ``MAX_MODEL_STRINGS`` strings, ``MAX_MODEL_NESTING`` levels. The largest model the app writes (depth 12, 200
  features, linear leaves, ``indent=1``, every number 24 characters long) is 47 MB (62 MB re-indented by 4) with
  1.69 million commas and brackets, about 850 strings and 5 levels.
- the numbers: offsets within ``MAX_ABS`` and scales up to ``2 * MAX_ABS`` (what training on data within ±MAX_ABS
  gives), every field in scaled units (weights, thresholds, leaf values and bounds) within ``MAX_SCALED``. Then
  ``y_min + y_scale * (intercept + coefs · xs)`` stays finite for rows up to a million training ranges away, so a
  loaded model never predicts inf.
- the classes: at most ``config.LIBRARY_MAX_CLASSES`` (fewer where the caller asks: the app's 50), counted before
  any class table is built.
- the text in it: feature names distinct and, like every string in ``meta``, writable as UTF-8 (no lone surrogate).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from get_core.config import LIBRARY_MAX_CLASSES
from get_core.data.encoding import MAX_ABS, Encoding
from get_core.errors import GETExplorerError
from get_core.model.inputs import Inputs
from get_core.model.tree import (CLASS_LEAVES, LEAF_TYPES, LOGISTIC_FIELDS, MAX_DEPTH, ObliqueTree,
                                 feature_name_problem, writable)

SCHEMA = "get-explorer/oblique-tree"
#: 2 added leaf_lower / leaf_upper (version 1 files, no bounds, still load); 3 added classification trees
#: (leaf_type "classes" with classes, leaf_proba and node_counts; a regression tree's fields are version 2's); 4 added
#: logistic leaves (``LOGISTIC_FIELDS``). A file is written with the lowest version that holds its tree (a tree
#: without logistic leaves: 3), so a reader of version 3 still reads every other tree. 5 added ``inputs``, the raw
#: columns of a tree fitted on a table as it comes (``get_core.model.inputs``: missing values, categories).
SCHEMA_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
#: The class fields of a classification tree (version 3), absent from a regression tree's file.
CLASS_FIELDS = ("classes", "leaf_proba", "node_counts")
MAX_MODEL_MB = 64
MAX_MODEL_ITEMS = 4_000_000
MAX_MODEL_STRINGS = 100_000
MAX_MODEL_NESTING = 20
MAX_SCALED = 1e100
#: Fields in original units and their bound; every other number of the file is in scaled units (``MAX_SCALED``).
_ORIGINAL_UNITS = {"x_min": MAX_ABS, "y_min": MAX_ABS, "x_scale": 2 * MAX_ABS, "y_scale": 2 * MAX_ABS}


class ModelFormatError(GETExplorerError, ValueError):
    """A serialized tree is malformed; the message says which field and what was expected."""


# ---------------------------------------------------------------------------------------------- dict form
def to_dict(tree: ObliqueTree) -> dict[str, Any]:
    """A JSON-ready dict (lists and plain numbers, ``meta`` too) that ``from_dict`` restores exactly; it shares
    nothing with the tree."""
    data = {
        "schema": SCHEMA,
        "version": 5 if tree.inputs is not None else 4 if tree.has_logistic_leaves else 3,
        "depth": tree.depth,
        "leaf_type": tree.leaf_type,
        "feature_names": list(tree.feature_names),
        "x_min": tree.x_min.tolist(),
        "x_scale": tree.x_scale.tolist(),
        "y_min": tree.y_min,
        "y_scale": tree.y_scale,
        "weights": tree.weights.tolist(),
        "thresholds": tree.thresholds.tolist(),
        "leaf_intercepts": tree.leaf_intercepts.tolist(),
        "leaf_coefs": tree.leaf_coefs.tolist(),
        "n_samples": tree.n_samples.tolist(),
        "node_values": [None if math.isnan(v) else v for v in tree.node_values.tolist()],
        "leaf_lower": _finite_or_none(tree.leaf_lower),
        "leaf_upper": _finite_or_none(tree.leaf_upper),
        "meta": plain(tree.meta),
    }
    if tree.is_classifier:
        data.update(classes=list(tree.classes), leaf_proba=tree.leaf_proba.tolist(),
                    node_counts=tree.node_counts.tolist())
    if tree.has_logistic_leaves:
        data.update({name: getattr(tree, name).tolist() for name in LOGISTIC_FIELDS})
    if tree.inputs is not None:
        data["inputs"] = tree.inputs.to_dict()
    return data


def from_dict(data: Any, max_classes: int = LIBRARY_MAX_CLASSES) -> ObliqueTree:
    """Validate and load a dict made by ``to_dict`` of at most ``max_classes`` classes; raises ModelFormatError
    naming the bad field."""
    version, depth, names = _header(data)
    p, n_leaves = len(names), 2 ** depth
    arrays = {
        "x_min": (p,), "x_scale": (p,), "weights": (n_leaves - 1, p), "thresholds": (n_leaves - 1,),
        "leaf_intercepts": (n_leaves,), "leaf_coefs": (n_leaves, p), "n_samples": (2 * n_leaves - 1,),
    }
    loaded = {key: _array_field(data, key, shape) for key, shape in arrays.items()}
    loaded["node_values"] = _array_field(data, "node_values", (2 * n_leaves - 1,), allow_nan=True)
    for key, missing in (("leaf_lower", -np.inf), ("leaf_upper", np.inf)):  # absent in version 1: no bounds
        if version >= 2 or key in data:  # a version 2 file always has them (null: no bound)
            bound = _array_field(data, key, (n_leaves,), allow_nan=True)
        else:
            bound = np.full(n_leaves, missing)
        loaded[key] = np.where(np.isnan(bound), missing, bound)
    if np.any(loaded["leaf_lower"] > loaded["leaf_upper"]):
        raise ModelFormatError("Field 'leaf_lower' must not exceed 'leaf_upper' for any leaf.")
    if np.any(loaded["x_scale"] <= 0):
        raise ModelFormatError("Field 'x_scale' must hold positive numbers.")
    counts = loaded["n_samples"]
    if np.any(counts < 0) or np.any(counts != np.round(counts)) or np.any(counts > 2 ** 53):
        raise ModelFormatError("Field 'n_samples' must hold non-negative integers.")
    scalars = {key: _scalar_field(data, key) for key in ("y_min", "y_scale")}
    if scalars["y_scale"] <= 0:
        raise ModelFormatError("Field 'y_scale' must be positive.")
    for key, values in {**loaded, **scalars}.items():
        _check_magnitude(key, np.asarray(values))
    leaf_type = data.get("leaf_type")
    _check_leaf_type(leaf_type, loaded, version)
    classes = _class_fields(data, leaf_type, n_leaves, max_classes)
    classes.update(_logistic_fields(data, version, classes, n_leaves, len(names)))
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise ModelFormatError("Field 'meta' must be an object.")
    if not all(writable(text) for text in _texts(meta)):
        raise ModelFormatError("Field 'meta' holds text with a lone surrogate (such as \\udcff), which no file can "
                               "hold; export the model again from GET Explorer.")
    inputs = _inputs_field(data, version)
    try:
        tree = ObliqueTree(feature_names=names, leaf_type=leaf_type, meta=plain(meta), **loaded, **scalars, **classes,
                           inputs=inputs)
    except ValueError as exc:  # a classification tree's fields that disagree (ObliqueTree says which)
        raise ModelFormatError(f"The model is inconsistent: {exc}") from None
    _check_split_features(meta, tree)
    return tree


def _header(data: Any) -> tuple[int, int, list[str]]:
    """The (version, depth, feature names) of a model dict, each checked: they fix every array's shape."""
    if not isinstance(data, dict):
        raise ModelFormatError(f"A model must be a JSON object; got {type(data).__name__}.")
    if data.get("schema") != SCHEMA:
        raise ModelFormatError(f"Not a GET Explorer model: field 'schema' must be '{SCHEMA}'.")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise ModelFormatError(
            f"Unsupported model version {data.get('version')!r}; this version reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}."
        )
    depth = data.get("depth")
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= MAX_DEPTH:
        raise ModelFormatError(f"Field 'depth' must be an integer from 1 to {MAX_DEPTH}; got {depth!r}.")
    names = data.get("feature_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ModelFormatError("Field 'feature_names' must be a non-empty list of strings.")
    problem = feature_name_problem(names)
    if problem:
        raise ModelFormatError(f"Field 'feature_names' must hold distinct names a file can hold: {problem}.")
    return version, depth, names


def _check_leaf_type(leaf_type: Any, loaded: dict[str, np.ndarray], version: int) -> None:
    """A known leaf type (class leaves from version 3), and constant leaves with no slopes and no bounds."""
    leaf_types = LEAF_TYPES + ((CLASS_LEAVES,) if version >= 3 else ())
    if leaf_type not in leaf_types:
        raise ModelFormatError(f"Field 'leaf_type' must be one of {leaf_types} in a version {version} model; got "
                               f"{leaf_type!r}.")
    if leaf_type == "constant" and np.any(loaded["leaf_coefs"] != 0):
        raise ModelFormatError("Field 'leaf_coefs' must be all zeros in a model with constant leaves.")
    if leaf_type == "constant" and (np.isfinite(loaded["leaf_lower"]).any()
                                    or np.isfinite(loaded["leaf_upper"]).any()):
        raise ModelFormatError("Fields 'leaf_lower' and 'leaf_upper' must be null in a model with constant leaves "
                               "(only linear leaves are clamped).")


def _class_fields(data: dict, leaf_type: str, n_leaves: int, max_classes: int) -> dict[str, Any]:
    """A classification tree's classes, leaf_proba and node_counts, checked; {} for a regression tree, whose file
    must not hold them."""
    if leaf_type != CLASS_LEAVES:
        present = [key for key in CLASS_FIELDS if key in data]
        if present:
            raise ModelFormatError(f"Field '{present[0]}' belongs to a classification tree; this model's leaf_type "
                                   f"is {leaf_type!r}.")
        return {}
    classes = data.get("classes")
    if isinstance(classes, list) and len(classes) > max_classes:
        reader = "GET Explorer" if max_classes >= LIBRARY_MAX_CLASSES else "GET Explorer's app"
        raise ModelFormatError(f"The model has {len(classes):,} classes; {reader} reads models of at most "
                               f"{max_classes:,} classes.")
    if not isinstance(classes, list) or not classes or not all(_is_label(c) for c in classes):
        raise ModelFormatError("Field 'classes' must be a non-empty list of class labels (text, integers within "
                               "64 bits, finite numbers or booleans).")
    if not all(writable(c) for c in classes if isinstance(c, str)):
        raise ModelFormatError("Field 'classes' holds text with a lone surrogate, which no file can hold.")
    n_classes = len(classes)
    proba = _array_field(data, "leaf_proba", (n_leaves, n_classes))
    counts = _array_field(data, "node_counts", (2 * n_leaves - 1, n_classes))
    _check_magnitude("node_counts", counts)
    return {"classes": classes, "leaf_proba": proba, "node_counts": counts}


def _logistic_fields(data: dict, version: int, classes: dict[str, Any], n_leaves: int, p: int) -> dict[str, Any]:
    """A classification tree's logistic leaves (version 4), each field checked; {} when the file has none."""
    present = [key for key in LOGISTIC_FIELDS if key in data]
    if not present:
        return {}
    if version < 4 or not classes:
        raise ModelFormatError(f"Field '{present[0]}' belongs to a classification tree with logistic leaves (model "
                               f"version 4); this file is version {version}"
                               f"{'' if classes else ' and not a classification tree'}.")
    C = len(classes["classes"])
    shapes = {"logit_intercepts": (n_leaves, C), "logit_coefs": (n_leaves, C, p), "logit_mix": (n_leaves,)}
    loaded = {key: _array_field(data, key, shape) for key, shape in shapes.items()}
    for key, values in loaded.items():
        _check_magnitude(key, values)
    return loaded


def _is_label(value: Any) -> bool:
    """A class label a model file holds: text, a boolean, an integer numpy can hold, or a finite number."""
    if isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return -2 ** 63 <= value < 2 ** 63
    return isinstance(value, float) and math.isfinite(value)


def _check_split_features(meta: dict, tree: ObliqueTree) -> None:
    """A file that states ``max_split_features`` k (in ``meta.config``, as training writes it) must keep it: no split
    with more than k non-zero weights (an edited file would otherwise be shown as the sparse tree it is not)."""
    config = meta.get("config")
    k = config.get("max_split_features") if isinstance(config, dict) else None
    if k is None:
        return
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ModelFormatError(f"Field 'meta.config.max_split_features' must be null or an integer >= 1; got {k!r}.")
    widths = tree.split_terms
    if np.any(widths > k):
        node = int(np.argmax(widths > k)) + 1
        raise ModelFormatError(f"Field 'weights' breaks the model's own 'meta.config.max_split_features' = {k}: the "
                               f"split of node {node} uses {int(widths[node - 1])} features.")


def _inputs_field(data: dict, version: int) -> Inputs | None:
    """The raw inputs (version 5), checked: None when the file has none (plain numeric inputs)."""
    if "inputs" not in data or data["inputs"] is None:
        return None
    if version < 5:
        raise ModelFormatError(f"Field 'inputs' needs model version 5; this file is version {version}.")
    try:
        return Inputs.from_dict(data["inputs"])
    except (ValueError, TypeError) as exc:
        raise ModelFormatError(f"Field 'inputs' is malformed: {exc}") from None


# ---------------------------------------------------------------------------------------------- JSON text
def model_json(tree: ObliqueTree, indent: int | None = None, encoding: Encoding | None = None) -> str:
    """The model as JSON text (``to_dict``), loadable by ``load_model_json``.

    The run's ``encoding`` goes into ``meta["encoding"]`` so that the file scores the raw columns the run was trained
    on, as the run does on the Predict page; a tree loaded from such a file keeps it (``model_encoding``).
    """
    data = to_dict(tree)
    if encoding is not None:
        data["meta"]["encoding"] = plain(encoding.to_dict())
    return json.dumps(data, indent=indent, allow_nan=False)


def load_model_json(source: str | bytes, max_classes: int = LIBRARY_MAX_CLASSES) -> ObliqueTree:
    """Parse and validate model JSON; raises ModelFormatError with a readable message for anything malformed.

    The text is bounded (size, items, strings, nesting: see the module docstring) before it is parsed, the classes
    to ``max_classes`` (at most ``config.LIBRARY_MAX_CLASSES``) before their tables are."""
    if isinstance(source, str):
        if not writable(source):
            raise ModelFormatError("The model file holds a lone surrogate, which is not text; export it again from "
                                   "GET Explorer.")
        source = source.encode("utf-8")
    if not isinstance(source, bytes):
        raise ModelFormatError(f"A model file is JSON text; got {type(source).__name__}.")
    _check_bounds(source)
    try:
        source = source.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFormatError("The model file is not UTF-8 text; export it again from GET Explorer.") from None
    if not source.strip():
        raise ModelFormatError("The model file is empty.")
    try:
        data = json.loads(source, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"The model file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                               f"{exc.msg}).") from None
    except (ValueError, RecursionError) as exc:  # an over-long integer literal, nesting deeper than Python's stack
        raise ModelFormatError(f"The model file is not a GET Explorer model ({type(exc).__name__}: "
                               f"{str(exc)[:120]}); export it again from GET Explorer.") from None
    try:
        tree = from_dict(data, min(max_classes, LIBRARY_MAX_CLASSES))
    except ModelFormatError:
        raise
    except (ValueError, TypeError) as exc:  # shape checks in the constructor
        raise ModelFormatError(f"The model file is inconsistent: {exc}") from None
    model_encoding(tree)  # a bad encoding is refused with the file, not when rows are scored
    return tree


def model_encoding(tree: ObliqueTree) -> Encoding | None:
    """The run's encoding saved with the model (``model_json``), or None for a model saved without one; raises
    ModelFormatError naming what is wrong with it."""
    if "encoding" not in tree.meta:
        return None
    try:
        encoding = Encoding.from_json(tree.meta["encoding"])
    except ValueError as exc:
        raise ModelFormatError(f"Field 'meta.encoding' is malformed: {exc}.") from None
    if list(encoding.feature_names) != (tree.feature_names if tree.inputs is None else tree.inputs.names):
        raise ModelFormatError("Field 'meta.encoding' belongs to another model: its 'feature_names' must be the "
                               "model's (its raw columns for a model fitted on them).")
    return encoding


# ---------------------------------------------------------------------------------------------- bounds
def _check_bounds(data: bytes) -> None:
    """Refuse text larger, fuller or deeper than any model file, before ``json.loads`` builds it (its objects take
    up to 25 times the text's bytes). Counts include characters inside strings, so they only ever over-count."""
    size_mb = len(data) / 2 ** 20
    advice = "it is not a model GET Explorer wrote; export the model again"
    if size_mb > MAX_MODEL_MB:
        raise ModelFormatError(f"The model file is {size_mb:.0f} MB; a model file is at most {MAX_MODEL_MB} MB "
                               f"(the largest GET Explorer writes is 47 MB): {advice}.")
    items = sum(data.count(c) for c in (b",", b"[", b"]", b"{", b"}"))
    if items > MAX_MODEL_ITEMS:
        raise ModelFormatError(f"The model file holds {items:,} commas and brackets; a model file holds at most "
                               f"{MAX_MODEL_ITEMS:,} (1.7 million for the largest GET Explorer writes): {advice}.")
    if data.count(b'"') > 2 * MAX_MODEL_STRINGS:
        raise ModelFormatError(f"The model file holds more than {MAX_MODEL_STRINGS:,} strings; a model file holds a "
                               f"few thousand: {advice}.")
    depth = _nesting(data)
    if depth > MAX_MODEL_NESTING:
        raise ModelFormatError(f"The model file nests lists and objects {depth} deep; a model file nests at most "
                               f"{MAX_MODEL_NESTING} deep: {advice}.")


def _nesting(data: bytes) -> int:
    """How deep lists and objects nest in JSON text ``data``, brackets inside strings ignored. Escaped backslashes
    go first, then escaped quotes (leftmost pairs, as a JSON reader takes them), then everything but quotes and
    brackets; what is left between two quotes was inside a string."""
    skeleton = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    brackets = re.sub(rb'"[^"]*"', b"", skeleton)
    steps = np.frombuffer(brackets, dtype=np.uint8)
    if not steps.size:
        return 0
    levels = np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1), dtype=np.int64)
    return int(levels.max())


_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'[]{}"')))


def _texts(value: Any):
    """Every string in ``value`` (dict keys too), walked without recursion like ``_holds_text``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_magnitude(key: str, values: np.ndarray) -> None:
    """Refuse a number beyond the field's bound (module docstring); infinities stand for absent leaf bounds."""
    limit = _ORIGINAL_UNITS.get(key, MAX_SCALED)
    finite = np.abs(values[np.isfinite(values)])
    if finite.size and finite.max() > limit:
        raise ModelFormatError(f"Field '{key}' holds {finite.max():.3g}, beyond the bound of {limit:.0e} that keeps "
                               "predictions finite; a trained model's numbers are far smaller.")


# ---------------------------------------------------------------------------------------------- fields
def _array_field(data: dict, key: str, shape: tuple[int, ...], allow_nan: bool = False) -> np.ndarray:
    if key not in data:
        raise ModelFormatError(f"Field '{key}' is missing.")
    raw = data[key]
    if not isinstance(raw, list) or _holds_text(raw):
        raise ModelFormatError(f"Field '{key}' must be a list of numbers.")
    try:
        values = np.array(raw if not allow_nan else _nulls_to_nan(raw), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ModelFormatError(f"Field '{key}' must hold only numbers within the range of a double.") from None
    if values.shape != shape:
        raise ModelFormatError(f"Field '{key}' must have shape {shape}; got {values.shape}.")
    if np.any(np.isinf(values)) or (not allow_nan and np.any(np.isnan(values))):
        raise ModelFormatError(f"Field '{key}' holds a non-finite number"
                               f"{' (only null may stand for a missing value)' if allow_nan else ''}.")
    return values


def _scalar_field(data: dict, key: str) -> float:
    value = data.get(key)
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer beyond the range of a double
        number = math.inf
    if not math.isfinite(number):
        raise ModelFormatError(f"Field '{key}' must be a finite number; got {str(value)[:40]}.")
    return number


def plain(value: Any) -> Any:
    """A deep copy of ``value`` with numpy scalars and arrays as Python numbers and lists, and tuples as lists:
    what JSON writes (a trainer may put ``np.int64`` in ``meta``), sharing nothing with ``value``. Walked without
    recursion, like ``_holds_text``."""
    root = [value]
    stack = [(root, 0)]  # (container, index or key) whose item is still to be copied
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, (np.ndarray, np.generic)):
            item = item.tolist()
        if isinstance(item, dict):
            item = dict(item)
            stack.extend((item, k) for k in item)
        elif isinstance(item, (list, tuple)):
            item = list(item)
            stack.extend((item, i) for i in range(len(item)))
        holder[key] = item
    return root[0]


def _holds_text(raw: list) -> bool:
    """True if a string or boolean sits anywhere in the nested lists (walked without recursion: a hand-made file
    may nest deeper than Python's stack)."""
    stack = [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, (bool, str)):
            return True
    return False


def _finite_or_none(values: np.ndarray) -> list[float | None]:
    """JSON has no infinities: an absent bound is written as null."""
    return [v if math.isfinite(v) else None for v in values.tolist()]


def _nulls_to_nan(raw: Any) -> Any:
    return [math.nan if v is None else v for v in raw] if isinstance(raw, list) else raw


def _refuse_constant(name: str) -> float:
    """JSON has no NaN or Infinity and ``model_json`` never writes them (a missing value is null)."""
    raise ValueError(f"'{name}' is not a JSON number; a GET Explorer model writes missing values as null")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:30]} is beyond the range of a double")
    return value

