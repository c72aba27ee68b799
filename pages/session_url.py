"""A session's dataset and choices kept in the page's address, so that a reload (a new Streamlit session) finds them.

Streamlit forgets a session when the page reloads; the URL survives. The Train page writes there:
  * ``data``: the first 16 hex digits of the fingerprint of the training table (the target column, then the chosen
    features: the bytes a run stores), which the run store keeps (``RunStore.put_dataset``); the table carries the
    target and features themselves, so long feature lists never go into the URL;
  * ``onehot`` (a JSON list), ``missing``, ``task`` (``classification``) and ``categories`` (``groups``: category
    columns handed to the estimator; an address without it, older ones too, one-hot encodes them): the rest of the
    ``DataSpec``, when not the defaults;
  * ``train``: the Train settings that differ from their defaults, as ``depth:5,leaf:linear`` (a class target's
    leaves: ``class_leaf:logistic`` for a fixed tree, ``search_class_leaf:constant`` under "choose for me").
A new session that finds ``data`` restores the table (on the Data page too), the choices and the settings; the Runs and
Tree pages keep these parameters too, so a reload there restores the table as well. A wrong or
unknown value is said in words and dropped; nothing else is lost.
"""

from __future__ import annotations

import json
import math
from typing import Any

import streamlit as st

from get_core.data import columns
from get_core.data.classes import TASKS
from get_core.config import ALLOWED, CLASS_LEAVES, SEARCH_CLASS_LEAVES
from get_core.data.encoding import MISSING_POLICIES, DataSpec, prepare
from get_core.errors import GETExplorerError
from pages import common

FINGERPRINT_CHARS = 16
RESTORED = "_url_restored"  # session key: this session has read its URL once
STORED = "_stored_tables"  # session key: data choice -> fingerprint of its table in the store
SETTINGS_TEXT = "_url_train"  # session key: the ``train`` text the URL keeps (written by the Train page)
PENDING = "_url_train_pending"  # session key: a restored URL's ``train`` text, not yet given to the Train widgets

# The Train page's settings that the URL carries: widget key -> the values its widget takes (low, high) or options.
# tests/pages/test_session_url.py checks these against the widgets, so a value from the URL never breaks one.
SETTINGS: dict[str, tuple] = {
    "cfg_depth": (ALLOWED["depth"].low, ALLOWED["depth"].high), "cfg_leaf": ALLOWED["leaf"].options,
    "cfg_linear_leaves": ALLOWED["linear_leaves"].options, "cfg_clip_leaves": (False, True),
    "cfg_starts": (ALLOWED["n_starts"].low, 64), "cfg_epochs": (ALLOWED["n_epochs"].low, 20000),
    "cfg_n_alphas": (ALLOWED["n_alphas"].low, 10), "cfg_alpha_min": (0.1, 10000.0), "cfg_alpha_max": (0.1, 10000.0),
    "cfg_lr": (1e-5, 1.0), "cfg_l1": (0.0, 10.0), "cfg_polish": ("auto", "on", "off"),
    "cfg_scaling": ALLOWED["scaling"].options,
    "cfg_test_fraction": (0.1, 0.5), "cfg_seed": (0, 2**31 - 1),
    "cfg_budget": ("about 10 s", "about a minute", "paper budget", "manual"), "cfg_depth_mode": ("fixed", "choose"),
    "cfg_split_features": ("1", "2", "3", "5", "any", "auto"), "cfg_class_weight": ("none", "balanced"),
    "cfg_class_leaf": CLASS_LEAVES, "cfg_search_class_leaf": SEARCH_CLASS_LEAVES,
}


# ------------------------------------------------------------------------------------------ settings text
def encode_settings(values: dict[str, Any], defaults: dict[str, Any]) -> str:
    """``depth:5,leaf:linear``: the settings of ``SETTINGS`` whose value differs from ``defaults``."""
    parts = []
    for key in SETTINGS:
        value = values.get(key, defaults.get(key))
        if key in values and value != defaults.get(key):
            text = ("1" if value else "0") if isinstance(value, bool) else repr(value) if isinstance(value, float) \
                else str(value)
            parts.append(f"{key.removeprefix('cfg_')}:{text}")
    return ",".join(parts)


def decode_settings(text: str, defaults: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings in ``text`` (``encode_settings``'s form) that the Train widgets can take, and a sentence for each
    part that was dropped."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        name, _, raw = part.partition(":")
        key = "cfg_" + name.strip()
        if key not in SETTINGS or key not in defaults:
            problems.append(f"'{name.strip()[:40]}' is not a Train setting")
            continue
        value = _parse(raw.strip(), defaults[key], SETTINGS[key])
        if value is None:
            problems.append(f"{name.strip()} cannot be '{raw.strip()[:40]}'")
        else:
            values[key] = value
    return values, problems


def _parse(raw: str, default: Any, allowed: tuple) -> Any:
    """``raw`` as the type of ``default`` when ``allowed`` takes it (a range, or options); else None."""
    if isinstance(default, bool):
        return {"1": True, "true": True, "0": False, "false": False}.get(raw.lower())
    if isinstance(default, str):
        return raw if raw in allowed else None
    value = common.url_number(raw, whole=isinstance(default, int))
    if value is None or isinstance(value, float) and not math.isfinite(value):
        return None
    return value if allowed[0] <= value <= allowed[1] else None


# ------------------------------------------------------------------------------------------ the page's URL
def keep(ready: dict, settings: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Put the session's table (stored once per choice), data choices and settings into the URL."""
    spec = ready["spec"]
    stored = st.session_state.setdefault(STORED, {})  # the Data page rebuilds ``ready`` on each of its runs
    choice = f"{ready['token']}|{json.dumps(spec, sort_keys=True)}"
    fingerprint = ready.get("fingerprint") or stored.get(choice)
    if fingerprint is None:  # once per choice: 1.5-2.4 s for 200,000 rows x 20 columns on the shared machine
        fingerprint = common.get_store().put_dataset(columns.to_parquet_bytes(ready["table"]), ready["name"])
    ready["fingerprint"] = stored[choice] = fingerprint
    st.session_state[SETTINGS_TEXT] = encode_settings(settings, defaults) or None
    _write(ready)


def carry() -> None:
    """On the Runs and Tree pages: restore the table a reload's URL names (a new session), and keep the session's
    table, data choices and Train settings in the URL, so that a reload there does not lose them (issue 35)."""
    ready = st.session_state.get("data_ready") or restore_table()
    st.session_state["data_ready"] = ready
    if ready is not None and ready.get("fingerprint"):
        _write(ready)


def _write(ready: dict) -> None:
    spec = ready["spec"]
    wanted = {"data": ready["fingerprint"][:FINGERPRINT_CHARS],
              "onehot": json.dumps(list(spec.get("categorical", []))) if spec.get("categorical") else None,
              "missing": spec.get("missing") if spec.get("missing", "drop") != "drop" else None,
              "task": spec.get("task") if spec.get("task", "regression") != "regression" else None,
              "categories": "groups" if spec.get("one_hot", True) is False else None,
              "train": st.session_state.get(SETTINGS_TEXT)}
    for name, value in wanted.items():  # written on every run: a page switch may have cleared the browser's URL
        if value is None:
            st.query_params.pop(name, None)
        else:
            st.query_params[name] = value


def restore_table() -> dict | None:
    """In a new session, the table and data choices the URL names (see the module docstring), as the Data page would
    have left them; None when it names none or they cannot be restored (said in words). The URL's settings wait for
    the Train page (``restore_settings``)."""
    if st.session_state.get(RESTORED):
        return None
    st.session_state[RESTORED] = True
    fingerprint = st.query_params.get("data")
    if not fingerprint:
        return None
    try:
        stored = common.get_store().find_dataset(fingerprint)
        table = columns.from_parquet_bytes(stored.data)
        spec = _spec(table)
        prepared = prepare(table, spec)
    except GETExplorerError as exc:
        st.warning(f"This page's address names a dataset that cannot be restored: {common.plain(exc)} Choose a "
                   "dataset on the Data page.")
        return None
    except (ValueError, OSError) as exc:  # a stored blob that is not a readable table (pyarrow's ArrowInvalid)
        st.warning(f"This page's address names a stored dataset that cannot be read ({type(exc).__name__}). Choose "
                   "a dataset on the Data page.")
        return None
    st.session_state[PENDING] = st.query_params.get("train", "")
    st.session_state[SETTINGS_TEXT] = st.query_params.get("train") or None
    token = f"{fingerprint[:12]}-stored"
    st.session_state["dataset"] = {"name": stored.name, "df": table, "token": token}
    st.session_state["data_choices"] = {"token": token, **spec.to_dict(),
                                        "categories": "one-hot" if spec.one_hot else "categories"}  # the Data page's
    return {"name": stored.name, "table": table, "spec": spec.to_dict(), "n_rows": len(prepared.y),
            "n_features": prepared.n_inputs, "token": token, "fingerprint": columns.fingerprint(stored.data),
            "outliers": columns.outlier_notes(prepared.numbers, list(prepared.encoding.baseline_names))}


def _spec(table) -> DataSpec:
    """The target and features from the stored table's columns; one-hot and missing-value choices from the URL."""
    names = [str(c) for c in table.columns]
    if len(names) < 2:
        raise columns.DataError("the stored table has no feature column.")
    missing = st.query_params.get("missing", "drop")
    if missing not in MISSING_POLICIES:
        raise columns.DataError(f"'missing' must be one of {', '.join(MISSING_POLICIES)}, not '{missing[:40]}'.")
    onehot = _flat_json_list(st.query_params.get("onehot", "[]"))
    if not isinstance(onehot, list) or any(c not in names[1:] for c in onehot):
        raise columns.DataError("'onehot' must list some of the table's feature columns as JSON.")
    task = st.query_params.get("task", "regression")
    if task not in TASKS:
        raise columns.DataError(f"'task' must be one of {', '.join(TASKS)}, not '{task[:40]}'.")
    return DataSpec(target=names[0], features=tuple(names[1:]), categorical=tuple(onehot), missing=missing,
                    task=task, one_hot=st.query_params.get("categories") != "groups")


def _flat_json_list(text: str) -> list | None:
    """``text`` parsed as JSON when it nests no deeper than a list of plain values (the one-hot columns), else None.
    The depth is counted before parsing: 5,000 nested brackets would take ``json.loads`` past Python's recursion
    limit (a RecursionError, not a ValueError)."""
    depth, deepest, in_string, escaped = 0, 0, False, False
    for ch in text:
        if in_string:
            in_string, escaped = (ch != '"' or escaped), (ch == "\\" and not escaped)
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > 1:
                return None
        elif ch in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except ValueError:
        return None


def restore_settings(defaults: dict[str, Any]) -> None:
    """The Train settings a restored URL named (kept by ``restore_table``), given to the Train widgets once."""
    text = st.session_state.pop(PENDING, None)
    if text is None:
        return
    values, problems = decode_settings(text, defaults)
    st.session_state.setdefault("_remembered", {}).update(values)  # what common.remember gives the widgets
    if problems:
        st.warning("Some training settings in this page's address were left at their defaults: "
                   + common.plain("; ".join(problems)) + ".")
