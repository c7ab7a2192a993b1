"""A headless Chromium driven over the Chrome DevTools Protocol, for tests of web pages.

Debian's ``chromium`` package is the browser (nothing is downloaded); the
protocol goes over a websocket with ``websocket-client``.  A test opens a page,
reads the DOM with JavaScript, and looks at what the page logged and fetched::

    with Browser() as browser:
        page = browser.open("file:///.../index.html")
        page.evaluate("document.title")
        page.errors        # console errors, uncaught exceptions, failed loads
        page.requests      # every URL the page asked for

:func:`find_chromium` says whether a browser is installed; tests skip with
its reason when it is not.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
START_TIMEOUT = 30.0  # seconds for the browser to open its debugging port
LOAD_TIMEOUT = 30.0  # seconds for a page to load and fall quiet


def find_chromium() -> tuple[str | None, str]:
    """The path of a Chromium-like browser (``$CHROMIUM`` first), or None and why."""
    names = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else list(BROWSERS)
    for name in names:
        path = shutil.which(name)
        if path:
            try:
                import websocket  # noqa: F401  (websocket-client)
            except ImportError:
                return None, ("websocket-client is not installed: pip install -e \".[docs]\" "
                              "installs it")
            return path, ""
    return None, (f"no Chromium found (looked for {', '.join(names)}): install Debian's "
                  f"chromium package (apt-get install chromium), or set CHROMIUM to a browser")


@dataclass
class Page:
    """One page as the browser loaded it."""

    url: str
    browser: Browser
    session: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-like values only)."""
        reply = self.browser.call("Runtime.evaluate", {"expression": expression,
                                                       "returnByValue": True,
                                                       "awaitPromise": True}, self.session)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression!r} raised in {self.url}: "
                               f"{_exception_text(reply['exceptionDetails'])}")
        return reply["result"].get("value")


def _exception_text(details: dict) -> str:
    exception = details.get("exception") or {}
    return exception.get("description") or details.get("text", "an exception")


class Browser:
    """A headless Chromium for the duration of a ``with`` block."""

    def __init__(self, executable: str | None = None):
        self.executable = executable or find_chromium()[0]
        if self.executable is None:
            raise RuntimeError(find_chromium()[1])
        self._ids = itertools.count(1)
        self._events: list[dict] = []

    # -------------------------------------------------------------- start, stop
    def __enter__(self) -> Browser:
        import websocket

        self._profile = tempfile.mkdtemp(prefix="minirad-chromium-")
        self._process = subprocess.Popen(
            [self.executable, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-sync", "--mute-audio",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # the browser writes its port and websocket path here once it listens
            port_file = Path(self._profile) / "DevToolsActivePort"
            deadline = time.monotonic() + START_TIMEOUT
            while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.executable} did not start (exit code "
                                       f"{self._process.poll()})")
                time.sleep(0.1)
            port, path = port_file.read_text().split()[:2]
            self._socket = websocket.create_connection(f"ws://127.0.0.1:{port}{path}",
                                                       timeout=LOAD_TIMEOUT)
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stop()

    def _stop(self) -> None:
        socket = getattr(self, "_socket", None)
        if socket is not None:
            socket.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol
    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply; events that arrive meanwhile are kept."""
        number = next(self._ids)
        message = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._socket.send(json.dumps(message))
        while True:
            reply = json.loads(self._socket.recv())
            if reply.get("id") == number:
                if "error" in reply:
                    raise RuntimeError(f"{method} failed: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def _next_event(self, deadline: float) -> dict | None:
        if self._events:
            return self._events.pop(0)
        import websocket

        self._socket.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            return json.loads(self._socket.recv())
        except websocket.WebSocketTimeoutException:
            return None
        finally:
            self._socket.settimeout(LOAD_TIMEOUT)

    def open(self, url: str, quiet: float = 0.5) -> Page:
        """Load ``url`` in a new tab and wait until it has loaded and made no request
        for ``quiet`` seconds (scripts such as MathJax fetch more after the load)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        page = Page(url, self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", {}, session)
        self.call("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + LOAD_TIMEOUT
        loaded, last_activity = False, time.monotonic()
        while time.monotonic() < deadline:
            waiting_for = deadline if not loaded else min(deadline, last_activity + quiet)
            event = self._next_event(waiting_for)
            if event is None:
                if loaded:
                    return page
                continue
            if event.get("sessionId") != session:
                continue
            last_activity = time.monotonic()
            loaded |= event["method"] == "Page.loadEventFired"
            self._record(page, event)
        raise TimeoutError(f"{url} did not finish loading in {LOAD_TIMEOUT:.0f} s")

    @staticmethod
    def _record(page: Page, event: dict) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Log.entryAdded" and params["entry"].get("url", "").endswith("/favicon.ico"):
            return  # the browser asks for an icon by itself; a site without one is not broken
        if method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            page.errors.append(f"failed to load ({params.get('errorText')})")
        elif method == "Runtime.exceptionThrown":
            page.errors.append(f"uncaught: {_exception_text(params['exceptionDetails'])}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(arg.get("value", arg.get("description", "")))
                            for arg in params.get("args", []))
            page.errors.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            page.errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
