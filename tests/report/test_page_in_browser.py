"""The HTML page as a reader sees it: rendered by a real headless Chromium (Debian's ``chromium``;
Playwright's own browser downloads are not reachable here), screenshotted, and the pixels checked:
the page opens on the verdict, in red when a target under test is broken, green when all holds,
and the plots are drawn. Skipped cleanly where no browser can be had (``.ci/run`` installs one)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
#: The h1's colours (parity.report_html.STYLE): the verdict line, the first thing on the page.
RED, GREEN = (0xB0, 0x00, 0x20), (0x11, 0x69, 0x1F)

pytestmark = [pytest.mark.long, pytest.mark.needs("chromium")]


def browser() -> str:
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        pytest.skip("no headless Chromium on PATH (apt-get install chromium)")
    return found


def screenshot(page, tmp_path, width=1280, height=900):
    """A PNG of ``page`` at ``width`` x ``height``, as headless Chromium draws it."""
    from PIL import Image

    tmp_path.mkdir(parents=True, exist_ok=True)
    html, png = tmp_path / "page.html", tmp_path / "page.png"
    html.write_text(page)
    subprocess.run(
        [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},{height}", f"--screenshot={png}",
         html.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    return Image.open(png).convert("RGB")


def share(image, colour, box, tolerance=40) -> float:
    """The fraction of pixels in ``box`` within ``tolerance`` of ``colour``."""
    import numpy as np

    region = np.asarray(image.crop(box), dtype=np.int16)
    return float((np.abs(region - np.array(colour, dtype=np.int16)) <= tolerance).all(axis=-1).mean())


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    """The page of a run with a broken target of the user's (a trainer that divides by the wrong
    count, expected to pass), and of a passing run (impl and the controls)."""
    from dataclasses import replace

    from parity.report.html import format_html
    from parity.report.model import Options
    from parity.report.scenarios import run_report
    from parity.targets import default_targets, get_target

    broken = replace(get_target("known-bug:logits-local-mean"), name="my-broken", expect="pass")
    controls = [t for t in default_targets().values() if t.is_known_bug] + [get_target("impl")]
    only, quiet = ["dataset-cache", "training-run"], lambda message: None
    failing = Options(under_test=("my-broken",))
    return {
        "broken": format_html(run_report([*controls, broken], failing, only, quiet), failing),
        "impl": format_html(run_report(controls, Options(), only, quiet), Options()),
    }


def test_the_page_opens_on_a_red_verdict_when_a_target_under_test_is_broken(pages, tmp_path):
    image = screenshot(pages["broken"], tmp_path)
    heading = (0, 0, image.width, 110)
    assert share(image, RED, heading) > 0.01 and share(image, GREEN, heading) < 0.001


def test_the_page_opens_on_a_green_verdict_when_all_holds(pages, tmp_path):
    image = screenshot(pages["impl"], tmp_path)
    heading = (0, 0, image.width, 110)
    assert share(image, GREEN, heading) > 0.01 and share(image, RED, heading) < 0.001


def test_the_plots_are_drawn(pages, tmp_path):
    """matplotlib's red is drawn: the broken run's dashed line and points on its page's first two screens
    (its dataset-cache, the controls' own, is collapsed at the end), and the differing dataset positions
    filling a visible part of the passing page, where that scenario is impl's own."""
    red = (0xD6, 0x27, 0x28)
    broken = screenshot(pages["broken"], tmp_path / "broken", height=2000)
    assert share(broken, red, (0, 0, broken.width, broken.height), tolerance=30) > 0.0005
    passing = screenshot(pages["impl"], tmp_path / "impl", height=6000)
    assert share(passing, red, (0, 0, passing.width, passing.height), tolerance=30) > 0.002
