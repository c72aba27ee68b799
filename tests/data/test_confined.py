"""The confined child (get_core/data/confined.py) runs its function without running the parent's main script."""

from __future__ import annotations

import sys
import types

from get_core.data.confined import run_confined


def test_a_confined_call_never_runs_the_main_script_again(tmp_path, monkeypatch):
    """Issue 48: under Streamlit the main script is app.py; the forkserver ran it again, and its st calls logged ten
    "missing ScriptRunContext" lines at the first upload."""
    marker = tmp_path / "ran"
    script = tmp_path / "app.py"
    script.write_text(f"open({str(marker)!r}, 'a').write('ran')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert run_confined(len, [1, 2, 3], memory_mb=200, seconds=60, result_mb=1) == 3
    assert run_confined(sorted, [3, 1], memory_mb=200, seconds=60, result_mb=1) == [1, 3]
    assert not marker.exists()
    assert sys.modules["__main__"] is main  # put back after each start
