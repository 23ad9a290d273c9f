"""Agent Replay: the UI and the HTTP API in one process (`streamlit run streamlit_app.py`).

`streamlit run` finds the `st.App` below and serves it with uvicorn: the pages, plus
the routes of `replay_core.server.api` (`/api/v1/...`, `/v1/traces`, `/healthz`). Each
browser session then runs this file as the page script: the sign-in door, then the
navigation between the pages that exist.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

from replay_core.server import api, sockets

HERE = Path(__file__).resolve().parent

# (file, title, icon, url path, section)
PAGES = [
    ("pages/home.py", "Start", ":material/home:", "home", "Runs"),
    ("pages/runs.py", "Runs", ":material/list:", "runs", "Runs"),
    ("pages/timeline.py", "Timeline", ":material/timeline:", "timeline", "Runs"),
    ("pages/threads.py", "Threads", ":material/forum:", "threads", "Runs"),
    ("pages/live.py", "Live", ":material/sensors:", "live", "Runs"),
    ("pages/review.py", "Review", ":material/rate_review:", "review", "Runs"),
    ("pages/queues.py", "Review queues", ":material/checklist:", "queues", "Runs"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:", "compare", "Tools"),
    ("pages/whatif.py", "What-if", ":material/science:", "whatif", "Tools"),
    ("pages/playground.py", "Playground", ":material/edit_note:", "playground", "Tools"),
    ("pages/experiments.py", "Experiments", ":material/labs:", "experiments", "Tools"),
    ("pages/analytics.py", "Analytics", ":material/monitoring:", "analytics", "Tools"),
    ("pages/monitors.py", "Monitors", ":material/notifications:", "monitors", "Tools"),
    ("pages/import_runs.py", "Import", ":material/upload_file:", "import", "Tools"),
]

# Opened by a share link only (never listed); the door lets it through alone, with no navigation.
SHARE_PAGE = ("pages/share.py", "Shared link", ":material/link:", "share")


def navigation(*, visible: bool):
    """All pages, registered even behind the door, so a deep link survives signing in."""
    sections: dict[str, list[st.Page]] = {}
    for path, title, icon, url, section in PAGES:
        page = st.Page(path, title=title, icon=icon, url_path=url, default=url == "home")
        sections.setdefault(section, []).append(page)
    path, title, icon, url = SHARE_PAGE
    sections["Runs"].append(st.Page(path, title=title, icon=icon, url_path=url, visibility="hidden"))
    # every page listed: past twelve Streamlit would fold the last ones (Import among them) behind "View more"
    return st.navigation(sections, position="sidebar" if visible else "hidden", expanded=True)


def main() -> None:
    from ui.common import expire_idle, get_store, warm_up
    from ui.login import sign_in, sign_out_button, signed_in_role

    st.set_page_config(page_title="Agent Replay", page_icon="⏪", layout="wide")
    role = signed_in_role()
    nav = navigation(visible=role is not None and "token" not in st.query_params)
    if nav.url_path == SHARE_PAGE[3]:  # a share link: no sign-in, nothing else reachable from it
        nav.run()
        return
    if role is None:
        sign_in()
    expire_idle(get_store())
    sign_out_button()
    nav.run()
    warm_up()  # after the page: the first one after a start is not slowed by it


if __name__ == "__main__":  # the page script of a browser session (or of AppTest)
    main()
else:  # imported by `streamlit run` / uvicorn: the server
    from streamlit.runtime.pages_manager import PagesManager

    # A `pages/` folder makes Streamlit run a deep link such as /runs straight from that
    # folder (old multipage mode), skipping this script and its sign-in door, until some
    # session happens to call st.navigation. This app always navigates with st.navigation.
    PagesManager.uses_pages_directory = False

    def refuse_to_serve_open() -> None:
        """At start-up: no door and an address beyond loopback means every visitor is an editor; stop."""
        import os
        import sys

        from streamlit import config as st_config

        from replay_core.server.auth import open_to_the_network_refusal

        refusal = open_to_the_network_refusal(st_config.get_option("server.address"), os.environ)
        if refusal:
            print(f"agent-replay: {refusal}", file=sys.stderr, flush=True)
            os._exit(2)  # before anything opened; a SystemExit here would end in uvicorn's traceback

    @asynccontextmanager
    async def lifespan(_app):
        import asyncio
        from functools import cache

        from replay_core.storage import retention
        from replay_core.storage.store import Store

        refuse_to_serve_open()
        sockets.tcp_nodelay_on_listening_sockets()
        from replay_core.monitors import check as monitors

        store = cache(Store)
        sweeper = asyncio.create_task(retention.run_periodically(store))
        judge = asyncio.create_task(monitors.run_periodically(store))
        yield
        sweeper.cancel()
        judge.cancel()

    from starlette.middleware import Middleware

    from replay_core.server.body_budget import BodyBudget
    from replay_core.server.origins import TrustedProxies, distrust_uvicorn_proxy_headers, trusted_proxies
    from ui.deep_links import DeepLinks
    from ui.early_open import EarlyOpen

    distrust_uvicorn_proxy_headers()  # forwarded headers count only from AGENT_REPLAY_TRUSTED_PROXIES (server/origins.py)
    try:
        proxies = trusted_proxies()
        api_routes = api.routes()  # reads the API tokens: a holder's name too long to keep stops the start (server/auth.py)
    except ValueError as exc:
        import os
        import sys

        print(f"agent-replay: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    app = st.App(
        HERE / "streamlit_app.py",
        routes=api_routes,
        lifespan=lifespan,
        middleware=[
            Middleware(TrustedProxies, proxies=proxies),
            Middleware(BodyBudget),
            Middleware(EarlyOpen),
            Middleware(DeepLinks),
        ],
    )
