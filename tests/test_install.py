"""get_core as a library (issue 46): ``pip install .`` into a fresh virtualenv, imported from another directory, its C++
sources shipped and compiled from site-packages; pyproject's requirements are the ones ``make`` installs, and the
core ones alone import the package and fit the estimators.

No download: the fresh virtualenv sees this interpreter's site-packages through a .pth file (torch, setuptools), and
pip installs the project alone (``--no-deps --no-build-isolation --no-index``), offline, in seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import get_core

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME = canonicalize_name(PROJECT["name"])


def _requirement_lines(path: Path) -> set[str]:
    """A requirements file's requirements, without comments and ``-r`` includes."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("-")}


def _declared() -> set[str]:
    """pyproject's requirements, core and every extra, less the extras that name the project itself."""
    extras = [r for group in PROJECT["optional-dependencies"].values() for r in group]
    return {r for r in [*PROJECT["dependencies"], *extras] if canonicalize_name(Requirement(r).name) != NAME}


def test_pyproject_requires_exactly_what_make_installs():
    assert _declared() == _requirement_lines(ROOT / "requirements.txt") | _requirement_lines(
        ROOT / "requirements-dev.txt")


def test_the_citation_carries_the_package_version_and_cites_the_paper_on_arxiv():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["version"] == get_core.__version__
    paper, = citation["references"]
    assert paper["title"] == "Can a Single Tree Outperform an Entire Forest?"
    assert paper["url"] == "https://arxiv.org/abs/2411.17003"


def _environment(tmp_path: Path) -> dict[str, str]:
    """This process's environment without PYTHONPATH or the user's pip settings, native code built into an empty
    cache under ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PIP_")}
    return env | {"PIP_CONFIG_FILE": os.devnull, "GET_EXPLORER_CACHE": str(tmp_path / "cache")}


def _core_closure() -> set[str]:
    """The distributions the core requirements pull in, recursively (extras' requirements left out)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in PROJECT["dependencies"]]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.requires(name) or []]
    return seen


#: Runs in a fresh interpreter with argv[1] the modules to hide: they import as if not installed.
_FIT_WITHOUT = """
import importlib.abc, json, sys
hidden = set(json.loads(sys.argv[1]))
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
import numpy as np
from get_core import GETClassifier, GETRegressor
X = np.random.default_rng(0).normal(size=(60, 3))
print(GETRegressor(depth=2, n_starts=1, n_epochs=5, random_state=0).fit(X, 2 * X[:, 0]).predict(X[:2]))
print(GETClassifier(depth=2, n_starts=1, n_epochs=5, random_state=0).fit(X, X[:, 1] > 0).predict(X[:2]))
"""


@pytest.mark.slow
def test_the_core_requirements_alone_import_get_core_and_fit_both_estimators(tmp_path):
    closure = _core_closure() | {"pip", "setuptools"}  # the interpreter's own
    hidden = {module for module, dists in metadata.packages_distributions().items()
              if not {canonicalize_name(d) for d in dists} & closure and module not in sys.stdlib_module_names}
    assert {"streamlit", "plotly", "onnx", "dask"} <= hidden  # the extras' modules are among those hidden
    subprocess.run([sys.executable, "-c", _FIT_WITHOUT, json.dumps(sorted(hidden))], cwd=ROOT, check=True,
                   timeout=300, env=_environment(tmp_path))


#: Runs in the fresh virtualenv, from a directory outside the checkout.
_REPORT = """
import json
from importlib import metadata
import get_core
from get_core.engine import native as kernel
from get_core.model import routing
print(json.dumps({"version": get_core.__version__, "file": get_core.__file__,
                  "distribution": metadata.version("get-explorer"),
                  "kernel": kernel.load() is not None, "router": routing.library() is not None}))
"""


def _package_files(package: Path) -> set[str]:
    return {str(p.relative_to(package)) for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_pip_install_puts_get_core_into_a_fresh_virtualenv_that_imports_it_from_anywhere(tmp_path):
    # A copy of what the build reads, so that pip's build/ and *.egg-info stay out of the checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "get_core", source / "get_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", PROJECT["readme"]):
        shutil.copy(ROOT / name, source / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "project-dependencies.pth").write_text("\n".join(ours) + "\n")
    env = _environment(tmp_path)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-build-isolation", "--no-index", "--disable-pip-version-check", str(source)],
                   cwd=source, env=env, check=True, timeout=300)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = json.loads(subprocess.run([python, "-I", "-c", _REPORT], cwd=elsewhere, env=env, check=True,
                                       capture_output=True, text=True, timeout=300).stdout)
    assert report["version"] == report["distribution"] == get_core.__version__
    installed = site / "get_core"
    assert Path(report["file"]) == installed / "__init__.py"
    assert _package_files(installed) == _package_files(ROOT / "get_core")  # the C++ sources and the diagram's too
    dist_info = site / f"{PROJECT['name'].replace('-', '_')}-{get_core.__version__}.dist-info"
    assert (dist_info / "top_level.txt").read_text().split() == ["get_core"]  # no pages, tests or bench
    if shutil.which("g++"):  # both native libraries compile from site-packages into the empty cache
        assert report["kernel"] and report["router"]
        assert {p.name.split("-")[0] for p in (tmp_path / "cache").glob("*.so")} == {"soft_pass", "route"}
