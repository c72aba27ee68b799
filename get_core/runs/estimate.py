"""Run-time estimates calibrated on this machine.

A run's wall time is modelled as ``startup + n_stages * (per_stage * row_scale + n_epochs * per_epoch * epoch_scale)
+ baselines`` (doubled training when polish is on, a rough guess until polish is measured too; a run with a
``time_budget`` trains for that budget, polish included):
  * ``per_epoch`` and ``per_stage`` come from timing the real trainer twice (``SHORT_EPOCHS`` and ``LONG_EPOCHS``
    epochs, one stage) on random data of the run's depth, leaf type, starts and width, with up to
    ``MEASURE_ROWS`` rows (after a warm-up fit; the faster of two tries each, since a shared machine only ever
    adds time); ``row_scale`` extrapolates linearly to more rows, ``epoch_scale`` to the rows a soft epoch uses
    (``config.soft_rows``: a sample of a large table);
  * ``startup`` (interpreter, torch and project imports) and ``baselines`` (``get_core.baselines.fit_baselines`` at
    their usual settings: depth-tuned CART, a 100-tree forest, HistGradientBoosting; intercept and slope in rows from
    two fits) are measured once per machine; the baselines' GET fit with the other kind of splits
    (``training.fit_all_baselines``) is counted as one more training, or ``budget.COUNTERPART_SHARE`` of a budget.
The measurement runs in a background subprocess (``start_measurement``, spawned through ``launch``: ``runs.measure``,
the worker side, which fits through the estimators) with the
workers' thread count, so the app never waits on it nor imports torch, and the numbers match what a worker sees; it
takes a few seconds once per shape (about ten the first time, with the machine constants); a marker file beside the
cache, touched by the measuring process every ``MARKER_BEAT_S``, keeps it to one at a time however long it takes.
Results are cached in a JSON file
(``calibration.json`` beside the run database) keyed by shape and invalidated when the machine's fingerprint (cores,
threads, torch version) changes. Measuring while other runs are training overstates the time; the caller can say so.
A search run (depth or features per split chosen for the user) is bounded by ``Estimate.searching``: its most fits,
each costed as one fit of the deepest depth (``search_estimate``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from get_core.budget import COUNTERPART_SHARE, search_seconds
from get_core.config import soft_rows
from get_core.runs import launch
from get_core.runs.spec import has_counterpart, n_search_fits, search_spec
from get_core.runs.store import default_db_path

MEASURE_ROWS = 10_000  # covers the usual table exactly; larger ones extrapolate linearly
BASELINE_ROWS = 4000
SHORT_EPOCHS = 20  # every epoch of so short a stage is a hard-loss checkpoint, as are 20 of any longer one
MIN_EXTRA_EPOCHS, MAX_EXTRA_EPOCHS = 20, 400
CACHE_VERSION = 2  # 2: each shape's budget overrun, the baselines uncut and their width
MEASURE_TIMEOUT_S = 120.0  # also the age at which an untouched marker counts as left by a killed measurement
MEASURE_LIMIT_S = 1800.0  # a measurement still running after this long is taken for hung: its marker goes stale
MARKER_BEAT_S = 2.0  # the measuring process touches its marker this often, so a live one never looks abandoned


@dataclass(frozen=True)
class Estimate:
    seconds: float  # launch to FINISHED, if the run starts at once
    startup: float
    training: float
    baselines: float
    n_fits: int = 1  # a search's most fits (``runs.search``): ``training`` is then an upper bound
    overrun: float = 0.0  # the seconds one budgeted fit of this shape runs past its budget (``runs.measure``)

    @property
    def training_share(self) -> float:
        """The part of the run after start-up spent training rather than fitting the baselines: the worker's
        progress bar gives training this share, so it does not read 100% while the baselines still run."""
        total = self.training + self.baselines
        return self.training / total if total > 0 else 1.0

    def describe(self) -> str:
        if self.n_fits > 1:
            return (f"at most {format_seconds(self.seconds)} (start-up {format_seconds(self.startup)}, a search of "
                    f"up to {self.n_fits} fits {format_seconds(self.training)}, baselines "
                    f"{format_seconds(self.baselines)}); it usually stops sooner, once deeper trees stop helping")
        return (f"about {format_seconds(self.seconds)} (start-up {format_seconds(self.startup)}, training "
                f"{format_seconds(self.training)}, baselines {format_seconds(self.baselines)})")

    def searching(self, n_fits: int, sparse: bool, n_alphas: int) -> "Estimate":
        """An upper bound for a search of at most ``n_fits`` fits, when this estimate is that of one fit of its
        deepest depth on all rows: no search fit costs more (shallower, on fewer rows), but a fit with at most k
        features per split (``sparse``) runs one stage more (``get_core.engine.sparse``)."""
        training = self.training * n_fits * ((n_alphas + 1) / n_alphas if sparse else 1.0)
        return Estimate(self.startup + training + self.baselines, self.startup, training, self.baselines, n_fits)


def format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def calibration_path(db_path: str | os.PathLike, is_file: bool = True) -> Path:
    """The calibration cache beside the run database (beside the default one for an in-memory store)."""
    return Path(db_path if is_file else default_db_path()).parent / "calibration.json"


def shape_key(depth: int, leaf: str, n_starts: int, n_features: int, n_rows: int) -> str:
    return f"d{depth}-{leaf}-s{n_starts}-p{n_features}-n{min(n_rows, MEASURE_ROWS)}"


def cached_estimate(n_rows: int, n_features: int, config: Mapping[str, Any], cache_path: str | os.PathLike
                    ) -> Estimate | None:
    """The estimate from the cache alone, or None when this shape has not been measured yet."""
    cache = load_cache(Path(cache_path))
    entry = cache["shapes"].get(_key(n_rows, n_features, config))
    if entry is None or "machine" not in cache:
        return None
    return _combine(entry, cache["machine"], n_rows, n_features, config)


def search_estimate(n_rows: int, n_features: int, params: Mapping[str, Any], cache_path: str | os.PathLike
                    ) -> Estimate | None:
    """The estimate of a run's parameters, bounded over its search when it has one (``config["depth"]`` is then the
    deepest depth tried); None when the shape has not been measured yet."""
    config = params["config"]
    found = cached_estimate(n_rows, n_features, config, cache_path)
    search = search_spec(params)
    if found is None or search is None:
        return found
    if config.get("time_budget") is not None:  # GETRegressorCV shares its budget over the search (budget.split_budget)
        n_fits = n_search_fits(search, n_features)  # each fit, the refit too, overruns its share by what no budget
        training = search_seconds(float(config["time_budget"]), n_fits - 1) + n_fits * found.overrun  # paces
        return replace(found, training=training, seconds=found.seconds - found.training + training, n_fits=n_fits)
    sparse = bool(search.get("split_features") or config.get("max_split_features"))
    return found.searching(n_search_fits(search, n_features), sparse, int(config["n_alphas"]))


def start_measurement(n_rows: int, n_features: int, config: Mapping[str, Any], cache_path: str | os.PathLike
                      ) -> bool:
    """Measure this shape in a detached subprocess that writes the cache; returns False while another measurement
    is under way (one at a time, so a user trying several settings does not flood the machine): call again later."""
    path = Path(cache_path)
    marker = path.with_name(f"{path.stem}.measuring")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if time.time() - marker.stat().st_mtime < MEASURE_TIMEOUT_S:
            return False
        marker.unlink()  # left by a measurement that was killed
    except OSError:
        pass
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # exclusive: one starter wins
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(_key(n_rows, n_features, config))
    args = ["--cache", str(path.resolve()), "--marker", str(marker.resolve()), "--t0", repr(time.time()),
            str(config["depth"]), str(config["leaf"]), str(config["n_starts"]), str(n_features),
            str(min(n_rows, MEASURE_ROWS))]
    launch.spawn_module("get_core.runs.measure", args, path.with_name("calibration.log"))
    return True


def save_measurement(cache_path: str | os.PathLike, key: str, shape: Mapping[str, float],
                     machine: Mapping[str, float] | None = None) -> None:
    """Record one shape's timings (and the machine constants) in the cache; ``key`` comes from ``shape_key``."""
    path = Path(cache_path)
    cache = load_cache(path)  # re-read: another measurement may have written meanwhile
    if machine is not None:
        cache["machine"] = dict(machine)
    cache["shapes"][key] = dict(shape)
    _save(path, cache)


def _key(n_rows: int, n_features: int, config: Mapping[str, Any]) -> str:
    return shape_key(int(config["depth"]), str(config["leaf"]), int(config["n_starts"]), n_features, n_rows)


def _combine(shape: Mapping[str, float], machine: Mapping[str, float], n_rows: int, n_features: int,
             config: Mapping[str, Any]) -> Estimate:
    scale = max(1.0, n_rows / MEASURE_ROWS)
    stages = int(config["n_alphas"]) + (1 if config.get("max_split_features") else 0)  # sparse: a masked stage more
    sampled = soft_rows(config.get("batch_rows"), n_rows)  # a soft epoch on a sample costs the sample's rows
    epoch_scale = scale if sampled is None else max(1.0, sampled / MEASURE_ROWS)
    training = stages * (shape["per_stage"] * scale + int(config["n_epochs"]) * shape["per_epoch"] * epoch_scale)
    if config.get("polish") is True:  # "auto" polishes only with a time budget, which sets the time below
        training *= 2
    budget = config.get("time_budget")
    overrun = shape.get("overrun", 0.0)  # what no budget paces (probes, CART start, leaf refits), measured
    if budget is not None:  # its GET fit races to end near its budget, polish included (engine.race)
        training = float(budget) + overrun
    # the baselines at their usual settings, never cut: measured at one width, their trees' cost grows with it
    width = max(1.0, n_features / machine.get("baselines_features", n_features))
    baselines = (machine["baselines"] + machine["baselines_per_row"] * n_rows) * width
    if has_counterpart(config.get("max_split_features"), n_features):
        # the same GET fit with the other kind of splits (training.fit_all_baselines)
        baselines += training if budget is None else COUNTERPART_SHARE * float(budget) + overrun
    return Estimate(machine["startup"] + training + baselines, machine["startup"], training, baselines,
                    overrun=overrun)


def _fingerprint() -> dict[str, Any]:
    import importlib.metadata

    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "?"
    return {"version": CACHE_VERSION, "cores": launch.available_cores(), "threads": launch.threads_per_worker(),
            "torch": torch_version}


def load_cache(path: Path) -> dict[str, Any]:
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    if not isinstance(cache, dict) or cache.get("fingerprint") != _fingerprint():
        cache = {"fingerprint": _fingerprint(), "shapes": {}}
    cache.setdefault("shapes", {})
    return cache


def _save(path: Path, cache: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(cache, indent=1, sort_keys=True))
    partial.replace(path)  # atomic: readers never see half a file
