"""Where a request comes from: the TCP peer, unless that peer is a proxy this deployment trusts.

`X-Forwarded-For` and `Forwarded` are only words a client sends: anyone can set them, so they
are read only when the peer is one of AGENT_REPLAY_TRUSTED_PROXIES (comma-separated addresses or
CIDR networks, e.g. "127.0.0.1,10.0.0.0/8": the reverse proxy in front of the app; unset: none).
Then the client is the right-most address in the chain that is not itself a trusted proxy (each
proxy appends the address it saw, so the ones to its left are the client's own claims).

`TrustedProxies` is the ASGI middleware that puts that address in the scope's `client` for every
HTTP request and websocket (the sign-in throttle, the share-link throttle and the audit log key on
it). uvicorn's own proxy-headers middleware trusts 127.0.0.1 by default, which let any local
process pick its address per request; `distrust_uvicorn_proxy_headers` turns it off for the app.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Any

TRUSTED_PROXIES_KEY = "AGENT_REPLAY_TRUSTED_PROXIES"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_proxies(env: Mapping[str, str] | None = None) -> tuple[Network, ...]:
    """The configured proxies as networks (a bare address is a /32 or /128); ValueError naming a bad entry."""
    env = os.environ if env is None else env
    out = []
    for entry in (env.get(TRUSTED_PROXIES_KEY) or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        try:
            out.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{TRUSTED_PROXIES_KEY}: {entry!r} is not an IP address or a CIDR network") from None
    return tuple(out)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as a forwarding header writes it: 1.2.3.4, 1.2.3.4:5678, [::1]:80, "[::1]"; None otherwise."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, proxies: tuple[Network, ...]) -> bool:
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in proxies)


def _forwarded_chain(headers: list[tuple[bytes, bytes]]) -> list[str]:
    """The addresses proxies recorded, oldest first: `Forwarded: for=…` when sent (RFC 7239), else `X-Forwarded-For`."""
    forwarded = [v.decode("latin-1") for k, v in headers if k.lower() == b"forwarded"]
    if forwarded:
        chain = []
        for element in ",".join(forwarded).split(","):
            for pair in element.split(";"):
                name, _, value = pair.partition("=")
                if name.strip().lower() == "for":
                    chain.append(value)
        return chain
    xff = [v.decode("latin-1") for k, v in headers if k.lower() == b"x-forwarded-for"]
    return [part for part in ",".join(xff).split(",") if part.strip()]


def client_host(peer: str | None, headers: list[tuple[bytes, bytes]], proxies: tuple[Network, ...]) -> str | None:
    """The client's address: `peer` itself unless it is a trusted proxy; then the right-most address of the
    forwarding chain that is not a trusted proxy (the peer where the chain holds nothing usable)."""
    if peer is None or not _is_trusted(_address(peer), proxies):
        return peer
    for hop in reversed(_forwarded_chain(headers)):
        address = _address(hop)
        if address is None:
            return peer  # "unknown" or an obfuscated name: nothing to trust beyond the proxy
        if not _is_trusted(address, proxies):
            return str(address)
    return peer


class TrustedProxies:
    """ASGI middleware: the scope's `client` (and, from a trusted proxy, `scheme` from X-Forwarded-Proto) as above."""

    def __init__(self, app: Any, proxies: tuple[Network, ...] | None = None):
        self.app = app
        self.proxies = trusted_proxies() if proxies is None else proxies

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("client"):
            peer, port = scope["client"]
            host = client_host(peer, scope.get("headers") or [], self.proxies)
            if host != peer:
                scope = {**scope, "client": (host, 0)}
                proto = next((v.decode("latin-1").strip() for k, v in scope["headers"] if k == b"x-forwarded-proto"), None)
                if proto in ("http", "https"):
                    scope["scheme"] = proto.replace("http", "ws") if scope["type"] == "websocket" else proto
        await self.app(scope, receive, send)


def distrust_uvicorn_proxy_headers() -> None:
    """Make uvicorn (which serves the app: `streamlit run`) trust no proxy itself: it would take
    X-Forwarded-For from any 127.0.0.1 peer before TrustedProxies sees the request. `streamlit run`
    hands uvicorn the app as an import string, so uvicorn read its FORWARDED_ALLOW_IPS before this
    module's app was imported, and wraps the app in its ProxyHeadersMiddleware right after: called
    while the app is imported, this leaves the app unwrapped (and sets the variable for a later start)."""
    os.environ["FORWARDED_ALLOW_IPS"] = ""
    try:
        import uvicorn.config
    except ImportError:  # served by something else: its own settings apply
        return
    uvicorn.config.ProxyHeadersMiddleware = _unwrapped  # type: ignore[assignment,misc]


def _unwrapped(app: Any, trusted_hosts: Any = None) -> Any:
    return app
