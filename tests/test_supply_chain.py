"""Guards against the litellm supply-chain incident (1.82.7 / 1.82.8 shipped a .pth stealer)."""

import re
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

from replay_core.config import PROJECT_ROOT

EXPECTED_PTH = {"distutils-precedence.pth"}
EDITABLE_PTH = re.compile(r"^__editable__\.agent_replay-[\d.]+\.pth$")


def test_no_unexpected_pth_files():
    site = Path(sysconfig.get_paths()["purelib"])
    found = {p.name for p in site.glob("*.pth")}
    unexpected = {n for n in found - EXPECTED_PTH if not EDITABLE_PTH.match(n)}
    assert not unexpected, f"unexpected .pth files in {site}: {sorted(unexpected)} — inspect them before anything else"


def test_litellm_pinned_past_the_bad_releases():
    pinned = re.search(r"^litellm==([\d.]+)$", (PROJECT_ROOT / "requirements.txt").read_text(), re.M)
    assert pinned, "litellm must be pinned exactly"
    major, minor, patch = (int(x) for x in pinned.group(1).split("."))
    assert (major, minor) >= (1, 84)
    assert version("litellm") == pinned.group(1)


def test_importing_the_core_does_not_import_litellm_or_streamlit():
    import subprocess

    code = (
        "import replay_core, replay_core.storage.store, replay_core.ingest.pipeline, replay_core.understand.timeline, "
        "replay_core.understand.snapshot, replay_core.cli, sys;"
        "print(sorted(m for m in ('litellm', 'streamlit') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_nothing_imports_litellm_proxy():
    offenders = [
        str(p.relative_to(PROJECT_ROOT))
        for folder in ("replay_core", "pages", "ui", "bench")
        for p in (PROJECT_ROOT / folder).rglob("*.py")
        if re.search(r"(from|import)\s+litellm\.proxy", p.read_text())
    ]
    assert offenders == []
