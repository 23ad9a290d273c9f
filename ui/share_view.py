"""Share links on screen: making one (editors), the list with revoke, and the page a link opens.

The page a link opens (`/share?token=…`) is drawn from the link's own target only
(`server.shared` builds the same object for the JSON route): nothing in the address but the
token is read, so a link to one run never shows another. Text is shown as stored, through
`md()`, tables and code boxes, never as markup.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import streamlit as st

from replay_core import config
from replay_core.storage.actor import SHARE, Actor, PermissionDenied
from replay_core.storage.store import Store
from replay_core.team import shares

from .common import client_origin, fmt_when, load_run, md, run_label, status_label

EXPIRY = {"1 day": "1d", "7 days": "7d", "30 days": "30d"}
KIND_WORDS = {shares.RUN: "run", shares.COMPARE: "comparison", shares.QUEUE: "queue results"}


def _base_url() -> str:
    try:
        seen = urlsplit(st.context.url or "")
    except AttributeError:
        seen = urlsplit("")
    return config.public_url(f"{seen.scheme}://{seen.netloc}" if seen.scheme and seen.netloc else None)


def share_button(
    store: Store,
    actor: Actor,
    kind: str,
    *,
    session: str | None = None,
    other: str | None = None,
    queue: int | None = None,
    key: str,
) -> None:
    """Editors: a popover that makes a read-only link and shows it once."""
    if not actor.may(SHARE):
        return
    with st.popover(f"Share the {KIND_WORDS[kind]}", icon=":material/link:", key=f"{key}_pop"):
        st.caption("Anyone with the link sees this, read-only, without signing in, until it expires or you revoke it.")
        expiry = st.selectbox("Opens for", list(EXPIRY), index=1, key=f"{key}_exp")
        if st.button("Make the link", key=f"{key}_make", type="primary"):
            try:
                made = shares.make(
                    store,
                    kind,
                    session=session,
                    other=other,
                    queue=queue,
                    expires=shares.parse_expiry(EXPIRY[expiry]),
                    actor=actor,
                    base_url=_base_url(),
                )
            except (shares.ShareError, PermissionDenied) as exc:
                st.error(md(str(exc)))
                return
            st.session_state[f"{key}_url"] = made["url"]
        url = st.session_state.get(f"{key}_url")
        if url:
            st.code(url, language=None)
            st.caption("Copy it now: the link is shown only once (the app keeps a fingerprint of it, not the link).")


def links_admin(store: Store, actor: Actor) -> None:
    """Editors: every link made, its state and openings, with revoke."""
    if not actor.may(SHARE):
        return
    links = shares.list_links(store, actor=actor)
    if not links:
        st.caption("No share link yet. Make one from a queue's results, or here for one run or a comparison.")
    for link in links:
        what = " vs ".join(str(v) for v in link["target"].values())
        cols = st.columns([5, 1])
        cols[0].markdown(
            f"**{md(KIND_WORDS[link['kind']])}** {md(what)} · {link['state']} · made by {md(link['created_by'])} "
            f"{fmt_when(link['created_at'])} · expires {fmt_when(link['expires_at'])} · opened {link['opened']}×"
        )
        if link["state"] == "active" and cols[1].button("Revoke", key=f"revoke_{link['id']}"):
            shares.revoke(store, link["id"], actor=actor)
            st.rerun()


def share_a_run(store: Store, actor: Actor) -> None:
    """Editors: pick a run (and optionally a second one to compare) and make a link."""
    if not actor.may(SHARE):
        return
    rows = store.list_sessions(limit=200)
    labels = {r["id"]: run_label(r) for r in rows}
    sid = st.selectbox("Run", list(labels), format_func=labels.get, index=None, placeholder="Pick a run…", key="share_run")
    other = st.selectbox(
        "Compare with (optional)",
        [k for k in labels if k != sid],
        format_func=labels.get,
        index=None,
        placeholder="No comparison",
        key="share_other",
    )
    if sid:
        share_button(store, actor, shares.COMPARE if other else shares.RUN, session=sid, other=other, key=f"share_{sid}_{other}")


# ------------------------------------------------------------------ the page a link opens


def shared_page(store: Store, token: str | None) -> None:
    """What the link shows, or why it no longer does. The opening is counted once per browser session."""
    from replay_core.server.shared import shared_object

    counted = st.session_state.setdefault("share_opened", set())
    try:
        link = shares.open_link(store, token, origin=client_origin(), count=token not in counted)
    except shares.ShareNotFound:
        st.title("Link not found")
        st.error("This link does not open anything. Check that it was copied whole, or ask whoever sent it.")
        return
    except shares.ShareGone as exc:
        st.title("This link no longer opens")
        st.error(str(exc), icon="🔒")
        return
    finally:
        counted.add(token)
    st.caption(f"Shared read-only from Agent Replay · this link opens until {fmt_when(link['expires_at'])}")
    target = link["target"]
    if link["kind"] == shares.RUN:
        _run(store, target["session"])
    elif link["kind"] == shares.COMPARE:
        _comparison(shared_object(store, link))
    else:
        _queue(shared_object(store, link))


def _run(store: Store, session_id: str) -> None:
    """The run read-only, with what reviewers said of it as a whole (verdict, note, who) under its header,
    where the timeline shows it: seen with the Why, not below every step."""
    from .queue_view import run_at_a_glance

    run = load_run(store, session_id)
    if run is None:
        return
    said = [a for a in store.annotations(session_id) if a["event_id"] is None]
    run_at_a_glance(store, *run, shared=True, notes=said)
    if not said:
        st.caption("No reviewer has given a verdict on this run yet.")


def _did(step: dict | None) -> str:
    """One step of a shared comparison in words: its kind, tool and content (cut at 200 characters)."""
    if step is None:
        return ""
    args = step.get("tool_args")
    body = step.get("content") or (json.dumps(args, ensure_ascii=False) if args is not None else "")
    head = f"{step['type']}" + (f" · {step['tool_name']}" if step.get("tool_name") else "")
    body = " ".join(str(body).split())
    return f"{head}: {body[:199] + '…' if len(body) > 200 else body}" if body else head


def _comparison(obj: dict) -> None:
    st.title("Two runs compared", anchor=False)
    for tag, run in (("A", obj["runs"][0]), ("B", obj["runs"][1])):
        s = run["session"]
        st.markdown(f"**{tag}: {md(s['name'] or s['id'])}** · {md(status_label(s['status']))} · {md(run['summary'])}")
    first = obj["comparison"]["first_divergence"]
    if first:
        st.warning(md(f"First difference: {first['summary']}"), icon="🔀")
    else:
        st.success("The two runs took the same steps.")
    steps = [{s["seq"]: s for s in run["steps"]} for run in obj["runs"]]
    st.dataframe(
        [
            {
                "A step": r["a_seq"],
                "A did": _did(steps[0].get(r["a_seq"])),
                "same": "yes" if r["same"] else (r["kind"] or "differs"),
                "B did": _did(steps[1].get(r["b_seq"])),
                "B step": r["b_seq"],
            }
            for r in obj["comparison"]["aligned"]
        ],
        hide_index=True,
        key="shared_pairs",
        column_config={"A did": st.column_config.TextColumn(width="large"), "B did": st.column_config.TextColumn(width="large")},
        row_height=66,
    )
    only = obj["comparison"]
    if only["only_a"] or only["only_b"]:
        st.caption(
            f"Steps only in A: {', '.join(map(str, only['only_a'])) or 'none'} · only in B: "
            f"{', '.join(map(str, only['only_b'])) or 'none'}"
        )


def _queue(obj: dict) -> None:
    from .queue_view import item_row

    q = obj["queue"]
    st.title(md(q["name"]), anchor=False)
    p = q["progress"]
    st.progress(p["percent"] / 100, text=f"{p['items_done']} of {p['items']} runs done · {p['reviews']} of {p['needed']} reviews")
    criteria = [c["name"] for c in q["rubric"]["criteria"]]
    st.dataframe([item_row(it, criteria) for it in obj["items"]], hide_index=True)
    if obj["agreement"]["items"]:
        st.caption(f"Reviewers agreed on {obj['agreement']['mean']:.0%} of pairs, over {obj['agreement']['items']} runs.")
