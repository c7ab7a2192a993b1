"""Screenshots of the built site, as a reader sees it at 1,400 px, and what they would hide.

    python docs/screenshots.py [docs/_build/html] [-o docs/screenshots]

serves the built site over HTTP on this machine, opens five pages in a
headless Chromium (Debian's ``chromium``, driven by ``tests/browser.py``) at
1,400 x 900 and writes a full-page PNG of each: the landing page, the
getting-started tutorial, a lab, a case study and an explorable page.  For
each page it also lists what a reader could not see whole: code blocks that
scroll sideways, pictures cut off by their box or shrunk to less than half
their width, and frames narrower than the page they hold.  It exits with
status 1 when there is any.
"""

from __future__ import annotations

import argparse
import base64
import functools
import http.server
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the project's DevTools driver

import browser  # noqa: E402

WIDTH, HEIGHT = 1400, 900
PAGES = {
    "landing": "index.html",
    "getting_started": "getting_started.html",
    "lab": "labs/handouts/lab4_elimination.html",
    "study": "pde_study.html",
    "explorable": "explore/figure1.html#eliminate",
}

# what a reader cannot see whole, found by the browser's own layout
HIDDEN = """(() => {
  const found = [];
  const name = (node) => (node.getAttribute("src") || node.textContent || "").trim().slice(0, 60);
  for (const pre of document.querySelectorAll("pre")) {
    if (pre.scrollWidth > pre.clientWidth + 1)
      found.push(`code block scrolls sideways (${pre.scrollWidth} > ${pre.clientWidth} px): `
                 + name(pre));
  }
  for (const img of document.querySelectorAll("img")) {
    if (!img.complete || img.naturalWidth === 0 || img.closest(".minirad-lightbox")) continue;
    const box = img.getBoundingClientRect();
    const parent = img.parentElement.getBoundingClientRect();
    if (box.right > parent.right + 1 && getComputedStyle(img.parentElement).overflowX !== "visible")
      found.push(`picture cut off at its box: ${name(img)}`);
    if (box.width < img.naturalWidth / 2 && box.width > 0)
      found.push(`picture shrunk to ${Math.round(box.width)} of ${img.naturalWidth} px: `
                 + name(img));
  }
  for (const frame of document.querySelectorAll("iframe")) {
    const inner = frame.contentDocument && frame.contentDocument.documentElement;
    if (inner && inner.scrollWidth > frame.clientWidth + 1)
      found.push(`frame narrower than its page (${inner.scrollWidth} > ${frame.clientWidth} px): `
                 + frame.getAttribute("src"));
  }
  return found;
})()"""


def serve(folder: Path):
    """The folder over HTTP on this machine, in a thread; returns (address, server)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def full_page(chromium: browser.Browser, path: Path) -> None:
    """A PNG of the whole page, not only the window."""
    height = chromium.evaluate("document.documentElement.scrollHeight")
    data = chromium.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1})
    path.write_bytes(base64.b64decode(data["data"]))


def shoot(site: Path, folder: Path) -> dict[str, list[str]]:
    """Write one screenshot per page of PAGES into ``folder``; return what each hides."""
    reason = browser.why_not()
    if reason is not None:
        raise SystemExit(f"cannot take screenshots: {reason}")
    folder.mkdir(parents=True, exist_ok=True)
    address, server = serve(site)
    hidden = {}
    try:
        with browser.Browser() as chromium:
            for name, page in PAGES.items():
                chromium.open(f"{address}/{page}", width=WIDTH, height=HEIGHT, quiet=1.0)
                # frames load lazily: bring each into view once, then back to the top
                chromium.evaluate("""(async () => {
                    for (const f of document.querySelectorAll('iframe')) {
                        f.loading = 'eager'; f.scrollIntoView();
                        await new Promise(r => setTimeout(r, 400));
                    }
                    window.scrollTo(0, 0);
                    await new Promise(r => setTimeout(r, 300));
                })()""")
                if chromium.errors:
                    raise SystemExit(f"{page}: {chromium.errors}")
                hidden[name] = chromium.evaluate(HIDDEN)
                full_page(chromium, folder / f"{name}.png")
    finally:
        server.shutdown()
        server.server_close()
    return hidden


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(HERE / "_build" / "html"))
    parser.add_argument("-o", "--output", default=str(HERE / "screenshots"))
    args = parser.parse_args(argv)
    hidden = shoot(Path(args.site), Path(args.output))
    for name, problems in hidden.items():
        print(f"{name}: {'nothing hidden' if not problems else ''}")
        for problem in problems:
            print(f"  {problem}")
    return 1 if any(hidden.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
