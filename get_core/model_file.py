"""The model file: an ``ObliqueTree`` as JSON, and every check a file from anywhere must pass to load.

``to_dict`` / ``from_dict`` are the format as plain data (what the run store keeps); ``model_json`` /
``load_model_json`` the file's text, with the run's ``Encoding`` in ``meta["encoding"]`` (``model_encoding``). A file
anyone may have edited is refused with a ``ModelFormatError`` whose sentence names the field at fault.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from get_core.encoding import Encoding
from get_core.tree import LEAF_TYPES, MAX_DEPTH, ObliqueTree

SCHEMA = "get-explorer/oblique-tree"
SCHEMA_VERSION = 2  # 2 added leaf_lower / leaf_upper; version 1 files (no bounds) still load
READABLE_VERSIONS = (1, 2)


class ModelFormatError(ValueError):
    """A serialized tree is malformed; the message says which field and what was expected."""


# ---------------------------------------------------------------------------------------------- dict form
def to_dict(tree: ObliqueTree) -> dict[str, Any]:
    """A JSON-ready dict (lists and plain numbers, ``meta`` too) that ``from_dict`` restores exactly; it shares
    nothing with the tree."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
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


def from_dict(data: Any) -> ObliqueTree:
    """Validate and load a dict made by ``to_dict``; raises ModelFormatError naming the bad field."""
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
    leaf_type = data.get("leaf_type")
    if leaf_type not in LEAF_TYPES:
        raise ModelFormatError(f"Field 'leaf_type' must be one of {LEAF_TYPES}; got {leaf_type!r}.")
    if leaf_type == "constant" and np.any(loaded["leaf_coefs"] != 0):
        raise ModelFormatError("Field 'leaf_coefs' must be all zeros in a model with constant leaves.")
    if leaf_type == "constant" and (np.isfinite(loaded["leaf_lower"]).any()
                                    or np.isfinite(loaded["leaf_upper"]).any()):
        raise ModelFormatError("Fields 'leaf_lower' and 'leaf_upper' must be null in a model with constant leaves "
                               "(only linear leaves are clamped).")
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise ModelFormatError("Field 'meta' must be an object.")
    return ObliqueTree(feature_names=names, leaf_type=leaf_type, meta=plain(meta), **loaded, **scalars)


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


def load_model_json(source: str | bytes) -> ObliqueTree:
    """Parse and validate model JSON; raises ModelFormatError with a readable message for anything malformed."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError:
            raise ModelFormatError("The model file is not UTF-8 text; export it again from GET Explorer.") from None
    if not isinstance(source, str):
        raise ModelFormatError(f"A model file is JSON text; got {type(source).__name__}.")
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
        tree = from_dict(data)
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
    if list(encoding.feature_names) != tree.feature_names:
        raise ModelFormatError("Field 'meta.encoding' belongs to another model: its 'feature_names' must be the "
                               "model's.")
    return encoding


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

