"""The plan of a time-budgeted fit: every decision that reads the clock, recorded, so that a fit can replay it.

A budget has to read the clock (how many starts and epochs the seconds buy, which starts a rung keeps, when the race
is out of time, whether a node refit pass or the polish still fits), so two budgeted fits with the same seed differ
(issue 34: seed 7 and 2 s gave trees whose weights differed by 2.14). Every such decision goes through one ``Plan``,
in the order the fit makes it. A fit with a budget records the answers (``tree.meta["plan"]``, ``record``, and so
the model file); a fit given that record (``replayed``) takes its answers from it instead of the clock, so it makes
the same computations and returns the same tree, bit for bit, on the same machine, device and thread count.

The decisions (question: answer), in a fit's order:
- ``"race"``: [starts, epochs per stage, checkpoints per stage] that the probes chose (``optimize.budgeted``): the
  optimization's race, then each polish level's;
- ``"cart_rows"``: the rows a CART start can fit in its share of the budget (``train._cart_rows``), per problem;
- ``"keep"``: at a rung, how many of the starts that may be dropped go on (``race.Race.survivors``);
- ``"stop"``: the position (epochs over all stages) where a race passed its hard limit (``race.Race.out_of_time``).
  It is asked every epoch, so only a stop is written (``Plan.stops``);
- ``"refit_stop"``: the node refit pass that its deadline kept from starting (``node_refit``), likewise;
- ``"polish"``: whether the optimization left time to polish (``train``);
- ``"polish_stop"``: the polish level that the spent budget kept from starting (``polish``), written as a stop.
- ``"logistic_leaves"``: how many leaves, most rows first, took up a logistic model before the fit's budget ended
  (``train._fit_logistic_leaves``).
The seed is part of the record: a budgeted fit with ``random_state=None`` draws one and records it.

A depth search (``GETRegressorCV``, ``GETClassifierCV``) is many budgeted fits: its record (``search_record``) holds
the whole search's budget and seed and each fit's own record in the order the search made them, then the refit's;
a search given it (``SearchReplay``) hands each fit its record, so every fit, and so every score and choice of the
search, is the recorded one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import warnings
from dataclasses import asdict, replace
from typing import Any, Callable, TypeVar

import numpy as np
import torch

from get_core.config import ENGINE_VERSION, GETConfig
from get_core.errors import GETExplorerError

T = TypeVar("T")

#: The record's layout; a record of another version is refused.
PLAN_VERSION = 2
QUESTIONS = ("race", "cart_rows", "keep", "stop", "refit_stop", "polish", "polish_stop", "logistic_leaves")
#: Settings that a budgeted fit does not train by (the plan chooses starts and epochs) or that do not change its
#: decisions (the device: ``replayed`` warns when it differs, since the floats then may). The budget and the seed
#: are checked apart: a replay may leave them None and take the plan's.
_NOT_COMPARED = ("n_starts", "n_epochs", "device", "time_budget", "random_state")


class PlanError(GETExplorerError, ValueError):
    """A plan that cannot be replayed here: not a recorded plan, or recorded by another fit; the message says
    which."""


class Plan:
    """The clock-dependent decisions of one fit: answered by the clock and recorded (``Plan()``), or answered from
    a record (``Plan(decisions)``, see ``replayed``) without reading the clock."""

    def __init__(self, decisions: list | None = None):
        self.replaying = decisions is not None
        self.decisions: list[list] = [] if decisions is None else [list(d) for d in decisions]
        self._next = 0

    def answer(self, question: str, clock: Callable[[], T], valid: Callable[[Any], bool] = lambda _: True) -> T:
        """The answer to ``question``: ``clock()``'s, recorded, or when replaying the record's next one (which must
        be an answer to the same question that ``valid`` accepts)."""
        if not self.replaying:
            value = clock()
            self.decisions.append([question, value])
            return value
        if self._next >= len(self.decisions) or self.decisions[self._next][0] != question:
            found = "its end" if self._next >= len(self.decisions) else repr(self.decisions[self._next][0])
            raise PlanError(f"The plan does not belong to this fit: its decision {self._next + 1} should answer "
                            f"{question!r}, but the plan has {found} there. Replay a plan with the data and "
                            "settings of the fit that recorded it.")
        value = self.decisions[self._next][1]
        if not valid(value):
            raise PlanError(f"The plan's decision {self._next + 1} ({question!r}) is {value!r}, which this fit cannot "
                            "take: the plan was edited or belongs to another fit.")
        self._next += 1
        return value

    def stops(self, question: str, position: int, clock: Callable[[], bool]) -> bool:
        """Whether the fit stops at ``position``, a question asked often (every epoch): only a stop is recorded,
        as (question, position); when replaying, True exactly where the record's next decision is that stop."""
        if not self.replaying:
            stop = clock()
            if stop:
                self.decisions.append([question, int(position)])
            return stop
        due = self._next < len(self.decisions) and self.decisions[self._next] == [question, int(position)]
        self._next += due
        return due

    def finish(self) -> None:
        """When replaying: every decision of the record was used (else the fit was not the one that recorded it)."""
        if self.replaying and self._next < len(self.decisions):
            raise PlanError(f"The plan does not belong to this fit: the fit made {self._next} of its "
                            f"{len(self.decisions)} decisions and ended. Replay a plan with the data and settings "
                            "of the fit that recorded it.")


def fit_header(X: np.ndarray, y: np.ndarray, config: GETConfig, device: str,
               sample_weight: np.ndarray | None = None, warm_splits: Any = None) -> dict:
    """What a plan is recorded for: the budget, the seed, the data (shape and a digest of X, y, the weights and a
    warm start's splits), the settings the fit trains by, and the engine, device and thread count (bit-identity
    needs the same ones). ``device``: where it trains (``optimize.resolve_device``'s type); ``warm_splits``: a warm
    start's ``Params``."""
    digest = hashlib.blake2b(digest_size=16)
    for array in (X, y, sample_weight, *(() if warm_splits is None else warm_splits.tensors())):
        if array is not None:
            values = array.cpu().numpy() if isinstance(array, torch.Tensor) else np.asarray(array)
            digest.update(repr(values.shape).encode())
            digest.update(np.ascontiguousarray(values).tobytes())
    return {"version": PLAN_VERSION, "engine": ENGINE_VERSION, "budget": config.time_budget,
            "seed": config.random_state, "rows": int(X.shape[0]), "features": int(X.shape[1]),
            "data": digest.hexdigest(), "settings": _settings(config), "device": device,
            "threads": torch.get_num_threads()}


def record(header: dict, plan: Plan) -> dict:
    """The JSON-able record of a fit's plan (``tree.meta["plan"]``): its ``header`` and its decisions."""
    return {**header, "decisions": [list(d) for d in plan.decisions]}


def replay_config(config: GETConfig, replay: Any) -> GETConfig:
    """``config`` with the budget and the seed of ``replay`` (a recorded plan) where it leaves them None."""
    _check_layout(replay)
    return replace(config, time_budget=replay["budget"] if config.time_budget is None else config.time_budget,
                   random_state=replay["seed"] if config.random_state is None else config.random_state)


def replayed(replay: Any, header: dict) -> Plan:
    """The ``Plan`` that answers from ``replay`` (a recorded plan, ``record``) for the fit described by ``header``
    (``fit_header``); a PlanError names what does not match (settings, data, budget, seed)."""
    _check_layout(replay)
    for key, what in (("budget", "time_budget"), ("seed", "random_state")):
        if replay[key] != header[key]:
            raise PlanError(f"The plan was recorded with {what}={replay[key]!r}; this fit has {what}={header[key]!r}. "
                            f"Leave {what}=None to take the plan's, or give the same value.")
    differ = [name for name in sorted(set(replay["settings"]) | set(header["settings"]))
              if replay["settings"].get(name) != header["settings"].get(name)]
    if differ:
        shown = "; ".join(f"{name}={replay['settings'].get(name)!r} there, {header['settings'].get(name)!r} here"
                          for name in differ[:3])
        raise PlanError(f"The plan was recorded with other settings ({shown}). Replay it with the settings of the fit "
                        "that recorded it.")
    if (replay["rows"], replay["features"]) != (header["rows"], header["features"]):
        raise PlanError(f"The plan was recorded on {replay['rows']} rows x {replay['features']} features; this fit has "
                        f"{header['rows']} x {header['features']}. Replay it on the data it was recorded on.")
    if replay["data"] != header["data"]:
        raise PlanError("The plan was recorded on other data (the same shape, other values or weights). Replay it on "
                        "the rows it was recorded on, in the same order.")
    if (replay["device"], replay["threads"]) != (header["device"], header["threads"]):
        warnings.warn(f"The plan was recorded on {replay['device']} with {replay['threads']} thread(s); this fit runs "
                      f"on {header['device']} with {header['threads']}: it makes the same decisions, but its floats "
                      "(and so the tree) can differ slightly. torch.set_num_threads gives the recorded count.",
                      RuntimeWarning, stacklevel=3)
    return Plan(replay["decisions"])


def search_record(budget: float, seed: int, settings: dict, search: list[dict], refit: dict) -> dict:
    """The JSON-able record of a depth search's plans: the search's ``budget``, ``seed`` and own ``settings`` (the
    depths, patience... that decide which fits it makes), each search fit's plan (``record``, in the order made)
    and the refit's."""
    return {"version": PLAN_VERSION, "kind": "search", "budget": budget, "seed": seed,
            "settings": json.loads(json.dumps(settings)), "search": [copy.deepcopy(p) for p in search],
            "refit": copy.deepcopy(refit)}


#: What to do when a search makes other fits than its plan recorded (the data or the search's settings differ).
_OTHER_SEARCH = ("Replay a plan with the data and settings (depths, patience, tol, l1, validation_fraction) of the "
                 "search that recorded it.")


class SearchReplay:
    """A depth search's recorded plans (``search_record``) handed out in order: ``next_fit`` for each search fit,
    ``refit`` for the refit (once every search fit's plan was used)."""

    def __init__(self, replay: Any, settings: dict):
        """``settings``: the replaying search's own (``search_record``'s), which must be the recorded ones."""
        _check_search_layout(replay)
        here = json.loads(json.dumps(settings))
        differ = [name for name in sorted(set(replay["settings"]) | set(here))
                  if replay["settings"].get(name) != here.get(name)]
        if differ:
            shown = "; ".join(f"{name}={replay['settings'].get(name)!r} there, {here.get(name)!r} here"
                              for name in differ[:3])
            raise PlanError(f"The plan was recorded by a search with other settings ({shown}). Replay it with the "
                            "settings of the search that recorded it.")
        self.budget, self.seed = replay["budget"], replay["seed"]
        self._search, self._refit, self._next = replay["search"], replay["refit"], 0

    def next_fit(self) -> dict:
        if self._next >= len(self._search):
            raise PlanError(f"The plan does not belong to this search: it recorded {len(self._search)} search fit(s), "
                            f"and this search makes more. {_OTHER_SEARCH}")
        self._next += 1
        return self._search[self._next - 1]

    def refit(self) -> dict:
        if self._next < len(self._search):
            raise PlanError(f"The plan does not belong to this search: it recorded {len(self._search)} search fits, "
                            f"and this search stopped after {self._next}. {_OTHER_SEARCH}")
        return self._refit


def _check_search_layout(replay: Any) -> None:
    """Refuse anything that is not a depth search's record, naming what is wrong; a single fit's plan is named as
    such (it belongs to ``GETRegressor``/``GETClassifier``)."""
    if not isinstance(replay, dict):
        raise PlanError(f"replay_plan must be a recorded search plan (a fitted search's plan_, a dict); got "
                        f"{type(replay).__name__}.")
    if "decisions" in replay and "kind" not in replay:
        raise PlanError("replay_plan is the plan of a single fit (a tree's meta['plan']); a depth search replays the "
                        "plan of a whole search: its plan_ (or tree_.meta['search_plan']).")
    if replay.get("kind") != "search" or replay.get("version") != PLAN_VERSION:
        raise PlanError(f"replay_plan is not a recorded search plan of this engine (version {PLAN_VERSION}, kind "
                        f"'search'); it has version {_short(replay.get('version'))}, "
                        f"kind {_short(replay.get('kind'))}.")
    if not (_is_number(replay.get("budget")) and 0 < replay["budget"] < math.inf and _is_int(replay.get("seed"))
            and isinstance(replay.get("settings"), dict)):
        raise PlanError("replay_plan's 'budget', 'seed' and 'settings' must be a positive number of seconds, an "
                        "integer and a dict, as a search records them.")
    if not (isinstance(replay.get("search"), list) and replay["search"]
            and all(isinstance(p, dict) for p in replay["search"]) and isinstance(replay.get("refit"), dict)):
        raise PlanError("replay_plan's 'search' must be a non-empty list of fits' plans and its 'refit' one plan, as a "
                        "search records them.")


def _check_layout(replay: Any) -> None:
    """Refuse anything that is not a recorded plan of this engine, naming the field at fault."""
    if not isinstance(replay, dict):
        raise PlanError(f"replay_plan must be a recorded plan (a fitted tree's meta['plan'], a dict); got "
                        f"{type(replay).__name__}.")
    expected = {"version": lambda v: v == PLAN_VERSION, "engine": lambda v: v == ENGINE_VERSION,
                "budget": lambda v: _is_number(v) and 0 < v < math.inf, "seed": _is_int,
                "rows": _is_int, "features": _is_int, "data": lambda v: isinstance(v, str),
                "settings": lambda v: isinstance(v, dict), "device": lambda v: isinstance(v, str),
                "threads": _is_int, "decisions": _are_decisions}
    for key, ok in expected.items():
        if key not in replay:
            raise PlanError(f"replay_plan is not a recorded plan: it has no {key!r} (a fitted tree's meta['plan'] "
                            "has).")
        if not ok(replay[key]):
            hint = (f" (this engine replays plans of version {PLAN_VERSION}, engine {ENGINE_VERSION})"
                    if key in ("version", "engine") else "")
            raise PlanError(f"replay_plan's {key!r} is {_short(replay[key])}, which no recorded plan holds{hint}.")


def _are_decisions(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(d, (list, tuple)) and len(d) == 2 and d[0] in QUESTIONS for d in value)


def _settings(config: GETConfig) -> dict:
    """The settings a budgeted fit trains by, as JSON gives them back (tuples as lists)."""
    return json.loads(json.dumps({k: v for k, v in asdict(config).items() if k not in _NOT_COMPARED
                                  and not (k == "class_leaf" and v == "constant")}))  # as plans before it read


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
