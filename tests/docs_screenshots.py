"""Screenshots of the documentation site as a reader sees it at 1,400 px: the landing
page, getting started, one lab, one study and one explorable page, written to
``docs/screenshots/``, and a check that none of them clips a figure or a code block.

    python -m sphinx -b html docs docs/_build/html                  # the site, once
    PYTHONPATH=. python tests/docs_screenshots.py docs/_build/html docs/screenshots

Each page is served over HTTP from the built folder, as ``python -m http.server``
would, opened in headless Chromium (``tests/browser.py``) 1,400 px wide and as
tall as the page, and photographed (its first 3,000 px, to keep the files small;
the check covers the whole page).  A page fails when
a code block scrolls sideways, an image or an embedded page reaches past the
text column or the window, an image did not load, or the console shows an
error; the script then exits with status 1 and names what failed.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading

import browser

WIDTH, MOST_HEIGHT = 1400, 3000

PAGES = {
    "landing": "index.html",
    "getting_started": "getting_started.html",
    "lab": "labs/handouts/lab5_randomized.html",
    "study": "nn_study.html",
    "explorable": "explore/figure1.html",
}
"""Screenshot name -> page of the built site."""

CLIPPED = """(() => {
  const article = document.querySelector('.bd-article') || document.body;
  const column = article.getBoundingClientRect();
  const found = [];
  for (const pre of article.querySelectorAll('pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1)
      found.push('a code block scrolls sideways: ' + pre.textContent.slice(0, 60));
  }
  for (const node of article.querySelectorAll('img, iframe, svg, video')) {
    const box = node.getBoundingClientRect();
    if (box.width === 0) continue;
    const name = node.getAttribute('src')
        || node.tagName + ' ' + (node.id || node.className.baseVal || '');
    if (box.right > column.right + 2 || box.left < column.left - 2
        || box.right > window.innerWidth)
      found.push('reaches past the text column: ' + name);
    if (node.tagName === 'IMG' && !(node.complete && node.naturalWidth > 0))
      found.push('did not load: ' + name);
  }
  return found;
})()"""


def serve(folder: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    """An HTTP server of ``folder`` on a free local port, and its address."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def shoot(site: str, folder: str) -> dict[str, list[str]]:
    """Photograph every page of :data:`PAGES`; what each clips (empty when nothing)."""
    missing = [page for page in PAGES.values() if not os.path.isfile(os.path.join(site, page))]
    if missing:
        raise SystemExit(f"{site} has no {', '.join(missing)}: build the site first "
                         f"(python -m sphinx -b html docs {site})")
    os.makedirs(folder, exist_ok=True)
    server, address = serve(site)
    chromium = browser.Browser()
    problems = {}
    try:
        for name, page in PAGES.items():
            chromium.open(f"{address}/{page}", width=WIDTH, height=900, quiet=0.5)
            height = min(MOST_HEIGHT, int(chromium.evaluate(
                "document.documentElement.scrollHeight")))
            chromium.open(f"{address}/{page}", width=WIDTH, height=height, quiet=0.5)
            problems[name] = list(chromium.evaluate(CLIPPED)) + [
                f"console: {error}" for error in chromium.errors]
            chromium.screenshot(os.path.join(folder, f"{name}.png"))
    finally:
        chromium.close()
        server.shutdown()
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1])
        return 2
    problems = shoot(*argv)
    for name, found in problems.items():
        print(f"{name}: {'; '.join(found) if found else 'nothing clipped'}")
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
