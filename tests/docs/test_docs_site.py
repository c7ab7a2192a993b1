"""The built documentation site: every internal link resolves, every module has its
page, and a real browser shows the pages' content without a console error or a
request leaving the site.

The site is built by ``sphinx-build -W --keep-going docs docs/_build/html``
(``.ci/run`` does it after the test suite, then runs this file with
``MINIRAD_DOCS_HTML`` naming the built folder); without that variable the tests
that need the site skip.
"""

from __future__ import annotations

import functools
import http.server
import inspect
import os
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import browser as chromium_driver
import pytest
from oracles import ROOT

import minirad

SITE_VARIABLE = "MINIRAD_DOCS_HTML"


@pytest.fixture(scope="module")
def site() -> Path:
    folder = os.environ.get(SITE_VARIABLE)
    if not folder:
        pytest.skip(f"the site is not built: set {SITE_VARIABLE} to the folder that "
                    f"`sphinx-build docs docs/_build/html` wrote (.ci/run does)")
    folder = Path(folder)
    assert (folder / "index.html").is_file(), f"{SITE_VARIABLE}={folder} holds no index.html"
    return folder


# ------------------------------------------------------------------ link check
class _Links(HTMLParser):
    """The link targets and the anchor ids of one HTML page."""

    TARGETS = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src",
               "source": "src"}

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        target = attrs.get(self.TARGETS.get(tag, ""))
        if target:
            self.targets.append(target)


@functools.cache
def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser


def broken_links(folder: Path) -> list[str]:
    """Every link of an HTML page in ``folder`` to a file that is missing, or to an
    anchor that its page lacks; links with a scheme (``https:``, ``mailto:``) are
    not followed, and pages in folders named ``_...`` (Sphinx's assets) are not read."""
    broken = []
    for page in sorted(folder.rglob("*.html")):
        if any(part.startswith("_") for part in page.relative_to(folder).parts[:-1]):
            continue  # _static, _sources, ...: the theme's assets, not pages
        for target in _parse(page).targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc:
                continue
            path = unquote(parts.path)
            file = (page.parent / path).resolve() if path else page
            if path.endswith("/"):
                file = file / "index.html"
            where = f"{page.relative_to(folder)} links to {target}"
            if not file.exists():
                broken.append(f"{where}: no such file")
            elif parts.fragment and file.suffix == ".html":
                if unquote(parts.fragment) not in _parse(file).ids:
                    broken.append(f"{where}: no anchor {parts.fragment!r}")
    return broken


def test_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">fine</a> <a href="sub/page.html#gone">no anchor</a>'
        '<img src="missing.png"> <a href="https://example.org/x">external</a>'
        '<a href="#top" id="top">self</a> <a href="sub/">folder</a>')
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">x</h1><a href="../index.html">')
    (tmp_path / "sub" / "index.html").write_text("<p>folder page</p>")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "macros.html").write_text('<a href="{{ pathto(x) }}">')
    assert broken_links(tmp_path) == [
        "index.html links to sub/page.html#gone: no anchor 'gone'",
        "index.html links to missing.png: no such file",
    ]


def test_every_internal_link_resolves(site):
    broken = broken_links(site)
    assert not broken, f"{len(broken)} broken links, e.g.:\n" + "\n".join(broken[:20])


# ------------------------------------------------------------- API coverage
def test_every_public_module_and_name_has_its_page(site):
    # the oracle is the folder on disk, not the generator's own listing
    modules = []
    for file in sorted((ROOT / "minirad").rglob("*.py")):
        parts = file.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts[1:]):
            modules.append(".".join(parts))
    pages = {page.stem for page in (site / "api" / "generated").rglob("*.html")}
    missing = [m for m in modules if m not in pages]
    assert not missing, f"modules without an API page: {missing}"
    names = [n for n in minirad.__all__ if not inspect.ismodule(getattr(minirad, n))
             and f"minirad.{n}" not in modules]  # a name over a module is on its page
    missing = [n for n in names if f"minirad.{n}" not in pages]
    assert not missing, f"public names without an API page: {missing}"


# ------------------------------------------------------------------ browser
@pytest.fixture(scope="module")
def browser():
    reason = chromium_driver.why_not()
    if reason is not None:
        pytest.skip(f"browser tests: {reason}")
    with chromium_driver.Browser() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def served(site):
    """The site over HTTP on this machine, as a reader serves it
    (``python -m http.server -d docs/_build/html``); the address has no slash at the end."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _open(browser, served, path):
    page = browser.open(f"{served}/{path}", quiet=0.5)
    assert page.evaluate("document.readyState") == "complete"
    assert not page.errors, f"{path}: {page.errors}"
    leaving = [url for url in page.requests if not url.startswith((served, "data:", "blob:"))]
    assert not leaving, f"{path} fetched from outside the site: {leaving}"
    return page


def _loaded_images(page) -> int:
    return page.evaluate("Array.from(document.querySelectorAll('main img'))"
                         ".filter(i => i.complete && i.naturalWidth > 0).length")


def _pages(site: Path) -> list[str]:
    """Every page of the site, its theme's assets (folders named ``_...``) left out."""
    return sorted(page.relative_to(site).as_posix() for page in site.rglob("*.html")
                  if not any(part.startswith("_")
                             for part in page.relative_to(site).parts[:-1]))


def test_every_page_loads_without_an_error_or_a_request_leaving_the_site(browser, served,
                                                                          site):
    pages = _pages(site)
    assert len(pages) > 100 and "explore/figure1.html" in pages
    failures = []
    for path in pages:
        try:
            _open(browser, served, path)
        except AssertionError as error:
            failures.append(str(error).splitlines()[0])
    assert not failures, f"{len(failures)} of {len(pages)} pages:\n" + "\n".join(failures[:20])


def test_no_page_loads_from_a_content_delivery_network(site):
    """The browser test sees what a page fetched; this sees every address in every file,
    the theme's assets included, so that nothing can fetch later (on a click, say)."""
    remote = re.compile(r"""(?:src|href)\s*=\s*["']https?://""")
    found = [page.relative_to(site).as_posix() for page in site.rglob("*.html")
             if remote.search(page.read_text(encoding="utf-8", errors="replace"))
             and "<script" in page.read_text(encoding="utf-8", errors="replace")
             and re.search(r"""<(?:script|link)[^>]+(?:src|href)\s*=\s*["']https?://""",
                           page.read_text(encoding="utf-8", errors="replace"))]
    assert not found, f"pages that load a script or a style from another host: {found[:10]}"


def test_home_page(browser, served):
    page = _open(browser, served, "index.html")
    assert page.evaluate("document.querySelector('main h1').textContent").startswith("minirad")
    # the picture first, then three ways in
    assert _loaded_images(page) >= 1
    assert page.evaluate("document.querySelectorAll('.path-card').length") == 3
    # the search box is there, and its index loads
    assert page.evaluate("document.querySelector('form.bd-search input[name=q]') !== null")
    page = _open(browser, served, "search.html?q=jacobian")
    assert page.evaluate("document.querySelectorAll('#search-results li').length") > 0


def _search(browser, served, query: str) -> list[str]:
    page = _open(browser, served, f"search.html?q={query}")
    hits = []
    for _ in range(100):  # the results are shown one by one after the index has loaded
        if "found" in page.evaluate("(document.querySelector('#search-results p.search-summary')"
                                    " || {textContent: ''}).textContent"):
            hits = page.evaluate("Array.from(document.querySelectorAll('#search-results li a'))"
                                 ".map(a => a.getAttribute('href'))")
            break
        page.evaluate("new Promise(r => setTimeout(r, 100))")
    return hits


def test_search_ranks_a_lab_above_its_solutions(browser, served, site):
    if not (site / "instructors").exists():
        pytest.skip("built without the instructors' section (-t students)")
    lab = _first_lab().stem
    hits = _search(browser, served, "Derivatives+by+definition")
    handout = [i for i, h in enumerate(hits) if h.startswith(f"labs/handouts/{lab}")]
    solution = [i for i, h in enumerate(hits) if h.startswith(f"instructors/solutions/{lab}")]
    assert handout and solution, hits
    assert handout[0] < solution[0], hits


def test_labs_are_listed_in_their_order(site):
    for index in ("labs/index.html", "instructors/index.html"):
        if not (site / index).exists():
            continue
        html = (site / index).read_text(encoding="utf-8")
        # the page's own lists, not the menu or the link to the next page
        lists = re.findall(r'class="toctree-wrapper.*?</div>', html, re.S)
        links = [link for listed in lists
                 for link in re.findall(r'href="((?:handouts|solutions)/lab\d+[^"]*)"', listed)]
        numbers = [int(re.search(r"lab(\d+)", t)[1]) for t in links]
        assert numbers and numbers == sorted(numbers), (index, numbers)
        assert len(set(numbers)) == len(list((ROOT / "tutorials").glob("lab*.py")))


def test_explorable_pages_are_embedded_where_the_labs_discuss_them(browser, served):
    for lab, tab in (("lab3_bauer", "paths"), ("lab4_elimination", "eliminate"),
                     ("lab5_randomized", "sample")):
        page = _open(browser, served, f"labs/handouts/{lab}.html")
        frames = page.evaluate("Array.from(document.querySelectorAll('iframe.explorable'))"
                               ".map(f => f.getAttribute('src'))")
        assert f"../../explore/figure1.html#{tab}" in frames, (lab, frames)


def test_a_picture_enlarges_on_a_click(browser, served):
    page = _open(browser, served, "getting_started.html")
    page.click("main img.enlargeable")
    shown = page.evaluate("(() => { const big = document.querySelector('.minirad-lightbox img');"
                          " return big && big.getBoundingClientRect().width; })()")
    natural = page.evaluate("document.querySelector('main img.enlargeable').naturalWidth")
    assert shown and shown >= min(natural, 1000), (shown, natural)
    page.key("Escape", code="Escape")
    assert page.evaluate("document.querySelector('.minirad-lightbox') === null")


def test_pages_without_a_section_use_the_whole_width(browser, served):
    page = browser.open(f"{served}/concepts/../glossary.html", width=1400, height=900)
    width = page.evaluate("document.querySelector('.bd-article-container')"
                          ".getBoundingClientRect().width")
    assert page.evaluate("document.querySelector('.bd-sidebar-primary') === null || "
                         "document.querySelector('.bd-sidebar-primary').offsetWidth === 0")
    assert width > 1000, width


def _screenshots():
    """docs/screenshots.py, the script that writes docs/screenshots/ (a file of docs/,
    not a module on the path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCREENSHOTS = _screenshots()


@pytest.mark.parametrize("name", SCREENSHOTS.PAGES)
def test_the_screenshot_pages_hide_nothing_at_1400_px(browser, served, name):
    """The pages of docs/screenshots/, checked as docs/screenshots.py checks them: no
    code block scrolls sideways, no picture is cut off or shrunk below half its width."""
    page = browser.open(f"{served}/{SCREENSHOTS.PAGES[name]}", width=SCREENSHOTS.WIDTH,
                        height=SCREENSHOTS.HEIGHT, quiet=0.5)
    assert page.evaluate(SCREENSHOTS.HIDDEN) == []
    assert not page.errors


def test_api_page_of_trace_shows_its_signature(browser, served):
    page = _open(browser, served, "api/generated/names/minirad.trace.html")
    signature = page.evaluate("document.getElementById('minirad.trace').textContent").strip()
    assert signature.startswith("minirad.trace(")
    # the parameters, as Python itself reads them off the function
    for name in inspect.signature(minirad.trace).parameters:
        assert name in signature, f"{name} missing from {signature!r}"
    # its runnable example is shown
    assert ">>>" in page.evaluate("document.querySelector('main').textContent")


def test_gallery_page_shows_its_picture_and_downloads(browser, served):
    page = _open(browser, served, "auto_gallery/plot_01_figure1_lcg.html")
    assert _loaded_images(page) >= 1
    downloads = page.evaluate("Array.from(document.querySelectorAll('a.download'))"
                              ".map(a => a.getAttribute('href'))")
    assert any(href.endswith(".py") for href in downloads), downloads
    assert any(href.endswith(".ipynb") for href in downloads), downloads


def _first_heading(lab: Path) -> str:
    """The lab's first Markdown heading, read off the percent-format file itself."""
    for line in lab.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^# #+ (.+)$", line)
        if match:
            return match[1].strip()
    raise AssertionError(f"{lab} has no heading")


def _first_lab() -> Path:
    return min((ROOT / "tutorials").glob("lab*.py"),
               key=lambda lab: int(re.match(r"lab(\d+)", lab.stem)[1]))


def test_lab_handout_page_shows_the_lab_as_students_get_it(browser, served):
    lab = _first_lab()
    page = _open(browser, served, f"labs/handouts/{lab.stem}.html")
    assert page.evaluate("document.querySelector('main h1').textContent") \
        .rstrip("#¶ ").strip() == _first_heading(lab)
    text = page.evaluate("document.querySelector('main').textContent")
    assert "NotImplementedError" in text  # the stubs, not the solutions
    assert "BEGIN SOLUTION" not in text
    assert page.evaluate("document.querySelectorAll('mjx-container').length") > 0  # maths typeset


def test_lab_solutions_page_shows_outputs_and_pictures(browser, served, site):
    lab = _first_lab()
    if not (site / "instructors").exists():
        pytest.skip("built without the instructors' section (-t students)")
    page = _open(browser, served, f"instructors/solutions/{lab.stem}.html")
    text = page.evaluate("document.querySelector('main').textContent")
    assert "NotImplementedError" not in text
    assert re.search(r"Exercise \d+\.\d+ passed", text)  # the check cells ran
    assert _loaded_images(page) >= 1


# ------------------------------------------------------------ incremental build
def _mtimes(folder: Path, leave_out: list[Path]) -> dict[str, int]:
    """Every file under ``folder`` with its modification time, the folders ``leave_out``
    left out."""
    return {str(path): path.stat().st_mtime_ns for path in folder.rglob("*")
            if path.is_file() and not any(path.is_relative_to(out) for out in leave_out)}


def test_a_second_build_with_nothing_changed_reads_writes_and_runs_nothing(site):
    """Building the built site again, as ``.ci/run`` built it, reads no page, writes no
    page, runs no gallery script, and rewrites none of the files the build generates in
    docs/ (API pages, lab notebooks, the gallery, the explorable pages); the issue found
    the 7 pages of the case studies' runs rebuilt every time, 83 s for a build with
    nothing changed. The build's time depends on the machine's load and is not asserted
    here (docs/install.md gives it)."""
    docs = ROOT / "docs"
    if not (site / ".doctrees" / "environment.pickle").is_file():
        pytest.skip(f"{site} has no .doctrees of its own: not built by `sphinx -b html docs "
                    f"{site}`")
    leave_out = [site.resolve(), docs / "_build" / ".jupyter_cache"]
    before = _mtimes(docs, leave_out)
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-j", "1",
                          "-b", "html", str(docs), str(site)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "0 added, 0 changed, 0 removed" in run.stdout, run.stdout[-3000:]
    written = [line for line in run.stdout.splitlines()
               if line.startswith("writing output... [")]
    assert not written, f"pages written again: {written[:5]}"
    after = _mtimes(docs, leave_out)
    rewritten = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    assert not rewritten, f"files of docs/ written again: {rewritten[:10]}"
