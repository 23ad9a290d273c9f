"""The app as someone gets it with pip: the sdist and the wheel built from this tree, the wheel installed
into a fresh virtualenv outside the repository, and `agent-replay serve --demo` started from elsewhere
serving the pages (the runs page in Chromium) and the API with the 18 demo runs; and the rules that make it
work from anywhere (where the data directory is, which flags Streamlit gets).

The fresh virtualenv sees the running interpreter's installed dependencies (a .pth line naming its
site-packages) and gets the wheel itself with --no-deps: installing Streamlit, polars and litellm from the
index would take minutes. The project's own files come only from the wheel (checked).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest

from replay_core import config
from replay_core.cli.serve import answering, free_port, streamlit_flags

REPO = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
DEMO_RUNS = sorted(p.name for p in (REPO / "data" / "demo").glob("*.jsonl"))
APP_FILES = ["streamlit_app.py", "pages/home.py", "ui/common.py", "ui/assets/strip.js", ".streamlit/config.toml"]
TOKEN = "wheel-test-token"


# this environment without what points at the repository: run from it, pip would find the tree's own metadata installed
OUTSIDE = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_REPLAY_DB_URL")}


def _run(*argv, env: dict[str, str] = OUTSIDE, **options) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], check=False, capture_output=True, text=True, timeout=300, env=env, **options)
    assert proc.returncode == 0, f"{argv}: {proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built as `python -m build` builds them (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO)
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed, its dependencies borrowed from this interpreter."""
    root = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", root)
    python = root / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--disable-pip-version-check",
        "-q",
        next(dist.glob("*.whl")),
    )
    return root


def test_the_sdist_and_the_wheel_carry_the_app(dist):
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {*APP_FILES, *(f"data/demo/{run}" for run in DEMO_RUNS)} <= names
    wheel = zipfile.ZipFile(next(dist.glob("*.whl"))).namelist()
    assert {f"agent_replay_app/{f}" for f in [*APP_FILES, *(f"data/demo/{run}" for run in DEMO_RUNS)]} <= set(wheel)
    assert "replay_core/storage/migrations/script.py.mako" in wheel
    assert any(n.startswith("replay_core/storage/migrations/versions/") for n in wheel)
    # one folder of ours for the app: no top-level ui/ or pages/ to clash with other projects
    assert {n.split("/")[0] for n in wheel} == {"replay_core", "agent_replay_app", f"agent_replay-{VERSION}.dist-info"}
    assert "agent_replay_app/setup.py" not in wheel


def test_the_installed_wheel_serves_the_demo(venv, tmp_path, browser):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = OUTSIDE | {"AGENT_REPLAY_HOME": str(tmp_path / "home"), "AGENT_REPLAY_API_TOKENS": f"viewer:{TOKEN}"}
    probe = (
        "import importlib.util, replay_core; print(replay_core.__file__); print(replay_core.__version__); "
        "print([m for m in ('ui', 'pages') if importlib.util.find_spec(m)])"
    )
    where, version, clashes = _run(venv / "bin" / "python", "-c", probe, cwd=elsewhere, env=env).stdout.split("\n")[:3]
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(REPO)
    assert (version, clashes) == (VERSION, "[]")
    assert _run(venv / "bin" / "agent-replay", "--version", cwd=elsewhere, env=env).stdout.strip() == f"agent-replay {VERSION}"

    port = free_port()
    log = tmp_path / "serve.log"
    argv = [venv / "bin" / "agent-replay", "serve", "--demo", "--port", str(port), "--db", f"sqlite:///{tmp_path}/x.db"]
    with answering(argv, f"http://127.0.0.1:{port}", "/_stcore/health", timeout=180, log=log, cwd=elsewhere, env=env) as base:
        assert f"loaded {len(DEMO_RUNS)} demo sessions" in log.read_text()
        assert httpx.get(base, timeout=30).status_code == 200
        listed = httpx.get(
            f"{base}/api/v1/sessions", params={"limit": 100}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        assert listed.status_code == 200, listed.text
        assert listed.json()["total"] == len(DEMO_RUNS) == 18
        assert len(listed.json()["sessions"]) == 18
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{base}/runs")
        page.get_by_text("18 runs:").wait_for(timeout=60_000)  # the runs page's summary line, as a person sees it
        page.locator("[data-testid=stDataFrame]").first.wait_for()  # the table of runs (drawn on a canvas)


def test_the_data_directory_is_home_else_the_checkout_else_the_users(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_REPLAY_HOME", raising=False)
    monkeypatch.delenv("AGENT_REPLAY_DB_URL", raising=False)
    assert config.in_checkout() and config.data_dir() == REPO / "data"
    assert config.database_url() == f"sqlite:///{REPO / 'data' / 'agent_replay.db'}"
    assert config.demo_dir() == REPO / "data" / "demo"
    monkeypatch.setattr(config, "PROJECT_ROOT", tmp_path / "site-packages")  # as from an installed wheel
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert config.data_dir() == tmp_path / "xdg" / "agent-replay"
    assert not config.in_checkout() and config.data_dir().is_dir()
    monkeypatch.setenv("AGENT_REPLAY_HOME", str(tmp_path / "home"))
    assert config.data_dir() == tmp_path / "home" and (tmp_path / "home").is_dir()
    assert config.database_url() == f"sqlite:///{tmp_path / 'home' / 'agent_replay.db'}"


def test_streamlit_gets_the_apps_config_as_flags_then_where_to_listen():
    flags = streamlit_flags(REPO, "0.0.0.0", 9000)
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    assert (
        given
        | {
            "--server.address": "0.0.0.0",
            "--server.port": "9000",
            "--server.headless": "true",
            "--browser.gatherUsageStats": "false",
            "--server.fileWatcherType": "none",
        }
        == given
    )
    assert (
        given["--runner.postScriptGC"] == "false"
    )  # from .streamlit/config.toml, which Streamlit reads from the working folder only
