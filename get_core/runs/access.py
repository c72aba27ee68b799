"""Who may see a run: the rules of workspaces, read-only review links, sign-in modes and the fair queue.

Pure rules, no database and no Streamlit: ``get_core.runs.store`` applies them to its queries, ``get_core.serve``
checks the sign-in settings before the app starts, and the pages (``pages/signin.py``) ask which mode they are in.

* **Workspaces.** Every run, and every table a session keeps, belongs to one owner: ``LOCAL_OWNER`` when the app
  serves only this machine with no sign-in (today's single-user app, and every run of a store from before owners),
  ``"user:<email or subject>"`` for an OpenID Connect sign-in, ``"workspace:<name>"`` for a classroom's shared
  password plus the workspace name each user gives. A store seen through a ``Scope`` reaches its owner's runs only;
  another owner's run reads exactly as a run that does not exist, so an id in a URL tells nothing.
* **Review links.** An unguessable token (``secrets.token_urlsafe``, 192 bits) opens one run read-only until its
  owner revokes it or it expires. The store keeps only the token's SHA-256, so the database does not hold a working
  link; the owner sees a link once, when it is made.
* **Sign-in.** Serving on a loopback address needs none. Any other address needs a classroom password
  (``GET_EXPLORER_PASSWORD``, compared in constant time) or OpenID Connect configured in ``secrets.toml``; without
  either the app refuses to start (``serving_problem``).
* **Fair queue.** ``fair_next`` picks the queued run that starts next: per owner at most a set number running, and
  each owner's runs in turn, so every owner's first run starts before anyone's second.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
from dataclasses import dataclass
from typing import Iterable, Mapping

from get_core.errors import GETExplorerError

LOCAL_OWNER = "local"
PASSWORD_ENV = "GET_EXPLORER_PASSWORD"
USER_MAX_RUNNING_ENV = "GET_EXPLORER_USER_MAX_RUNNING"
USER_MAX_QUEUED_ENV = "GET_EXPLORER_USER_MAX_QUEUED"
#: A shared server's queue limits per owner unless the settings above say otherwise: one run training and three
#: waiting each, so thirty users share two cores in turn. A local server has no per-owner limit (one owner).
SHARED_DEFAULTS = {USER_MAX_RUNNING_ENV: "1", USER_MAX_QUEUED_ENV: "3"}
MIN_PASSWORD = 8
_WORKSPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}")


class AccessDenied(GETExplorerError):
    """A request the session may not make (a review link's write, a wrong password); the message says why."""


class ReviewLinkInvalid(AccessDenied):
    """A review link that is revoked, expired or was never made (one sentence for all three: it tells nothing)."""

    def __init__(self) -> None:
        super().__init__("This review link does not work: it was revoked, it has expired, or it is mistyped. "
                         "Ask the run's owner for a new one.")


@dataclass(frozen=True)
class Scope:
    """What a session may reach: one owner's runs (``owner``), or one run read-only (``review_token``)."""

    owner: str | None = None
    review_token: str | None = None

    def __post_init__(self) -> None:
        if (self.owner is None) == (self.review_token is None):
            raise ValueError("A scope is either an owner's or a review link's.")

    @property
    def read_only(self) -> bool:
        return self.review_token is not None


@dataclass(frozen=True)
class ReviewLink:
    """A review link as its owner sees it after making it: never the token itself, only its id."""

    link_id: str  # the first 12 hex digits of the token's SHA-256
    run_id: int
    created_at: float
    expires_at: float | None
    revoked_at: float | None

    def works(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_digest(token: str) -> str:
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()


def workspace_owner(name: str) -> str:
    """The owner of a classroom workspace; ``AccessDenied`` with the rule when the name does not follow it."""
    name = str(name).strip()
    if not _WORKSPACE.fullmatch(name):
        raise AccessDenied("A workspace name is 1 to 40 letters, digits, spaces, dots, dashes or underscores, "
                           "starting with a letter or digit: type another one.")
    return f"workspace:{name.lower()}"


def user_owner(identity: Mapping[str, object]) -> str:
    """The owner of an OpenID Connect user: the e-mail address the provider vouches for, else its subject id."""
    for key in ("email", "sub"):
        value = str(identity.get(key) or "").strip()
        if value:
            return f"user:{value.lower() if key == 'email' else value}"
    raise AccessDenied("The sign-in provider sent neither an e-mail address nor a subject id: ask its "
                       "administrator to include the 'email' or 'sub' claim.")


def password_matches(given: str, expected: str) -> bool:
    """The classroom password check, in constant time (no timing tells how much of a guess was right)."""
    return hmac.compare_digest(token_digest(given), token_digest(expected))


def is_local_address(host: str | None) -> bool:
    """Whether a server on ``host`` is reachable from this machine only (a loopback address or ``localhost``)."""
    host = (host or "").strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # empty (every interface), a name, 0.0.0.0, ::


def sign_in_mode(host: str | None, password: str | None, oidc: bool) -> str:
    """``"password"`` (a classroom's shared password), ``"oidc"`` (OpenID Connect), ``"local"`` (no sign-in, a
    loopback address) or ``"refused"`` (another address with neither). A password wins over OIDC when both are set."""
    if password:
        return "password"
    if oidc:
        return "oidc"
    return "local" if is_local_address(host) else "refused"


def serving_problem(host: str | None, password: str | None, oidc_problem: str | None) -> str | None:
    """Why the app must not start on ``host`` with these sign-in settings (a sentence saying what to set), or None.

    ``oidc_problem`` is None when OpenID Connect is configured and usable, else what is missing ("" when nothing
    of it is configured)."""
    if password is not None and len(password) < MIN_PASSWORD:
        return (f"{PASSWORD_ENV} is shorter than {MIN_PASSWORD} characters: set a longer classroom password, or "
                f"unset it.")
    if password or oidc_problem is None or is_local_address(host):
        return None
    shown = host or "every network interface"
    return (f"Refusing to serve on {shown} without sign-in: anyone on that network could read, score and delete "
            f"every run. Set a classroom password ({PASSWORD_ENV}=...), or configure OpenID Connect in "
            f".streamlit/secrets.toml ([auth]: redirect_uri, cookie_secret, client_id, client_secret, "
            f"server_metadata_url){'; ' + oidc_problem if oidc_problem else ''}, or serve on 127.0.0.1 only "
            f"(make app without HOST).")


def oidc_problem(auth: Mapping[str, object] | None, authlib_installed: bool) -> str | None:
    """None when the ``[auth]`` table of secrets.toml can sign users in; else what is missing ("" when absent)."""
    if not auth:
        return ""
    missing = [key for key in ("redirect_uri", "cookie_secret") if not auth.get(key)]
    providers = [auth] + [value for value in auth.values() if isinstance(value, Mapping)]
    if not any(p.get("client_id") and p.get("server_metadata_url") for p in providers):
        missing.append("client_id and server_metadata_url (in [auth] or a provider's table)")
    if missing:
        return f"[auth] in secrets.toml lacks {', '.join(missing)}"
    if not authlib_installed:
        return "OpenID Connect sign-in needs Authlib: .venv/bin/python -m pip install 'Authlib>=1.3.2'"
    return None


def user_limit(name: str, environ: Mapping[str, str] | None = None) -> int | None:
    """A per-owner queue limit from the environment (``USER_MAX_RUNNING_ENV``, ``USER_MAX_QUEUED_ENV``); None
    (no limit) when unset, as on a local server, whose one owner keeps today's queue."""
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return max(1, int(value)) if value.isdigit() else None


def fair_next(queued: Iterable[tuple[int, str]], served: Mapping[str, int], running: Mapping[str, int],
              max_running_per_owner: int | None = None) -> int | None:
    """The queued run to start next, or None when every owner with queued runs is at its running limit.

    ``queued``: (run id, owner) of the QUEUED runs, oldest first. ``served``: per owner, its runs that have held a
    slot while the oldest queued run waited (running, or started and finished since it was queued); ``running``:
    per owner, its RUNNING runs. A run's turn is its owner's ``served`` count plus the owner's runs queued before it:
    the lowest turn starts, the older run on a tie. So while anyone waits, every owner's first run starts before
    anyone's second, and seconds before thirds, whatever order the runs were queued in."""
    best: tuple[int, int] | None = None
    ahead: dict[str, int] = {}
    for run_id, owner in queued:
        rank = ahead.get(owner, 0)
        ahead[owner] = rank + 1
        if max_running_per_owner is not None and running.get(owner, 0) >= max_running_per_owner:
            continue
        turn = (served.get(owner, 0) + rank, run_id)
        if best is None or turn < best:
            best = turn
    return None if best is None else best[1]
