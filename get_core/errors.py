"""The one family of errors a user can meet.

Every error that reaches a person (a table that cannot be used, a damaged model file, a run store that cannot be
opened, a diagram Graphviz cannot draw, a reader stopped at its limits) derives from ``GETExplorerError``, and its
``str()`` is the sentence to show: what is wrong, where (column, row, file) and what to do. So the pages catch this
one class instead of listing types. Each subclass also keeps the built-in base its callers already catch
(``ValueError``, ``RuntimeError``, ``KeyError``); this module imports nothing of the project, so any floor can use it.
"""

from __future__ import annotations


class GETExplorerError(Exception):
    """A problem the user can act on; ``str(error)`` is a sentence fit to show as it is."""
