"""Run a function in a child process under a memory limit and a time limit: the last line of defence for readers.

A reader's own checks refuse every hostile file we know of before it expands; this catches the ones we do not know
of, so that no upload can take the server's memory or hold its CPU. The child is forked from a forkserver that has
already imported the heavy modules (started once, about 1.5 s; each call then costs tens of milliseconds, not the
seconds a fresh interpreter would). Its address space is limited (``RLIMIT_AS``) to what it holds after the fork
plus ``memory_mb``, its CPU time to ``seconds`` (``RLIMIT_CPU``), and the parent stops waiting after ``seconds`` of
wall time. The result comes back pickled; the parent accepts at most ``result_mb`` of it. That pickle is written by
our own code in the child from the objects the function returned, never taken from the upload.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import signal
import sys
import types
from multiprocessing.connection import Connection
from typing import Any, Callable

from get_core.errors import GETExplorerError

PRELOAD = ["get_core.data.reading", "pyarrow.parquet", "openpyxl"]
#: What multiprocessing sees as the main module while it starts the forkserver or a child (``_started``).
_BARE_MAIN = types.ModuleType("__main__")


class ConfinedError(GETExplorerError):
    """The child could not give a result within its limits; ``limit`` is the one it reached."""

    def __init__(self, limit: str, amount: float) -> None:
        super().__init__(f"{limit} limit reached ({amount:g})")
        self.limit = limit  # "memory" (MB), "time" (s), "result" (MB of the pickled result), "crash" (exit code)
        self.amount = amount


class ChildFailed(GETExplorerError, RuntimeError):
    """The function raised an exception that ``returns`` does not list: a bug, reported with the child's text."""


_context: Any = None


def _forkserver() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _address_space() -> int:
    """Bytes of virtual memory this process maps now (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit(kind: int, value: int) -> None:
    hard = resource.getrlimit(kind)[1]
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def limit_address_space(extra_bytes: int) -> None:
    """Let this process map at most ``extra_bytes`` more than it maps now (``RLIMIT_AS``): past it an allocation
    fails (MemoryError, torch's "can't allocate") in this process instead of the kernel's out-of-memory killer
    picking one, perhaps another."""
    _limit(resource.RLIMIT_AS, _address_space() + extra_bytes)


def _child(send: Connection, function: Callable, args: tuple, kwargs: dict, expected: tuple[type, ...],
           memory_mb: int, seconds: float, result_mb: int) -> None:
    limit_address_space(memory_mb << 20)
    _limit(resource.RLIMIT_CPU, int(seconds) + 1)
    try:
        reply = ("ok", function(*args, **kwargs))
    except MemoryError:
        reply = ("memory", memory_mb)
    except expected as exc:
        reply = ("raised", exc)
    except Exception as exc:  # a bug: the parent raises ChildFailed with the text
        reply = ("failed", f"{type(exc).__name__}: {exc}")
    try:
        payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        payload = pickle.dumps(("memory", memory_mb))
    if len(payload) > result_mb << 20:
        payload = pickle.dumps(("result", len(payload) / 2**20))
    send.send_bytes(payload)
    send.close()


def _started(child: Any) -> None:
    """Start ``child`` without the main script: multiprocessing runs the parent's ``__main__`` file again in a new
    forkserver or child (as ``__mp_main__``), and under Streamlit that is app.py, whose every ``st`` call then logs
    "missing ScriptRunContext" (ten lines at the first upload, issue 48). The child needs none of it: its function
    is imported by name."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = _BARE_MAIN
    try:
        child.start()
    finally:
        sys.modules["__main__"] = main


def run_confined(function: Callable, *args: Any, expected: tuple[type, ...] = (), memory_mb: int, seconds: float,
                 result_mb: int, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` in a child limited to ``memory_mb`` more than it starts with and ``seconds``.

    Returns its result, re-raises an exception of a type in ``expected`` (it must pickle), raises ``ConfinedError``
    when a limit was reached (a MemoryError, a child killed by the kernel, a result over ``result_mb``) and
    ``ChildFailed`` for any other exception."""
    context = _forkserver()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, function, args, kwargs, expected, memory_mb, seconds,
                                                 result_mb), kwargs={}, daemon=True)
    _started(child)
    send.close()
    try:
        payload = receive.recv_bytes(maxlength=(result_mb << 20) + 4096) if receive.poll(seconds) else None
    except (EOFError, OSError):  # died without a word: killed by the kernel
        payload = b""
    finally:
        receive.close()
        child.kill()
        child.join()
    if not payload:
        if payload is None or child.exitcode == -signal.SIGXCPU:
            raise ConfinedError("time", seconds)
        if child.exitcode in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS):  # a native reader gave up
            raise ConfinedError("crash", child.exitcode)  # (a C++ std::bad_alloc under RLIMIT_AS aborts too)
        raise ConfinedError("memory", memory_mb)
    status, value = pickle.loads(payload)
    if status == "ok":
        return value
    if status == "raised":
        raise value
    if status == "failed":
        raise ChildFailed(value)
    raise ConfinedError(status, value)
