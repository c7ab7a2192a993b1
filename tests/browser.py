"""A headless Chromium driven over the Chrome DevTools Protocol, for the tests of web
pages (the explorable LCG and the documentation site).

Debian's ``chromium`` package is the browser (``.ci/run`` installs it);
websocket-client (the ``browser`` extra) carries the protocol.  Nothing is
downloaded at run time.  The browser runs with a fresh profile, no network
services and no sandbox (the tests run as root in CI), and is ended by its
own process id.  A test opens a page, reads the DOM with JavaScript, and
looks at what the page logged and fetched::

    with Browser() as page:
        page.open("file:///.../index.html")     # or a path, or an http:// URL
        page.evaluate("document.title")
        page.errors        # console errors, uncaught exceptions, failed loads
        page.requests      # every URL the page asked for

:func:`why_not` says why the tests cannot run here (None when they can).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--remote-debugging-port=0"]


def chromium() -> str | None:
    """The browser's path, or None when no Chromium is installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def why_not() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if chromium() is None:
        return "no Chromium installed (apt-get install chromium; .ci/run installs it)"
    try:
        import websocket  # noqa: F401
    except ImportError:
        return "websocket-client is missing (pip install -e '.[browser]')"
    return None


class Browser:
    """One headless Chromium with one page; ``errors`` collects the page's console
    errors and uncaught exceptions, ``requests`` every URL the page asked for."""

    def __init__(self, timeout: float = 20.0):
        import websocket

        self.profile = tempfile.mkdtemp(prefix="minirad-chromium-")
        self.process = subprocess.Popen([chromium(), *FLAGS, f"--user-data-dir={self.profile}",
                                         "about:blank"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        try:
            port = self._port(timeout)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) \
                    as answer:
                pages = [t for t in json.load(answer) if t.get("type") == "page"]
            self.socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"],
                                                      timeout=timeout, suppress_origin=True)
        except BaseException:
            self.close()
            raise
        self.timeout, self.next_id = timeout, 0
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.loaded = False
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def _port(self, timeout: float) -> int:
        marker = os.path.join(self.profile, "DevToolsActivePort")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.exists(marker):
                text = open(marker).read().split()
                if text:
                    return int(text[0])
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.process.returncode}")
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def _event(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                        for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(details.get("exception", {}).get("description")
                               or details.get("text", "exception"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            if not entry.get("url", "").endswith("/favicon.ico"):   # asked for by the browser
                self.errors.append(f"{entry.get('text', '')} {entry.get('url', '')}".strip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            self.errors.append(f"failed to load ({params.get('errorText')})")
        elif method == "Network.requestWillBeSent":
            self.requests.append(params.get("request", {}).get("url", ""))
        elif method == "Page.loadEventFired":
            self.loaded = True

    def send(self, method: str, **params):
        self.next_id += 1
        mine = self.next_id
        self.socket.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self, where: str, width: int = 1280, height: int = 800, mobile: bool = False,
             quiet: float = 0.0) -> Browser:
        """Load a local file or a URL at the given window size, wait for it to load
        and then until it has made no request for ``quiet`` seconds (scripts such as
        MathJax fetch more after the load); ``errors`` and ``requests`` start afresh."""
        import websocket

        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)
        self.loaded, self.errors, self.requests = False, [], []
        url = where if "://" in where else "file://" + os.path.abspath(where)
        self.url = url
        self.send("Page.navigate", url=url)
        end = time.monotonic() + self.timeout
        while not self.loaded:
            if time.monotonic() > end:
                raise TimeoutError(f"{where} did not load")
            self._event(json.loads(self.socket.recv()))
        heard = len(self.requests)
        settle = time.monotonic() + quiet
        while time.monotonic() < settle and time.monotonic() < end:
            self.socket.settimeout(max(0.01, settle - time.monotonic()))
            try:
                self._event(json.loads(self.socket.recv()))
            except websocket.WebSocketTimeoutException:
                break
            finally:
                self.socket.settimeout(self.timeout)
            if len(self.requests) != heard:   # a new request: wait another quiet spell
                heard, settle = len(self.requests), time.monotonic() + quiet
        return self

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-like values)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def text(self, selector: str) -> str:
        return self.evaluate(f"document.querySelector({json.dumps(selector)}).textContent")

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element."""
        box = self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            node.scrollIntoView({{block: "center", inline: "center"}});
            const r = node.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2];
        }})()""")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                      clickCount=1)

    def key(self, key: str, code: str | None = None, text: str | None = None) -> None:
        """Press and release one key (``Tab``, ``Enter``, ``ArrowRight``...)."""
        codes = {"Tab": 9, "Enter": 13, " ": 32, "ArrowLeft": 37, "ArrowRight": 39}
        extra = {"windowsVirtualKeyCode": codes.get(key, 0), "code": code or key, "key": key}
        self.send("Input.dispatchKeyEvent", type="keyDown", text=text or "", **extra)
        self.send("Input.dispatchKeyEvent", type="keyUp", **extra)

    def screenshot(self, path: str) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        socket = getattr(self, "socket", None)
        if socket is not None:
            socket.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
