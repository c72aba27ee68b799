"""Compile a small C++ source with the system's g++ on first use and cache the shared library (torch-free).

One home for the build rule of the project's native code (the trainer's soft-pass kernel and the model's routing):
the library goes to ``$GET_EXPLORER_CACHE`` or ``~/.cache/get_explorer/``, named by a digest of the source, the
flags and the CPU (``-march=native`` code must not run on another CPU that reads the same home directory), written
under a temporary name and moved into place atomically so that concurrent processes never load a half-written file.
``GET_EXPLORER_NATIVE=0`` turns native code off (every caller has a fallback).
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence


def enabled() -> bool:
    return os.environ.get("GET_EXPLORER_NATIVE", "1") != "0"


def cache_dir() -> Path:
    root = os.environ.get("GET_EXPLORER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "get_explorer")
    return Path(root)


def cpu_key() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        flags = platform.processor()
    return flags


def build(source: Path, flags: Sequence[str], link_options: Sequence[Sequence[str]] = ((),)) -> Path | None:
    """The cached library built from ``source`` (compiled with ``flags``, linked with the first of
    ``link_options`` that works), building it if needed; None when native code is off or the build fails."""
    if not enabled():
        return None
    key = hashlib.sha256(source.read_bytes() + " ".join(flags).encode() + cpu_key().encode()).hexdigest()[:16]
    target = cache_dir() / f"{source.stem}-{key}.so"
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            built, obj = Path(tmp) / target.name, Path(tmp) / f"{source.stem}.o"
            # Linking with -ffast-math would add crtfastmath.o, which turns on flush-to-zero for the whole process
            # when the library loads (numpy would then read 1e-320 as 0): link without the compile flags.
            compile_cmd = ["g++", *flags, "-c", "-o", str(obj), str(source)]
            if subprocess.run(compile_cmd, capture_output=True, timeout=120).returncode != 0:
                return None
            for libs in link_options:
                link_cmd = ["g++", "-shared", "-pthread", "-o", str(built), str(obj), *libs]
                if subprocess.run(link_cmd, capture_output=True, timeout=120).returncode == 0:
                    os.replace(built, target)
                    return target
    except (OSError, subprocess.TimeoutExpired):
        return None
    return None
