"""Every committed figure drawn with matplotlib can be read on the site: at the width
the site shows it, no text is under 8 px high, no two texts overlap, and none is cut
off (tests/figure_text.py says how it is measured).

The figures of ``figures/`` are drawn by the gallery (``minirad figures``), those of
the case studies by the studies' commands; here the studies run on tiny
configurations, which draw the same pictures with fewer points.
"""

import importlib.util
from pathlib import Path

import pytest
from figure_text import SITE_WIDTH, problems, watching

from minirad import gallery

pytestmark = pytest.mark.drawing


def _check(saved, what):
    assert saved, f"{what} saved no PNG drawn by matplotlib"
    report = [f"{what} #{i} ({figure.width:.0f} x {figure.height:.0f} px): {problem}"
              for i, figure in enumerate(saved) for problem in problems(figure)]
    assert not report, f"{len(report)} problems at {SITE_WIDTH} px:\n" + "\n".join(report[:40])


@pytest.mark.slow
@pytest.mark.parametrize("entry", gallery.FIGURES, ids=lambda entry: entry.name)
def test_a_gallery_figure_reads_at_the_site_width(entry, tmp_path):
    if entry.needs and importlib.util.find_spec(entry.needs[0]) is None:
        pytest.skip(f"{entry.name} needs {entry.needs[0]}")
    with watching() as saved:
        entry.make(str(tmp_path))
    if not saved:
        pytest.skip(f"{entry.name} is drawn by graphviz, not matplotlib")
    _check(saved, entry.name)


# ------------------------------------------------------------- the case studies
# the studies on the tiny configurations of their own tests: the same pictures, fewer points
def _their_tests(path: str):
    """A test module of the studies, by its path under tests/ (test folders are not
    packages)."""
    location = Path(__file__).resolve().parent / path
    spec = importlib.util.spec_from_file_location(location.stem + "_configs", location)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_neural_network_study_figures_read_at_the_site_width(tmp_path):
    from minirad.studies.nn import study

    tiny = _their_tests("studies/nn/test_studies_nn.py").tiny
    with watching() as saved:
        study.run_study(str(tmp_path), config=tiny(), progress=False)
    _check(saved, "minirad study nn")


@pytest.mark.slow
def test_the_papers_neural_network_figures_read_at_the_site_width(tmp_path):
    from minirad.studies.nn import figures

    tiny = _their_tests("studies/nn/test_studies_figures.py").tiny
    with watching() as saved:
        figures.run_figures(str(tmp_path), tiny(iterations=4, evaluations=2, seeds=(0, 1)),
                            progress=False)
    _check(saved, "minirad study nn --paper-figures")


@pytest.mark.slow
def test_the_pde_study_figures_read_at_the_site_width(tmp_path):
    import io

    from minirad.studies.pde import study

    tiny = _their_tests("studies/pde/test_pde_study.py").TINY
    with watching() as saved:
        study.run_study(str(tmp_path), tiny, progress=study.Progress(io.StringIO()))
    _check(saved, "minirad study pde")


def test_figure_7a_reads_at_the_site_width(tmp_path):
    from minirad.studies.pde import sampling

    with watching() as saved:
        sampling.run_figure(str(tmp_path), n_steps=64)
    _check(saved, "minirad study pde --paper-figures")
