"""Write the pictures of figures/explore/: each panel of the explorable page, as a
headless Chromium shows it at 1280 x 800 (and one at phone width), and the
Figure 1 page the labs link to.

    PYTHONPATH=. python tests/explore_screenshots.py figures/explore
"""

import os
import sys

import browser
from oracles import small_mlp

from minirad import examples
from minirad.draw.explore import explore


def shoot(folder: str) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    pages = {"figure1": explore(examples.figure1(), title="The RAD paper's Figure 1"),
             "lecture": explore(examples.lecture(), title="The lecture's example"),
             "mlp": explore(small_mlp()[0], title="A two-layer ReLU network (batch of 4)")}
    paths = {name: page.save(os.path.join(folder, f"{name}.html")) for name, page in
             pages.items()}
    written = [paths["figure1"]]
    chromium = browser.Browser()
    try:
        def picture(name, steps, page, **size):
            chromium.open(paths[page], **size)
            chromium.evaluate(steps)
            out = os.path.join(folder, f"{name}.png")
            chromium.screenshot(out)
            if chromium.errors:
                raise RuntimeError(f"{name}: {chromium.errors}")
            written.append(out)

        click = "document.getElementById('{}').click();".format
        picture("exact", click("tab-exact")
                + "const s = document.getElementById('sweep-choice'); s.value = '2';"
                + "s.dispatchEvent(new Event('change'));"
                + click("sweep-step") * 4
                + "document.querySelector('[data-vertex=\"4\"]')"
                + ".dispatchEvent(new MouseEvent('mouseenter'));", "figure1")
        picture("eliminate", click("tab-eliminate") + click("play-markowitz")
                + click("elim-pause") + click("elim-step") * 2, "figure1")
        picture("paths", click("tab-paths") + click("path-1"), "figure1")
        picture("sample", click("tab-sample") + click("single-next") + click("draw-all"),
                "lecture")
        picture("memory", click("tab-memory")
                + "const r = document.getElementById('memory-slider'); r.value = '3';"
                + "r.dispatchEvent(new Event('input'));", "mlp")
        picture("blocks", click("tab-eliminate") + click("play-reverse") + click("elim-pause")
                + click("elim-step"), "mlp")
        picture("second_level", click("tab-sample")
                + "const e = document.getElementById('sample-inside'); e.value = '1';"
                + "e.dispatchEvent(new Event('change'));" + click("draw-all"), "mlp")
        picture("phone", click("tab-eliminate") + click("play-reverse") + click("elim-pause")
                + click("elim-step"), "lecture", width=390, height=844, mobile=True)
    finally:
        chromium.close()
    for name in ("lecture", "mlp"):  # only the Figure 1 page is kept: the labs link to it
        os.remove(paths[name])
    return written


if __name__ == "__main__":
    for path in shoot(sys.argv[1] if len(sys.argv) > 1 else "figures/explore"):
        print(path)
