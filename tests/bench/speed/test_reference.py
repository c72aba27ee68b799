"""python -m bench.speed.reference: its options are checked before the authors' virtualenv is built."""

from __future__ import annotations

import pytest

from bench.speed import reference


@pytest.mark.parametrize("argv, message", [
    (["--repeats", "0"], "--repeats must be at least 1"), (["--p", "3"], "--p must be at least 5"),
    (["--depths", "2", "0"], "--depths must be at least 1"), (["--epochs", "10", "40"], "21 <= E1 < E2"),
    (["--epochs", "40", "40"], "21 <= E1 < E2"),
])
def test_reference_timing_options_are_checked_before_the_venv_is_built(monkeypatch, capsys, argv, message):
    monkeypatch.setattr(reference, "ensure_reference_venv", lambda *a: pytest.fail("the reference venv was built"))
    with pytest.raises(SystemExit) as exit_:
        reference.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
