"""Start the app: ``python -m get_core.serve [--host HOST] [--port PORT]`` (what ``make app`` runs).

Private by default: without ``--host`` the app listens on 127.0.0.1, this machine only. Another address serves
everyone who can reach it, so it needs sign-in: a classroom password (``GET_EXPLORER_PASSWORD``) or OpenID Connect
in ``.streamlit/secrets.toml``. Without either this refuses to start, before Streamlit opens a port, and says what
to set (``access.serving_problem``). A shared server also gets per-user queue limits unless they are set
(``access.SHARED_DEFAULTS``). The app checks the same rule again (``pages/signin.py``), so ``streamlit run app.py
--server.address=0.0.0.0`` without sign-in shows only that sentence.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tomllib
from pathlib import Path
from typing import Mapping, Sequence

from get_core.runs import access

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HOST = "127.0.0.1"


def secrets_auth(paths: Sequence[Path] | None = None) -> Mapping[str, object] | None:
    """The ``[auth]`` table Streamlit would read from its secrets files (the project's, then the user's), or None."""
    for path in paths if paths is not None else (ROOT / ".streamlit" / "secrets.toml",
                                                  Path.home() / ".streamlit" / "secrets.toml"):
        try:
            auth = tomllib.loads(path.read_text(encoding="utf-8")).get("auth")
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if auth:
            return auth
    return None


def check(host: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the app must not start on ``host`` (a sentence), or None."""
    environ = os.environ if environ is None else environ
    oidc = access.oidc_problem(secrets_auth(), importlib.util.find_spec("authlib") is not None)
    return access.serving_problem(host, environ.get(access.PASSWORD_ENV) or None, oidc)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m get_core.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default 127.0.0.1: this "
                        "machine only; 0.0.0.0 serves the network and needs sign-in)")
    parser.add_argument("--port", type=int, default=8501)
    args, streamlit_args = parser.parse_known_args(argv)
    problem = check(args.host)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    env = dict(os.environ)
    if not access.is_local_address(args.host):
        for name, value in access.SHARED_DEFAULTS.items():
            env.setdefault(name, value)
    os.chdir(ROOT)
    os.execve(sys.executable, [sys.executable, "-m", "streamlit", "run", "app.py", f"--server.address={args.host}",
                               f"--server.port={args.port}", *streamlit_args], env)  # this process becomes it


if __name__ == "__main__":
    sys.exit(main())
