"""Checkpoints of a depth search: a search that outlives its process resumes at its next depth (or its refit).

At the paper's budget one ``GETRegressorCV`` search can take hours (a depth-8 GET-Linear fit of 10 starts x 6000
epochs on 6,000 rows), longer than a machine or a session stays up. Every depth is fitted with the same seed, so a
finished depth's tree is exactly what a rerun would fit again: storing it lets the rerun skip it and end with the
same result as an uninterrupted search.

A stored tree is keyed by a fingerprint of everything its fit depends on (training rows, settings, engine version,
device, thread count), so a file made for other data or settings is never reused, only ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from get_core.config import ENGINE_VERSION, GETConfig, polishes, soft_rows
from get_core.model.model_file import load_model_json, model_json
from get_core.engine.optimize import resolve_device
from get_core.model.tree import ObliqueTree


#: Options added after checkpoints were first stored, with the default that trains as before: at that default they
#: stay out of the fingerprint, so the searches stored before them are still found.
#: ``batch_rows`` enters as the rows per soft epoch it gives on this table (None: all of them, as before sampling),
#: and ``polish`` as whether the fit polishes (``config.polishes``: "auto" without a budget is the old default False).
LATER_OPTIONS = {"weight_decay": 0.0, "max_split_features": None, "time_budget": None, "batch_rows": None,
                 "class_leaf": "constant"}


def _fingerprinted(config: GETConfig, n_rows: int) -> dict:
    fields = asdict(config) | {"batch_rows": soft_rows(config.batch_rows, n_rows), "polish": polishes(config, n_rows)}
    return {k: v for k, v in fields.items() if k not in LATER_OPTIONS or v != LATER_OPTIONS[k]}


def fit_fingerprint(X: np.ndarray, y: np.ndarray, config: GETConfig, feature_names: list[str] | None,
                    warm_start: ObliqueTree | None = None, sample_weight: np.ndarray | None = None,
                    classes: list | None = None) -> str:
    """A hex digest that changes whenever the fit of ``config`` on (X, y) (from ``warm_start``, with
    ``sample_weight``, a classifier's ``classes``) could change; without the last two, the key it always was."""
    digest = hashlib.sha256()
    for array in (X, y):
        array = np.ascontiguousarray(array, dtype=np.float64)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    settings = {"config": _fingerprinted(config, len(y)), "engine": ENGINE_VERSION, "names": feature_names,
                "device": resolve_device(config.device).type, "threads": torch.get_num_threads()}
    digest.update(json.dumps(settings, sort_keys=True, default=repr).encode())
    if warm_start is not None:
        digest.update(model_json(warm_start).encode())
    if sample_weight is not None:
        digest.update(b"sample_weight" + np.ascontiguousarray(sample_weight, dtype=np.float64).tobytes())
    if classes is not None:
        digest.update(("classes" + json.dumps([repr(c) for c in classes])).encode())
    return digest.hexdigest()


class SearchCheckpoint:
    """Fitted trees of depth searches, one JSON file per fit in ``directory`` (created on the first save)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def _path(self, fingerprint: str) -> Path:
        return self.directory / f"{fingerprint}.json"

    def load(self, fingerprint: str) -> ObliqueTree | None:
        """The tree saved under ``fingerprint``, or None (never saved, or unreadable: then it is simply refitted)."""
        try:
            return load_model_json(self._path(fingerprint).read_bytes())
        except (OSError, ValueError):
            return None

    def save(self, fingerprint: str, tree: ObliqueTree) -> None:
        """Store ``tree`` atomically (a kill mid-write leaves no torn file). A failed write only warns: losing a
        checkpoint costs a refit, stopping an hours-long search for it would cost the search."""
        path = self._path(fingerprint)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            partial.write_text(model_json(tree), encoding="utf-8")
            os.replace(partial, path)
        except (OSError, ValueError) as exc:
            warnings.warn(f"Could not store a depth-search checkpoint in {self.directory}: {exc}", RuntimeWarning,
                          stacklevel=2)
