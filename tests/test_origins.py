"""A client's address is the TCP peer; forwarding headers count only from AGENT_REPLAY_TRUSTED_PROXIES.

What keys on it: the share-link throttle and the audit log here (over the API, and through the real
`streamlit run` with its uvicorn), the password throttle through the same scope `client` (websocket).
"""

from __future__ import annotations

import ipaddress

import httpx
import pytest
from apptest_helpers import served_app
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient

from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.server.origins import TRUSTED_PROXIES_KEY, TrustedProxies, client_host, trusted_proxies
from replay_core.storage.store import Store
from replay_core.team.shares import WRONG_TOKENS

LOCAL = trusted_proxies({TRUSTED_PROXIES_KEY: "127.0.0.1, 10.0.0.0/8, ::1"})


def xff(value: str) -> list[tuple[bytes, bytes]]:
    return [(b"x-forwarded-for", value.encode())]


def test_the_chain_is_read_only_from_a_trusted_proxy():
    assert client_host("127.0.0.1", xff("6.6.6.6"), ()) == "127.0.0.1"
    assert client_host("192.0.2.7", xff("6.6.6.6"), LOCAL) == "192.0.2.7"
    assert client_host("127.0.0.1", xff("6.6.6.6"), LOCAL) == "6.6.6.6"
    # the right-most address no trusted proxy wrote: what the client typed to the left is not believed
    assert client_host("127.0.0.1", xff("1.1.1.1, 6.6.6.6, 10.0.0.5"), LOCAL) == "6.6.6.6"
    assert client_host("127.0.0.1", [(b"x-forwarded-for", b"1.1.1.1"), (b"x-forwarded-for", b"6.6.6.6:4431")], LOCAL) == "6.6.6.6"
    forwarded = [(b"forwarded", b'for=1.1.1.1, for="[2001:db8::7]:443";proto=https'), *xff("9.9.9.9")]
    assert client_host("::1", forwarded, LOCAL) == "2001:db8::7"
    assert client_host("127.0.0.1", xff("unknown"), LOCAL) == "127.0.0.1"
    assert client_host("127.0.0.1", [], LOCAL) == "127.0.0.1"
    assert client_host("::ffff:127.0.0.1", xff("6.6.6.6"), LOCAL) == "6.6.6.6"
    with pytest.raises(ValueError, match="AGENT_REPLAY_TRUSTED_PROXIES: 'proxy.local' is not an IP address"):
        trusted_proxies({TRUSTED_PROXIES_KEY: "127.0.0.1,proxy.local"})


def _trusted(address: str) -> bool:
    a = ipaddress.ip_address(address)
    return any(a.version == net.version and a in net for net in LOCAL)


@given(peer=st.ip_addresses().map(str), chain=st.lists(st.text(max_size=40), max_size=5))
def test_only_a_trusted_peer_can_name_another_client(peer, chain):
    """From any other peer the answer is the peer, whatever it sends; from a trusted proxy it is the
    peer or an address no trusted proxy holds."""
    text = ",".join(chain).encode("latin-1", "replace")
    headers = [(b"x-forwarded-for", text), (b"forwarded", b"for=" + text)]
    found = client_host(peer, headers, LOCAL)
    if not _trusted(peer):
        assert found == peer
    else:
        assert found == peer or not _trusted(found)


def test_websockets_get_the_same_address():
    async def echo(request):
        return JSONResponse({"client": request.client.host})

    async def ws(websocket):
        await websocket.accept()
        await websocket.send_json({"client": websocket.client.host})
        await websocket.close()

    def app(proxies):
        return Starlette(
            routes=[Route("/", echo), WebSocketRoute("/ws", ws)], middleware=[Middleware(TrustedProxies, proxies=proxies)]
        )

    for proxies, seen in (((), "127.0.0.1"), (LOCAL, "6.6.6.6")):
        with TestClient(app(proxies), client=("127.0.0.1", 4000)) as c:
            assert c.get("/", headers={"X-Forwarded-For": "6.6.6.6"}).json()["client"] == seen
            with c.websocket_connect("/ws", headers={"X-Forwarded-For": "6.6.6.6"}) as sock:
                assert sock.receive_json()["client"] == seen


def wrong_tokens(get, n: int = 12) -> list[int]:
    return [
        get(f"/api/v1/share/not-a-token-{i:04d}", headers={"X-Forwarded-For": f"203.0.113.{i + 1}"}).status_code for i in range(n)
    ]


def share_origins(store) -> list[str]:
    return sorted({e["origin"] for e in store.audit_entries(actions=["share"])})


def test_wrong_share_tokens_are_logged_and_slowed_by_the_real_peer(store, monkeypatch):
    monkeypatch.delenv(TRUSTED_PROXIES_KEY, raising=False)
    with TestClient(create_app(store, access=Access(api_tokens=("t-0000",))), client=("127.0.0.1", 4000)) as c:
        codes = wrong_tokens(c.get)
        assert codes == [404] * WRONG_TOKENS.free + [429] * (12 - WRONG_TOKENS.free)
        r = c.get("/api/v1/share/another", headers={"X-Forwarded-For": "198.51.100.9"})
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
    assert share_origins(store) == ["127.0.0.1"]
    assert [e["outcome"] for e in store.audit_entries(actions=["share"])] == ["unknown"] * WRONG_TOKENS.free


def test_a_trusted_proxy_s_header_is_the_origin(store, monkeypatch):
    monkeypatch.setenv(TRUSTED_PROXIES_KEY, "127.0.0.1")
    with TestClient(create_app(store, access=Access(api_tokens=("t-0000",))), client=("127.0.0.1", 4000)) as c:
        assert wrong_tokens(c.get) == [404] * 12  # twelve addresses, one try each
    assert share_origins(store) == sorted(f"203.0.113.{i + 1}" for i in range(12))


def test_the_served_app_trusts_forwarded_headers_only_from_configured_proxies(tmp_path):
    """`streamlit run`: uvicorn itself would take X-Forwarded-For from any loopback peer."""
    for trusted, expected in (("", ["127.0.0.1"]), ("127.0.0.1", sorted(f"203.0.113.{i + 1}" for i in range(12)))):
        url = f"sqlite:///{tmp_path / f'served{bool(trusted)}.db'}"
        Store(url).close()
        with served_app(url, AGENT_REPLAY_API_TOKENS="t-0000", **{TRUSTED_PROXIES_KEY: trusted}) as base:
            with httpx.Client(base_url=base) as c:
                codes = wrong_tokens(c.get)
        store = Store(url)
        try:
            assert share_origins(store) == expected
            assert (429 in codes) == (not trusted)
        finally:
            store.close()


@pytest.mark.browser
def test_wrong_passwords_with_forged_addresses_are_throttled_in_the_browser(browser, tmp_path):
    """The red team's probe: 12 wrong passwords from 127.0.0.1, each page load (a new session, no cookies kept)
    with a new X-Forwarded-For. Streamlit names a loopback visitor "browser"; what matters is that it is one
    address, not twelve. One tab for the twelve: a new page would fetch and compile Streamlit's scripts again."""
    url = f"sqlite:///{tmp_path / 'door.db'}"
    Store(url).close()
    answers = []
    with served_app(url, AGENT_REPLAY_EDITOR_PASSWORD="change-0000") as base:
        pg = browser.new_page()
        for i in range(12):
            pg.context.clear_cookies()
            pg.set_extra_http_headers({"X-Forwarded-For": f"203.0.113.{i + 1}"})
            pg.goto(base)
            pg.get_by_label("Password", exact=True).fill("wrong-password")
            pg.get_by_role("button", name="Sign in").click()
            said = pg.get_by_text("That password is not right").or_(pg.get_by_text("Too many wrong passwords"))
            said.first.wait_for(timeout=30_000)
            answers.append("looked at" if "not right" in said.first.inner_text() else "throttled")
    store = Store(url)
    try:
        lines = store.audit_entries(actions=["sign_in"])
        assert {e["origin"] for e in lines} == {"browser"}
        outcomes = [e["outcome"] for e in lines]
        # 3 free failures, then waits of 2, 4, 8, 16 s: within the ~30 s of twelve page loads at most 7 are looked at
        assert 3 <= outcomes.count("failed") <= 7 and outcomes.count("throttled") == 12 - outcomes.count("failed")
        assert answers[:2] == ["looked at"] * 2 and answers.count("throttled") >= 5
    finally:
        store.close()
