"""``streamlit_app.open_until``, the browser tests' one reload of a page whose first render stalled: against a tiny
local server whose first answer lacks the element (as a stalled render does) and whose later answers have it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.streamlit_app import browser_page, open_until, require_chromium

pytestmark = pytest.mark.browser


def _server(pages: list[str]) -> ThreadingHTTPServer:
    """Answers the n-th request with pages[n] (the last one from then on)."""
    served = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = pages[min(len(served), len(pages) - 1)].encode()
            served.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_page_stalled_at_first_is_reloaded_once_with_a_warning_that_quotes_it(tmp_path):
    require_chromium()
    log = tmp_path / "streamlit.log"
    log.write_text("the server's last words")
    server = _server(["<html><body>Still running</body></html>",
                      "<html><body><button>SVG (whole tree)</button></body></html>"])
    url = f"http://127.0.0.1:{server.server_address[1]}/tree"
    try:
        with browser_page() as page:
            button = page.get_by_role("button", name="SVG (whole tree)", exact=True)
            with pytest.warns(RuntimeWarning, match="(?s)reloading once.*Still running.*the server's last words"):
                open_until(page, url, button, 1_000, log)
            assert button.is_visible()
    finally:
        server.shutdown()


def test_a_page_that_never_shows_the_element_still_fails(tmp_path):
    require_chromium()
    server = _server(["<html><body>Still running</body></html>"])
    url = f"http://127.0.0.1:{server.server_address[1]}/tree"
    try:
        with browser_page() as page:
            button = page.get_by_role("button", name="SVG (whole tree)", exact=True)
            with pytest.warns(RuntimeWarning), pytest.raises(Exception, match="Timeout"):
                open_until(page, url, button, 1_000, tmp_path / "absent.log", retry_ms=1_000)
    finally:
        server.shutdown()
