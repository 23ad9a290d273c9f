"""`agent-replay serve`: the app (its pages and the HTTP API, one process) started with one command,
from a checkout or from an installed wheel alike."""

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from .admin import load_demo_runs, upgraded
from .options import DbOption, fail, out

commands = typer.Typer()


@commands.command("serve")
def serve_cmd(
    demo: Annotated[bool, typer.Option("--demo", help="Load the demo runs first, if the database has no runs.")] = False,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. Beyond loopback the app asks for a password or "
            "OIDC sign-in (AGENT_REPLAY_ALLOW_OPEN=1 lets it open without).",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8501,
    db: DbOption = None,
) -> None:
    """Start the app: upgrade the database, load the demo runs with --demo, then serve the pages and the HTTP API."""
    from .. import config

    url = config.database_url(db)
    store = upgraded(url)
    if demo and not load_demo_runs(store, force=False):
        out.print("database already has sessions; demo not loaded")
    store.close()
    try:
        script = config.app_dir() / "streamlit_app.py"
    except FileNotFoundError as exc:
        fail(str(exc))
    # -P: the working folder stays off sys.path (Streamlit puts the app's folder there, which holds ui/ and pages/)
    argv = [sys.executable, "-P", "-m", "streamlit", "run", str(script), *streamlit_flags(script.parent, host, port)]
    # uvicorn would take X-Forwarded-For from any 127.0.0.1 peer; only AGENT_REPLAY_TRUSTED_PROXIES count here
    # (server/origins.py). Set before uvicorn reads it, so the app's own guard has nothing to undo.
    env = {**os.environ, "AGENT_REPLAY_DB_URL": url, "FORWARDED_ALLOW_IPS": ""}
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":  # the server takes this process's place: signals (Ctrl-C, a container's stop) reach it
        os.execve(sys.executable, argv, env)
    raise typer.Exit(subprocess.call(argv, env=env))


def streamlit_flags(app_dir: Path, host: str, port: int) -> list[str]:
    """`streamlit run`'s options: the app's .streamlit/config.toml as flags (Streamlit reads that file from
    the working folder only, which for an installed app is anywhere), then where to listen, headless,
    no usage statistics and no file watcher, as `make run` always started it."""
    import tomllib

    with (app_dir / ".streamlit" / "config.toml").open("rb") as fh:
        options = _dotted(tomllib.load(fh))
    options |= {
        "server.address": host,
        "server.port": port,
        "server.headless": True,
        "browser.gatherUsageStats": False,
        "server.fileWatcherType": "none",
    }
    return [
        part
        for name, value in options.items()
        for part in (f"--{name}", str(value).lower() if isinstance(value, bool) else str(value))
    ]


def _dotted(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"server": {"port": 1}} as {"server.port": 1}."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat |= _dotted(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def free_port() -> int:
    """A port of 127.0.0.1 free now, for a server started next."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def answering(
    argv: list[str], base: str, health: str, *, timeout: float = 60, log: Path | None = None, **popen: Any
) -> Iterator[str]:
    """Run `argv`, a server at `base`, until `health` answers 200; yield `base`; stop it. For the tests and scripts
    that serve the app or the API on a free port: a server that exits first is reported with its output (kept in
    `log` when given)."""
    import httpx

    with log.open("w+b") if log else tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, **popen)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    out.seek(0)
                    raise RuntimeError(f"{argv[0]} exited with {proc.returncode}:\n{out.read().decode(errors='replace')}")
                try:
                    if httpx.get(f"{base}{health}", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{argv[0]} did not answer {health} within {timeout:g} s")
                time.sleep(0.2)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
