"""One error family: every exception class get_core defines derives from ``GETExplorerError``, so the pages catch
that one class, and a page shows such an error's own sentence."""

from __future__ import annotations

import ast
import builtins
import importlib

from streamlit.testing.v1 import AppTest

from get_core.errors import GETExplorerError
from tests.test_floors import ROOT, module_name

BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}


def exception_classes() -> set[tuple[str, str]]:
    """(module, class) of every exception class in get_core's source: a class with a built-in exception base, or
    one of these classes as base. Read from the source, so the engine's modules need not load torch to be checked."""
    bases = {}
    for path in sorted((ROOT / "get_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases[(module_name(path), node.name)] = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
    found: set[tuple[str, str]] = set()
    while True:
        names = BUILTIN_EXCEPTIONS | {name for _, name in found}
        more = {key for key, of in bases.items() if of & names} - found
        if not more:
            return found
        found |= more


def test_every_error_get_core_defines_derives_from_the_one_base():
    classes = exception_classes()
    assert {"DataError", "ModelFormatError", "StoreError", "GraphvizError", "ColumnMismatch", "ConfinedError",
            "ChildFailed", "ResultsUnavailable"} <= {name for _, name in classes}  # the search finds them
    outside = [f"{module}.{name}" for module, name in sorted(classes)
               if not issubclass(getattr(importlib.import_module(module), name), GETExplorerError)]
    assert not outside, "derive these from get_core.errors.GETExplorerError"


def test_the_errors_keep_the_builtin_base_their_callers_catch_and_their_sentence():
    from get_core.data.columns import DataError
    from get_core.runs.records import RunNotFound
    from get_core.views.diagram import GraphvizError

    assert issubclass(DataError, ValueError) and issubclass(GraphvizError, RuntimeError)
    assert str(RunNotFound("Run 7 does not exist.")) == "Run 7 does not exist."  # not KeyError's quoted form
    assert str(DataError("Column 'x' is empty: drop it.", column="x")) == "Column 'x' is empty: drop it."


def _page_raising_a_diagram_error() -> None:
    from get_core.views.diagram import GraphvizError
    from pages import common

    def body() -> None:
        raise GraphvizError("Graphviz's 'dot' program was not found. Install Graphviz.")

    common.guarded(body)()


def test_a_page_shows_the_sentence_of_any_error_of_the_family():
    at = AppTest.from_function(_page_raising_a_diagram_error).run(timeout=60)
    assert [e.value for e in at.error] == ["Graphviz's 'dot' program was not found. Install Graphviz."]
