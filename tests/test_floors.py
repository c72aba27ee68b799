"""Imports only go down the floors of docs/DESIGN.md, lazy ones included, and neither get_core nor the pages import
in a circle; the settings, the model and whatever the pages import from get_core load without torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: get_core's floors, top to bottom: a module imports modules of its own floor (never in a circle) or lower ones.
FLOORS = (
    ("get_core", "get_core.serve"),  # the package itself: re-exports, and loads the estimators when asked for
    # them; the app's launcher (sign-in settings checked before Streamlit starts)
    ("get_core.runs",),  # the run store, worker and supervisor
    ("get_core.estimator", "get_core.skl2onnx_converter"),  # the scikit-learn estimators, their skl2onnx converters
    ("get_core.engine",),  # training: the only wing that imports torch
    # what is shown and written of a fitted model, and the what-if questions asked of it
    ("get_core.export", "get_core.views", "get_core.baselines", "get_core.model.counterfactual",
     "get_core.model.counterfactual_programs"),
    ("get_core.config", "get_core.schedule", "get_core.model.model_file", "get_core.model.codegen"),  # settings;
    # the model file and the generated code, which carry the fitted encoding of user tables
    ("get_core.data",),  # user tables: reading, typing, encoding
    ("get_core.model",),  # the fitted tree itself: plain numpy
    ("get_core.errors", "get_core.metrics", "get_core.budget"),  # the error family, the scores and the time
    # budgets: they import nothing of the project
)
OUTSIDE = ("pages", "bench", "app", "tests", "streamlit")  # get_core imports none of these


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports anywhere in its body (functions too); ``from a import b`` counts as a.b when
    that is a module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import"
            names.update(f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                         for a in node.names)
    return names


def floor(module: str) -> int:
    for level, group in enumerate(FLOORS):
        if any(module == prefix or (prefix != "get_core" and module.startswith(prefix + ".")) for prefix in group):
            return level
    pytest.fail(f"{module} is on no floor: add it to FLOORS in tests/test_floors.py and to docs/DESIGN.md")


def project_graph(package: str = "get_core") -> dict[str, set[str]]:
    """Each module of ``package`` -> the modules of ``package`` it imports."""
    return {module_name(p): {m for m in imported(p) if m.split(".")[0] == package}
            for p in sorted((ROOT / package).rglob("*.py"))}


def assert_no_circle(graph: dict[str, set[str]]) -> None:
    done = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path[path.index(module):], module))
        if module not in done:
            for target in graph.get(module, ()):
                visit(target, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())


def test_no_module_of_get_core_imports_one_on_a_floor_above_it():
    upward = [f"{a} -> {b}" for a, targets in project_graph().items() for b in targets if floor(b) < floor(a)]
    assert not upward


def test_the_imports_of_get_core_have_no_circle():
    assert_no_circle(project_graph())


def test_the_pages_import_each_other_without_a_circle():
    graph = project_graph("pages")
    assert "pages.common" in graph["pages.run_panel"]  # the graph sees the pages' imports of each other
    assert_no_circle(graph)


def test_nothing_outside_the_engine_imports_torch():
    assert not [p for p in (ROOT / "get_core").rglob("*.py") if "torch" in {m.split(".")[0] for m in imported(p)}
                and "engine" not in p.relative_to(ROOT / "get_core").parts]


def test_get_core_imports_no_page_bench_script_or_streamlit():
    found = [f"{module_name(p)} -> {m}" for p in (ROOT / "get_core").rglob("*.py") for m in imported(p)
             if m.split(".")[0] in OUTSIDE]
    assert not found


def test_the_settings_the_model_and_what_the_pages_import_from_get_core_load_without_torch():
    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    used = sorted({m for p in pages for m in imported(p) if m.split(".")[0] == "get_core"})
    assert "get_core.config" in used
    code = (f"import sys\nfor name in {['get_core.config', 'get_core.model.tree', *used]!r}:\n    __import__(name)\n"
            "assert 'torch' not in sys.modules, 'torch was loaded'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


#: The worker side of runs/: it trains (through the estimators) and imports what it needs at the top; pages never
#: import it, directly or through another module (issue 46).
WORKER_SIDE = ("get_core.runs.training", "get_core.runs.search", "get_core.runs.worker", "get_core.runs.remote_task",
               "get_core.runs.measure")
#: Outside the engine, the modules that may import it: the estimators (the one door into training) and the worker
#: side of runs/, which reaches the device for its memory limit.
ENGINE_DOORS = ("get_core.estimator", "get_core.runs.worker")


def reached(graph: dict[str, set[str]], starts: set[str]) -> set[str]:
    """Every module of the graph that ``starts`` import, directly or through others, lazy imports included."""
    seen, todo = set(), list(starts)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def test_no_page_reaches_the_worker_side_of_runs_the_estimators_or_the_engine():
    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    used = {m for p in pages for m in imported(p) if m.split(".")[0] == "get_core"}
    assert "get_core.runs.spec" in used  # the graph sees what pages take from runs/
    found = reached(project_graph(), used)
    assert not [m for m in found if m in WORKER_SIDE or m == "get_core.estimator" or m.startswith("get_core.engine")]


def test_only_the_estimators_and_the_worker_reach_into_the_engine():
    graph = project_graph()
    importers = {a for a, targets in graph.items() for b in targets
                 if b.startswith("get_core.engine") and not a.startswith("get_core.engine")}
    assert importers <= set(ENGINE_DOORS), importers
    trainers = {a for a, targets in graph.items() if a in WORKER_SIDE for b in targets if b == "get_core.estimator"}
    assert {"get_core.runs.training", "get_core.runs.search", "get_core.runs.measure"} <= trainers


def test_every_share_of_a_budget_is_written_once_in_budget_py():
    """Budget shares live in get_core/budget.py; the other *_SHARE names are no shares of a budget (the routing's
    dense share, the squeezed features' share of [0, 1], the CPU share under which a fit counts as starved, and the
    share of the machine's memory a fit may plan)."""
    not_budget = {"DENSE_SHARE", "SQUEEZED_SHARE", "STARVED_SHARE", "MEMORY_SHARE"}
    written = {}
    for path in (ROOT / "get_core").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id.endswith("_SHARE"):
                    written.setdefault(target.id, []).append(module_name(path))
    budget = {name for name, where in written.items() if where == ["get_core.budget"]}
    assert {"SEARCH_SHARE", "POLISH_SHARE", "REFIT_SHARE", "CART_SHARE", "PROBE_SHARE", "MAX_FINISH_SHARE",
            "COUNTERPART_SHARE"} <= budget
    assert set(written) - budget == not_budget, {n: w for n, w in written.items() if n not in budget}
