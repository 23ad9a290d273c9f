"""scripts/screenshots.py, as `make screenshots` runs it, on one view: a real PNG of the app, not a blank page."""

from __future__ import annotations

import sys

import pytest
from apptest_helpers import REPO
from PIL import Image

pytestmark = pytest.mark.browser


def test_the_screenshot_script_saves_a_drawn_page(chromium, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import screenshots

    saved = screenshots.shoot(tmp_path, ["runs"], chromium)
    sys.modules.pop("screenshots", None)
    assert saved == [tmp_path / "runs.png"]
    image = Image.open(saved[0]).convert("RGB")
    assert image.size == (1440, 900)
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 20  # text, a table and the sidebar: far more than a blank page's one
    assert saved[0].stat().st_size < screenshots.MAX_BYTES
