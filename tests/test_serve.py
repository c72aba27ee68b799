"""The launcher (``make app``): private by default; a non-local address without sign-in does not start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from get_core import serve
from get_core.runs import access

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_non_local_address_without_sign_in_refuses_to_start_and_says_what_to_set(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != access.PASSWORD_ENV}
    env["HOME"] = str(tmp_path)  # no ~/.streamlit/secrets.toml of the user's
    done = subprocess.run([sys.executable, "-m", "get_core.serve", "--host", "0.0.0.0", "--port", str(port)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("Refusing to serve on 0.0.0.0 without sign-in"), done.stderr
    assert access.PASSWORD_ENV in done.stderr and "Traceback" not in done.stderr and done.stdout == ""
    with socket.socket() as probe:  # nothing was started on the port
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_the_check_passes_with_a_password_or_a_local_address(monkeypatch, tmp_path):
    monkeypatch.setattr(serve, "secrets_auth", lambda: None)
    assert serve.check("0.0.0.0", {access.PASSWORD_ENV: "class password"}) is None
    assert serve.check("127.0.0.1", {}) is None
    assert serve.check("0.0.0.0", {}).startswith("Refusing")


def test_secrets_auth_reads_the_first_auth_table(tmp_path):
    empty, broken, good = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "c.toml"
    empty.write_text("[other]\nx = 1\n")
    broken.write_text("[auth\n")
    good.write_text('[auth]\nredirect_uri = "https://x/oauth2callback"\n')
    assert serve.secrets_auth([tmp_path / "missing.toml", empty, broken, good]) == {
        "redirect_uri": "https://x/oauth2callback"}
    assert serve.secrets_auth([empty]) is None


def test_make_app_and_a_plain_streamlit_run_listen_on_this_machine_only():
    makefile = (ROOT / "Makefile").read_text()
    assert "HOST ?= 127.0.0.1" in makefile and "-m get_core.serve --host $(HOST)" in makefile
    assert 'address = "127.0.0.1"' in (ROOT / ".streamlit" / "config.toml").read_text()
