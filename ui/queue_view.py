"""Review queues on screen: the list with progress, making one, working one run at a time, results.

Working a queue is keyboard-first with `st.button(shortcut=…)` (Streamlit ignores a plain
key while the focus is in a text box, so typing a note never fires one): 1–9 pick a
verdict, N saves and moves on, S skips. Nothing is preselected. Every widget of the rubric
is keyed by the item, so the next run starts blank without clearing anything, while the
reviewer's name lives in `st.session_state["reviewer"]` and survives saves and pages.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from replay_core.events import SessionStatus
from replay_core.storage.actor import MANAGE_QUEUES, REPLAY, SHARE, WORK_QUEUE, Actor, PermissionDenied
from replay_core.storage.store import SessionFilter, Store
from replay_core.team import queues
from replay_core.understand.explain import EXPLAINED, explain
from replay_core.understand.structure import Structure
from replay_core.understand.timeline import Timeline

from . import components
from . import step_view as sv
from . import timeline_view as tv
from .common import current_actor, fmt_when, load_run, md, run_label, short, status_label, verified_name

SINCE = {"any time": None, "the last 24 hours": "1d", "the last 7 days": "7d", "the last 30 days": "30d"}
SAVE_KEY, SKIP_KEY = "N", "S"
PASS_FAIL = {queues.PASS: "✅ pass", queues.FAIL: "❌ fail"}


def reviewer_box() -> str | None:
    """'Your name', remembered for the browser session; no box for a person who signed in as themselves."""
    signed = verified_name()
    if signed:
        st.caption(f"Reviewing as **{md(signed)}** (signed in)")
        return signed

    name = st.session_state.get("reviewer")
    if name and not st.session_state.get(RENAMING):
        # a name once given is shown, not left in an open box: the next key is a verdict's, not the name's ("Dana2")
        if st.session_state.pop(JUST_NAMED, False):
            components.let_go_of_the_field(key="reviewer_named")
        with st.container(horizontal=True, gap="small"):
            st.caption(f"Reviewing as **{md(name)}**")
            st.button(
                "Change name",
                key="reviewer_change",
                type="tertiary",
                on_click=st.session_state.__setitem__,
                args=(RENAMING, True),
            )
        return name

    def keep() -> None:
        typed = (st.session_state["queue_reviewer"] or "").strip() or None
        if name and typed != name:
            st.session_state[RENAMED_FROM] = name  # the run held under the old name is let go (work_queue)
        st.session_state["reviewer"] = typed
        st.session_state[RENAMING] = False
        st.session_state[JUST_NAMED] = True

    st.text_input(
        "Your name",
        value=(name or "")[: queues.NAME_MAX],
        key="queue_reviewer",
        max_chars=queues.NAME_MAX,
        on_change=keep,
        placeholder="So the results say who reviewed what",
    )
    return st.session_state.get("reviewer")


RENAMING, RENAMED_FROM, JUST_NAMED = "reviewer_renaming", "reviewer_renamed_from", "reviewer_just_named"
NAMED_ONLY = (
    "This queue is assigned to named reviewers, and a name typed here proves nobody: sign in as yourself "
    "(with your own token, `reviewer:NAME:TOKEN`, as the password, or single sign-on) to work it."
)


def _typed_name_refused(q: dict) -> bool:
    """Behind a shared password anyone could type an assignee's name and take their runs: an assigned queue
    takes only a signed-in person there. With no door at all, everyone is this machine's user."""
    from .login import no_door

    return bool(q.get("assignees")) and verified_name() is None and not no_door()


def _open(queue_id: int | None) -> None:
    if queue_id is None:
        st.query_params.pop("queue", None)
    else:
        st.query_params["queue"] = str(queue_id)


def _progress_text(q: dict) -> str:
    return f"{q['items_done']} of {q['items']} runs done · {q['reviews']} of {q['needed']} reviews"


def queue_list(store: Store, actor: Actor, reviewer: str | None) -> None:
    made = st.session_state.pop("queue_made", None)
    if made:
        st.success(md(made))
    rows = queues.list_queues(store)
    if not rows:
        st.info(
            "No review queue yet."
            + (
                " Make one below: pick the runs, say what to look for, and who reviews."
                if actor.may(MANAGE_QUEUES)
                else " An editor makes them."
            )
        )
    for q in rows:
        with st.container(border=True):
            who = ", ".join(q["assignees"]) if q["assignees"] else "anyone"
            st.markdown(
                f"**{md(q['name'])}** · {q['items']} run{'s' if q['items'] != 1 else ''} · for {md(who)} · "
                f"{q['reviews_per_item']} review{'s' if q['reviews_per_item'] != 1 else ''} each · made by "
                f"{md(q['created_by'])} {fmt_when(q['created_at'])}"
            )
            st.progress(q["percent"] / 100, text=_progress_text(q))
            with st.container(horizontal=True, gap="small"):
                allowed = actor.may(WORK_QUEUE) and queues.may_work(q, reviewer) and not _typed_name_refused(q)
                st.button(
                    "Review these runs" if not q["done"] else "All reviewed",
                    key=f"work_{q['id']}",
                    type="primary",
                    disabled=q["done"] or not allowed,
                    on_click=_open,
                    args=(q["id"],),
                    help=None
                    if allowed
                    else NAMED_ONLY
                    if _typed_name_refused(q)
                    else "This queue is assigned to other reviewers."
                    if actor.may(WORK_QUEUE)
                    else "Viewers read results; reviewers and editors work queues.",
                )
                if actor.may(MANAGE_QUEUES) and st.button("Delete", key=f"delete_{q['id']}", icon=":material/delete:"):
                    queues.delete(store, q["id"], actor=actor)
                    st.rerun()
            with st.expander("Results"):
                results_view(store, q["id"], actor)


def results_view(store: Store, queue_id: int, actor: Actor | None = None) -> None:
    """Per run and per reviewer, as tables of text; agreement when runs have two reviews or more; CSV."""
    res = queues.results(store, queue_id)
    criteria = [c["name"] for c in res["queue"]["rubric"]["criteria"]]
    st.dataframe([item_row(it, criteria) for it in res["items"]], hide_index=True)
    if res["reviewers"]:
        st.dataframe(
            [
                {
                    "reviewer": p["reviewer"],
                    "reviews": p["reviews"],
                    "skipped": p["skipped"],
                    **{f"“{v}”": p["verdicts"].get(v, 0) for v in res["queue"]["rubric"]["verdicts"]},
                }
                for p in res["reviewers"]
            ],
            hide_index=True,
        )
    agree = res["agreement"]
    if agree["items"]:
        st.caption(
            f"Reviewers agreed on {agree['mean']:.0%} of pairs, over the {agree['items']} runs with two reviews or more "
            "(1 pair per two reviewers of a run; 100% means every pair gave the same verdict)."
        )
    st.download_button(
        "Download CSV",
        queues.to_csv(res),
        file_name=f"queue-{queue_id}.csv",
        mime="text/csv",
        key=f"csv_{queue_id}",
        icon=":material/download:",
    )
    if actor is not None and actor.may(SHARE):
        from .share_view import share_button

        share_button(store, actor, "queue", queue=queue_id, key=f"share_queue_{queue_id}")
    if actor is not None and actor.may(REPLAY):
        dataset_form(store, res)


def dataset_form(store: Store, res: dict) -> None:
    """Editors: the queue's runs as an experiments dataset, each judged by what its reviewers said it should have done."""
    from replay_core.whatif import dataset as ds

    ids, wanted = queues.dataset_cases(res)
    queue_id = res["queue"]["id"]
    with st.expander("Make a dataset of these runs (for experiments)"):
        st.caption(
            f"{len(ids)} runs; {len(wanted)} with a reviewer's “what should it have done”, which becomes what counts "
            "as right; the others are judged by their own outcome."
        )
        name = st.text_input("Dataset name", value=res["queue"]["name"], key=f"ds_name_{queue_id}")
        if st.button("Make the dataset", key=f"ds_make_{queue_id}", disabled=not ids):
            try:
                made = ds.dataset_from_sessions(store, name, ids, expected=wanted, made_from={"queue": queue_id})
            except ds.DatasetError as exc:
                st.error(str(exc))
            else:
                st.success(
                    f"Dataset “{made['name']}” version {made['version']}: {made['cases']} cases. Open Experiments to run it."
                )
        if st.button("Only the runs judged bad", key=f"ds_bad_{queue_id}", disabled=not ids):
            from replay_core.monitors import loop

            try:
                made = loop.dataset_from_queue(store, queue_id, name, bad_only=True, actor=current_actor())
            except (loop.LoopError, PermissionDenied) as exc:
                st.error(str(exc))
            else:
                st.success(f"Dataset “{made['name']}” version {made['version']}: {made['cases']} cases judged bad.")


def item_row(it: dict, criteria: list[str]) -> dict:
    reviews = it["reviews"]
    row = {
        "#": it["position"],
        "run": it["name"] or it["session_id"],
        "status": status_label(it["status"]) if it["stored"] else "run deleted",
        "verdicts": ", ".join(f"{v} ×{n}" for v, n in it["verdicts"].items()) or "—",
        "agreement": "—" if it["agreement"] is None else f"{it['agreement']:.0%}",
    }
    for c in criteria:
        row[c] = ", ".join(r["criteria"].get(c, "—") for r in reviews) or "—"
    row["notes"] = " | ".join(f"{r['reviewer']}: {r['note']}" for r in reviews if r["note"]) or "—"
    row["should have"] = " | ".join(f"{r['reviewer']}: {r['should_have']}" for r in reviews if r["should_have"]) or "—"
    row["id"] = it["session_id"]
    return row


def new_queue_form(store: Store, actor: Actor) -> None:
    """Editors: a queue from a filter (the runs that match now) or from runs picked by hand."""
    runs = store.list_sessions(limit=200)
    labels = {r["id"]: run_label(r) for r in runs}
    with st.form("new_queue", border=False):
        name = st.text_input("Name", placeholder="Failed checkout runs this week")
        st.caption("Which runs: pick them by hand, or leave that empty and use the filter (the runs it matches now).")
        picked = st.multiselect("Runs", list(labels), format_func=labels.get, placeholder="Pick runs…")
        cols = st.columns(3)
        status = cols[0].selectbox("Status", [s.value for s in SessionStatus], index=None, placeholder="Any status")
        workflow = cols[1].selectbox("Workflow", store.distinct_values("workflow"), index=None, placeholder="Any workflow")
        since = cols[2].selectbox("Started in", list(SINCE))
        cols = st.columns(3)
        model = cols[0].selectbox("Model", store.distinct_values("model"), index=None, placeholder="Any model")
        agent = cols[1].selectbox("Agent", store.distinct_values("agent_id"), index=None, placeholder="Any agent")
        search = cols[2].text_input("Text in the run", placeholder="e.g. refund")
        verdicts = st.text_input(
            "Verdicts (comma between them; keys 1–9 in that order)", value=", ".join(queues.DEFAULT_VERDICTS)
        )
        criteria = st.text_area(
            "Pass/fail criteria (optional, one a line: name — what it means)",
            placeholder="Right refund amount — the amount matches the order\nPolite — no blame on the customer",
        )
        cols = st.columns(3)
        note = cols[0].checkbox("Ask for a note", value=True)
        should_have = cols[1].checkbox("Ask what it should have done", value=True)
        per_item = cols[2].number_input("Reviews per run", min_value=1, max_value=queues.MAX_REVIEWS_PER_ITEM, value=1)
        assign = st.text_input("Reviewers (names, comma between; empty: anyone)")
        if not st.form_submit_button("Make the queue", type="primary"):
            return
    flt = None
    if not picked:
        from replay_core.whatif.dataset import parse_since

        flt = SessionFilter(
            status=status,
            workflow=workflow,
            model=model,
            agent_id=agent,
            text=search.strip() or None,
            since=parse_since(SINCE[since]) if SINCE[since] else None,
        )
    rubric = {
        "verdicts": [v.strip() for v in verdicts.split(",") if v.strip()],
        "note": note,
        "should_have": should_have,
        "criteria": [
            dict(zip(("name", "description"), [p.strip() for p in line.split("—", 1)], strict=False))
            for line in criteria.splitlines()
            if line.strip()
        ],
    }
    try:
        made = queues.create(
            store,
            name,
            flt=flt,
            ids=picked or None,
            rubric=rubric,
            reviews_per_item=int(per_item),
            assignees=[a.strip() for a in assign.split(",") if a.strip()],
            actor=actor,
        )
    except (queues.QueueError, PermissionDenied) as exc:
        st.error(md(str(exc)))
        return
    st.session_state["queue_made"] = f"Queue “{made['name']}” made with {made['items']} runs."
    st.rerun()


# ------------------------------------------------------------------ working a queue


def run_at_a_glance(
    store: Store, tl: Timeline, structure: Structure, *, shared: bool = False, notes: list[dict] | None = None
) -> None:
    """The run as the timeline page opens it (header, the plain-words summary and the Why), then the steps
    around a cursor kept in `st.session_state["step"]` and the selected step: reading only. `shared`: for a
    share link, the Why without the turning point (it names another run) and no model call offered. `notes`:
    verdicts on the run shown under its header (none in a queue: a reviewer judges unswayed)."""
    tv.run_header(tl, notes or [])
    explanation = explain(store, tl.id) if (tl.session.get("status") or "unknown") in EXPLAINED else None
    if shared and explanation is not None:
        explanation = replace(
            explanation, turning_point=None, chain=[link for link in explanation.chain if link.kind != "turning_point"]
        )
    tv.plain_header(store, tl, explanation, narrate=not shared)
    if not tl.steps:
        st.info("This run has no steps.")
        return
    seq = st.session_state.get("step")
    pos = tl.position_of(seq) if isinstance(seq, int) and tl.steps[0].seq <= seq <= tl.steps[-1].seq else 0
    left, right = st.columns([2, 3], gap="large")
    with left:
        tv.step_window(tl, pos, set())
    with right:
        sv.step_detail(tl, pos, structure, [])


def work_queue(store: Store, actor: Actor, queue_id: int, reviewer: str | None) -> None:
    try:
        q = queues.get(store, queue_id)
    except queues.QueueError:
        st.error(f"There is no queue {queue_id} (it may have been deleted).")
        st.button("Back to the queues", on_click=_open, args=(None,))
        return
    st.button("All queues", icon=":material/arrow_back:", on_click=_open, args=(None,), type="tertiary")
    st.subheader(md(q["name"]), anchor=False)
    st.progress(q["percent"] / 100, text=_progress_text(q))
    if not reviewer:
        st.info("Type your name above to start: the results say who reviewed what.")
        return
    if _typed_name_refused(q):
        st.error(NAMED_ONLY)
        return
    held_key = f"queue_{queue_id}_item"
    old_name = st.session_state.pop(RENAMED_FROM, None)
    if old_name and st.session_state.get(held_key) is not None:  # a new name: the run the old one held goes back
        queues.release(store, st.session_state.pop(held_key), old_name)
    try:
        item = queues.next_item(store, queue_id, reviewer, actor=actor, item_id=st.session_state.get(held_key))
        if item is None and st.session_state.get(held_key) is not None:
            item = queues.next_item(store, queue_id, reviewer, actor=actor)
    except (queues.QueueError, PermissionDenied) as exc:
        st.error(md(str(exc)))
        return
    if item is None:
        st.session_state.pop(held_key, None)
        st.success(
            "Nothing is left for you in this queue. Thank you!" if not q["done"] else "Every run in this queue is reviewed."
        )
        held = [it for it in queues.results(store, queue_id)["items"] if it["held_by"] and not it["complete"]]
        if held and not q["done"]:
            st.caption(
                md(
                    f"{len(held)} run{'s are' if len(held) != 1 else ' is'} still open with "
                    + ", ".join(sorted({it["held_by"] for it in held}))
                    + f": each goes back to the queue {int(queues.HOLD.total_seconds() // 60)} minutes after it was "
                    "opened, if no verdict is saved."
                )
            )
        with st.expander("Results", expanded=True):
            results_view(store, queue_id, actor)
        return
    st.session_state[held_key] = item["id"]
    if st.session_state.get("queue_item_shown") != item["id"]:
        st.session_state["queue_item_shown"] = item["id"]
        st.session_state.pop("step", None)  # a new run opens at its first step
    st.caption(
        f"Run {item['position']} of {q['items']} · held for you until {item['held_until']:%H:%M} UTC "
        f"(it goes back to the queue after {int(queues.HOLD.total_seconds() // 60)} minutes without a save)"
    )
    message = st.session_state.pop("queue_message", None)
    if message:
        (st.error if message[0] == "error" else st.toast)(md(message[1]))
    rubric_form(store, actor, q, item, reviewer)
    run = load_run(store, item["session_id"])
    if run is None:
        st.warning("This run was deleted after the queue was made. Skip it (S) to go on.")
        return
    run_at_a_glance(store, *run)


def _pick(key: str, value: str) -> None:
    st.session_state[key] = value


def rubric_form(store: Store, actor: Actor, q: dict, item: dict, reviewer: str) -> None:
    rubric, iid = q["rubric"], item["id"]
    keys = {"verdict": f"qv_{iid}", "note": f"qn_{iid}", "should_have": f"qs_{iid}"}
    crit_keys = {c["name"]: f"qc_{iid}_{i}" for i, c in enumerate(rubric["criteria"])}
    with st.container(border=True):
        st.radio(
            "Verdict", rubric["verdicts"], index=None, key=keys["verdict"], horizontal=True, format_func=md
        )  # options are markdown
        with st.container(horizontal=True, gap="small"):
            for i, label in enumerate(rubric["verdicts"]):
                st.button(
                    md(short(label, 30)),
                    key=f"qk_{iid}_{i}",
                    shortcut=str(i + 1),
                    on_click=_pick,
                    args=(keys["verdict"], label),
                    type="tertiary",
                    help=f"Press {i + 1} for “{label}”",
                )
        for c in rubric["criteria"]:
            st.radio(
                md(c["name"]),
                list(PASS_FAIL),
                index=None,
                format_func=PASS_FAIL.get,
                key=crit_keys[c["name"]],
                horizontal=True,
                help=md(c["description"]) if c["description"] else None,
            )
        if rubric["note"]:
            st.text_area("Note", key=keys["note"], placeholder="What should the team know about this run?", height=80)
        if rubric["should_have"]:
            st.text_area("What should it have done?", key=keys["should_have"], height=80)
        with st.container(horizontal=True, gap="small"):
            st.button(
                "Save and next",
                key="queue_save",
                type="primary",
                shortcut=SAVE_KEY,
                on_click=_save,
                args=(store, actor, q["id"], iid, reviewer, keys, crit_keys),
            )
            st.button("Skip", key="queue_skip", shortcut=SKIP_KEY, on_click=_skip, args=(store, actor, q["id"], iid, reviewer))
        st.caption(
            f"Keys: 1–{len(rubric['verdicts'])} verdict · {SAVE_KEY} save and next · {SKIP_KEY} skip "
            "(not while typing in a box: click outside it or press Tab first)"
        )


def _save(store: Store, actor: Actor, queue_id: int, item_id: int, reviewer: str, keys: dict, crit_keys: dict) -> None:
    verdict = st.session_state.get(keys["verdict"])
    if verdict is None:
        st.session_state["queue_message"] = ("error", "Pick a verdict first (keys 1–9), or skip this run (S).")
        return
    try:
        queues.save_review(
            store,
            queue_id,
            item_id,
            reviewer,
            verdict,
            criteria={name: st.session_state.get(k) for name, k in crit_keys.items()},
            note=st.session_state.get(keys["note"]),
            should_have=st.session_state.get(keys["should_have"]),
            actor=actor,
        )
    except (queues.QueueError, PermissionDenied) as exc:
        st.session_state["queue_message"] = ("error", str(exc))
        return
    st.session_state.pop(f"queue_{queue_id}_item", None)
    st.session_state["queue_message"] = ("ok", f"Saved: {verdict}.")


def _skip(store: Store, actor: Actor, queue_id: int, item_id: int, reviewer: str) -> None:
    queues.skip(store, queue_id, item_id, reviewer, actor=actor)
    st.session_state.pop(f"queue_{queue_id}_item", None)
    st.session_state["queue_message"] = ("ok", "Skipped: it comes back after the others.")
