"""Sphinx configuration of minirad's documentation site.

Build it, offline, from the repository root:

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -j 1 docs docs/_build/html

Before reading, the build writes the pages that follow the code: the API
reference's part pages (``_ext/api_pages.py``, from the package on disk),
the lab notebooks (``_ext/lab_pages.py``, with the ``minirad lab`` command)
and the explorable pages they and ``explore.md`` embed
(``_ext/explore_pages.py``, with ``minirad.explore``), each rewritten only
when it changes.  The solutions are executed once and cached (jupyter-cache,
in ``docs/_build/.jupyter_cache``); the handouts are shown as students get
them, unexecuted.  A course publishing the site for its students leaves the
instructors' section out with ``-t students``.

Files of the repository that the site shows (the instructors' guide, the
notes on the figures, the committed runs of the case studies) are included
by reference from the page that shows them (``_ext/repo_pages.py``), never
copied, and their links are mapped onto the site.

Nothing is fetched at build or view time: intersphinx is not used, MathJax
is served from the site itself (sphinx-mathjax-offline), and the theme ships
its fonts and scripts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# jsonschema, which nbformat imports, compiles the grammars of the optional package
# rfc3987_syntax when it is installed (it is, beside JupyterLab): seconds of every build, for a
# check of "iri" strings that no notebook schema asks for. Leave it unimported.
sys.modules.setdefault("rfc3987_syntax", None)

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # document this checkout even without `pip install -e .`

import api_pages  # noqa: E402
import docstrings  # noqa: E402
import explore_pages  # noqa: E402
import lab_pages  # noqa: E402
from repo_pages import Site  # noqa: E402

import minirad  # noqa: E402

project = "minirad"
author = "the minirad developers"
copyright = "the minirad developers"
version = release = minirad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_nb",
    "sphinx-mathjax-offline",
]

# ------------------------------------------------------------ pages written first
STUDENTS_ONLY = tags.has("students")  # noqa: F821  (Sphinx defines `tags` for conf.py)

API = DOCS / "api" / "generated"
api_pages.write_pages("minirad", API)
API_SOURCES = api_pages.fingerprint("minirad", *(DOCS / "_templates").rglob("*.rst"))
HANDOUTS, EXPLORABLE = lab_pages.write_notebooks(ROOT / "tutorials", DOCS / "labs" / "handouts",
                                                 "handout")
SOLUTIONS: list[Path] = []
if not STUDENTS_ONLY:
    SOLUTIONS, more = lab_pages.write_notebooks(ROOT / "tutorials",
                                                DOCS / "instructors" / "solutions", "solutions")
    EXPLORABLE |= more
# the explorable pages the labs embed, and those of explore.md; copied to the site's explore/
EXTRA = DOCS / "_build" / "site_extra"
explore_pages.write_pages(EXPLORABLE | {"minirad.examples:figure1", "minirad.examples:figure3"},
                          EXTRA / "explore", stamp=DOCS / "_build" / "explore.written-from")
html_extra_path = [str(EXTRA)]
# repository files shown on the site: a page of docs/ includes them by reference
SITE = Site(ROOT, DOCS, forms={"tutorials": ("labs/handouts", ".ipynb")},
            left_out=["instructors"] if STUDENTS_ONLY else [])

exclude_patterns = ["_build", "_ext", "_templates", "_static", "gallery/README.rst",
                    "**.ipynb_checkpoints", "auto_gallery/*.ipynb", "auto_gallery/*.py",
                    "auto_gallery/*.zip", "sg_execution_times.rst",
                    "auto_gallery/sg_execution_times.rst"]
if STUDENTS_ONLY:
    exclude_patterns.append("instructors/**")

# ------------------------------------------------------------------ API reference
templates_path = ["_templates"]
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's __all__ says what it offers
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # the signatures already show them; numpydoc lists parameters
numpydoc_show_class_members = False  # members are documented in place, not as tables
numpydoc_validation_checks: set[str] = set()

# ------------------------------------------------------------------ gallery
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_gallery",
    "filename_pattern": r"/plot_",  # every script is run at build time
    "image_scrapers": ("gallery_scraper",),  # _ext/gallery_scraper.py
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "show_memory": False,
    "plot_gallery": "True",
    "capture_repr": (),
    "default_thumb_file": None,
    "min_reported_time": 10**6,  # the timings change from run to run; leave them out
    # no sg_execution_times pages: their table loads jQuery and DataTables from a CDN
    "write_computation_times": False,
}

# --------------------------------------------------------- notebooks and Markdown
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "cache"
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_excludepatterns = ["labs/handouts/*"]  # as students get them: not run
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_in_temp = True  # a lab's saved files stay out of docs/
nb_merge_streams = True

# ------------------------------------------------------------------ HTML
html_theme = "pydata_sphinx_theme"
html_title = "minirad"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "header_links_before_dropdown": 8,
}
# an explicit mode: without one the theme logs a console error on a reader's first visit
html_context = {"default_mode": "auto"}
html_static_path = ["_static"]
html_css_files = ["minirad.css"]   # full width, wide figures, explorable frames
html_js_files = ["minirad.js"]     # click a picture to see it at full size
html_search_scorer = str(DOCS / "_static" / "search_scorer.js")  # solutions below handouts
html_show_sourcelink = True
html_sourcelink_suffix = ""  # "Show Source" of a lab page is its notebook, as it is
html_last_updated_fmt = None
# pages that belong to no section have no navigation to show beside them: no left
# sidebar, and the text takes the whole width (minirad.css)
html_sidebars = {page: [] for page in (
    "index", "install", "getting_started", "glossary", "explore", "figures", "benchmarks",
    "architecture", "search", "genindex", "py-modindex")}


def setup(app):
    app.connect("autodoc-process-docstring", docstrings.process_docstring)
    app.connect("autodoc-skip-member", docstrings.skip_foreign)
    app.connect("source-read", _repository_files)
    app.connect("env-get-outdated", _lab_indexes)
    app.connect("build-finished", _api_generated)
    if api_pages.unchanged(API, API_SOURCES):
        # autosummary writes a page per module and name of the package, reading every module
        # to do it: most of a build where nothing changed. Its pages are still those of the
        # package as it is (the fingerprint says so), so it need not run.
        for listener in list(app.events.listeners["builder-inited"]):
            if getattr(listener.handler, "__name__", "") == "process_generate_options":
                app.disconnect(listener.id)


def _api_generated(app, exception):
    if exception is None:
        api_pages.record(API, API_SOURCES)


def _repository_files(app, docname, source):
    """Markdown pages: the repository files they include, links mapped onto the site,
    the labs listed in their order, and nothing that points at a section left out."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return
    text, included = SITE.include(path, source[0])
    for file in included:
        app.env.note_dependency(str(file))
    text = SITE.rewrite_links(path, text)
    text = text.replace("<!-- labs: handouts -->", lab_pages.toctree("handouts", HANDOUTS))
    text = text.replace("<!-- labs: solutions -->", lab_pages.toctree("solutions", SOLUTIONS))
    if STUDENTS_ONLY:
        # a reference to the instructors' section becomes its text
        text = re.sub(r"\{doc\}`([^`<]+?)\s*<instructors/[^`]*>`", r"\1", text)
        text = "\n".join(line for line in text.splitlines()
                         if not line.strip().startswith("instructors/"))
    source[0] = text


def _lab_indexes(app, env, added, changed, removed):
    """A lab added or removed changes the lists of labs, which the pages do not show."""
    labs = {name for name in (*added, *removed)
            if name.startswith(("labs/handouts/", "instructors/solutions/"))}
    return ["labs/index", "instructors/index"] if labs else []
