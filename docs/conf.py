"""Sphinx configuration of minirad's documentation site.

Build it, offline, from the repository root:

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -j 1 docs docs/_build/html

Before reading, the build writes the pages that follow the code: the API
reference's part pages (``_ext/api_pages.py``, from the package on disk) and
the lab notebooks (``_ext/lab_pages.py``, with the ``minirad lab`` command).
The solutions are executed once and cached (jupyter-cache, in
``docs/_build/.jupyter_cache``); the handouts are shown as students get them,
unexecuted.  A course publishing the site for its students leaves the
instructors' section out with ``-t students``.

Nothing is fetched at build or view time: intersphinx is not used, MathJax
is served from the site itself (sphinx-mathjax-offline), and the theme ships
its fonts and scripts.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # document this checkout even without `pip install -e .`

import api_pages  # noqa: E402
import docstrings  # noqa: E402
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

api_pages.write_pages("minirad", DOCS / "api" / "generated")
lab_pages.write_notebooks(ROOT / "tutorials", DOCS / "labs" / "handouts", "handout")
if not STUDENTS_ONLY:
    lab_pages.write_notebooks(ROOT / "tutorials", DOCS / "instructors" / "solutions", "solutions")
# the case studies' committed runs, linked from nn_study.md and pde_study.md
SITE = Site(ROOT, DOCS, ["figures/nn", "figures/pde"])
SITE.copy()

exclude_patterns = ["_build", "_ext", "_templates", "gallery/README.rst", "**.ipynb_checkpoints",
                    "auto_gallery/*.ipynb", "auto_gallery/*.py", "auto_gallery/*.zip"]
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
}
# an explicit mode: without one the theme logs a console error on a reader's first visit
html_context = {"default_mode": "auto"}
html_static_path: list[str] = []
html_show_sourcelink = True
html_sourcelink_suffix = ""  # "Show Source" of a lab page is its notebook, as it is
html_last_updated_fmt = None


def setup(app):
    app.connect("autodoc-process-docstring", docstrings.process_docstring)
    app.connect("autodoc-skip-member", docstrings.skip_foreign)
    app.connect("source-read", _repository_links)
    if STUDENTS_ONLY:
        app.connect("source-read", _drop_instructors)


def _repository_links(app, docname, source):
    path = Path(app.env.doc2path(docname))
    if path.suffix == ".md":
        source[0] = SITE.rewrite_links(path, source[0])


def _drop_instructors(app, docname, source):
    """Without the instructors' section the home page's table of contents leaves it out."""
    if docname == "index":
        source[0] = "\n".join(line for line in source[0].splitlines()
                              if not line.strip().startswith("instructors/"))
