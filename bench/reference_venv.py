"""The authors' GET implementation (PyPI `get-oblique==0.1.1`) in a virtualenv of its own, and scripts run in it.

The package pins old numpy/sklearn and sets `torch.use_deterministic_algorithms(True)` globally on import, so it must
not share our process: ``ensure_reference_venv`` builds the virtualenv once (with the local CPU torch wheel) and
``run_script`` runs a script there with parameters as JSON, torch limited to the given threads, inside a temporary
directory. Used by ``bench.speed.reference`` (timing) and ``bench.paper.reference_r2`` (training R2).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import numpy as np

from bench.common import REPO_ROOT

PACKAGE = "get-oblique"
PACKAGE_VERSION = "0.1.1"
# torch is pinned: 2.13.0 is a local CPU wheel on our machines; a plain "torch" pulls a multi-GB CUDA build.
DEPENDENCIES = ("h5py", "numpy", "pandas", "scikit-learn", "torch==2.13.0")
DEFAULT_VENV = Path("bench/.reference-venv")
MIN_EPOCHS = 21  # the package's scheduler asserts warmup (10) < T_0 = epochNum - 10

_PROBE = (
    "import GET, h5py, numpy, pandas, sklearn, torch, importlib.metadata as m;"
    "assert torch.__version__.split('+')[0] == '2.13.0', torch.__version__;"
    f"print(m.version('{PACKAGE}'))"
)


def _resolve(path: Path) -> Path:
    """Relative paths are taken from the repository root, so the venv is shared whatever the cwd."""
    return path if path.is_absolute() else REPO_ROOT / path


def _venv_python(path: Path) -> Path:
    return path / "bin" / "python"


def _venv_works(path: Path) -> bool:
    python = _venv_python(path)
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True)
    return probe.returncode == 0 and probe.stdout.strip() == PACKAGE_VERSION


def _host_pip_config() -> dict[str, str]:
    """The pip settings from config files that this interpreter's pip sees (PIP_* variables are inherited anyway)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    settings = {}
    for line in out.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith(":env:"):
            settings[key] = value.strip().strip("'\"")
    return settings


def _write_site_pip_config(path: Path) -> None:
    """Copy the host's pip settings (local wheel dir, local indexes, constraints) into the venv's own pip.conf,
    so the venv's pip finds the local CPU torch wheel even where the user's config or PIP_* variables are absent."""
    sections: dict[str, list[str]] = {}
    for key, value in _host_pip_config().items():
        section, _, option = key.partition(".")
        sections.setdefault(section, []).append(f"{option} = {value}")
    (path / "pip.conf").write_text("".join(f"[{s}]\n" + "\n".join(o) + "\n" for s, o in sections.items()))


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True)


def _fail(what: str, result: subprocess.CompletedProcess[str]) -> RuntimeError:
    tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
    return RuntimeError(f"reference venv: {what} failed (exit {result.returncode}):\n{tail}")


def _check_torch_is_local(python: Path) -> None:
    """Refuse to go on if pip would fetch torch from an index (a multi-GB CUDA build) rather than a local wheel."""
    result = _pip(python, "install", "--dry-run", "--quiet", "--report", "-", "torch==2.13.0")
    if result.returncode != 0:
        raise _fail("resolving torch==2.13.0", result)
    report = json.loads(result.stdout)
    urls = [i["download_info"]["url"] for i in report["install"] if i["metadata"]["name"].lower() == "torch"]
    if any(not url.startswith("file:") for url in urls):
        raise RuntimeError(f"reference venv: torch==2.13.0 would be downloaded from {urls[0]}; pip must see a "
                           "local CPU wheel (check `pip config list` for find-links)")


def ensure_reference_venv(path: Path = DEFAULT_VENV) -> Path:
    """Create (once) a virtualenv with get-oblique 0.1.1 and its runtime dependencies; return its python.
    A relative `path` is taken from the repository root. Safe to call from concurrent processes."""
    path = _resolve(path)
    lock_name = f"get-reference-venv-{hashlib.sha1(str(path).encode()).hexdigest()[:12]}.lock"
    with open(Path(tempfile.gettempdir()) / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _venv_works(path):
            _build_venv(path)
    return _venv_python(path)


def _build_venv(path: Path) -> None:
    if path.exists() and any(path.iterdir()) and not (path / "pyvenv.cfg").exists():
        raise RuntimeError(f"reference venv: {path} exists and is not a virtualenv; refusing to clear it")
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    _write_site_pip_config(path)
    python = _venv_python(path)
    _check_torch_is_local(python)
    # Dependencies first, then the package without its exact pins (numpy==1.26.4, scikit_learn==1.5.0, ...).
    for args in (DEPENDENCIES, ("--no-deps", f"{PACKAGE}=={PACKAGE_VERSION}")):
        result = _pip(python, "install", "--quiet", *args)
        if result.returncode != 0:
            raise _fail(f"pip install {' '.join(args)}", result)
    if not _venv_works(path):
        probe = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True)
        raise _fail("importing GET after installation", probe)


def run_script(python: Path, script: str, params: dict, timeout: float, what: str,
               arrays: dict[str, np.ndarray] | None = None) -> dict:
    """Run ``script`` in the reference venv with ``params`` as JSON in argv[1] (and ``arrays`` saved to an .npz
    whose name is argv[2]), torch/BLAS limited to ``params["threads"]``, inside a temporary directory; returns the
    JSON dict the script prints on its last line."""
    env = dict(os.environ, OMP_NUM_THREADS=str(params["threads"]), MKL_NUM_THREADS=str(params["threads"]))
    with tempfile.TemporaryDirectory(prefix="get-reference-") as tmp:
        argv = [str(python), "-c", script, json.dumps(params)]
        if arrays is not None:
            np.savez(Path(tmp) / "data.npz", **arrays)
            argv.append("data.npz")
        result = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise _fail(what, result)
    return json.loads(result.stdout.strip().splitlines()[-1])
