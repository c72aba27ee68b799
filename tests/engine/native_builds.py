"""The soft-pass kernel as a user's older CPU builds it, for tests.

The kernel is compiled with -march=native on the user's machine, so a CPU without AVX-512 (or AVX2) compiles the
portable loops instead of the vector paths this machine takes; tests check those loops through this build.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest

#: the flags that take away AVX-512, and AVX-512 and AVX2
OLDER_CPUS = [["-mno-avx512f"], ["-mno-avx512f", "-mno-avx2"]]


@contextmanager
def older_cpu_kernel(without: list[str]) -> Iterator[None]:
    """``native.load()`` builds and loads the kernel with ``without`` added to its flags (skips the test with no
    compiler); the next ``load()`` after the block builds this machine's kernel again (cached on disk)."""
    from get_core.engine import native

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "FLAGS", [*native.FLAGS, *without])
        native.load.cache_clear()
        try:
            if native.load() is None:
                pytest.skip("no C++ compiler: training uses the torch implementation")
            yield
        finally:
            native.load.cache_clear()
