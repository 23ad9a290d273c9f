"""The timeline's parts: the run in one sentence, the scrubber, the steps around the cursor,
the selected step and the agent's state there.

Only a window of steps around the cursor is drawn, so a 10,000-step run costs what a
20-step one does once it is open.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Any

import orjson
import streamlit as st

from replay_core import config
from replay_core.ingest.annotate import AUTHOR_MAX, annotate
from replay_core.storage.search import SearchQuery, snippet
from replay_core.storage.store import SessionFilter, Store
from replay_core.understand.cycle_groups import story
from replay_core.understand.explain import EXPLAINED, Explanation, explain, plain_words
from replay_core.understand.structure import Structure
from replay_core.understand.timeline import Timeline
from replay_core.whatif import narrative

from . import components, waterfall_view
from .common import (
    PAGE_COMPARE,
    PAGE_THREADS,
    PAGE_WHATIF,
    REVIEW_LABELS,
    current_actor,
    ended_label,
    fmt_cost,
    fmt_duration,
    fmt_when,
    md,
    note_line,
    run_label,
    short,
    status_label,
    step_label,
    url_choice,
)
from .early_open import linked_step

BEFORE, AFTER = 6, 9  # steps drawn around the cursor
JUMPS = [  # the strip's jump buttons: name, label, the key that presses it (KeyboardEvent.key)
    ("first", "⇤ First", None),
    ("prev_cycle", "« Previous cycle", None),
    ("prev", "‹ Previous", "ArrowLeft"),
    ("next", "Next ›", "ArrowRight"),
    ("next_cycle", "Next cycle »", None),
    ("prev_error", "← Previous error", None),
    ("next_error", "Next error →", "e"),
    ("last", "Last ⇥", None),
]

ROW_TEXT = 160  # characters of a step's text on its row (the row wraps)


# ------------------------------------------------------------------ the cursor


def is_error(step) -> bool:
    return step.type == "error" or step.status == "error"


def jump_targets(tl: Timeline, pos: int) -> dict[str, int | None]:
    """Seq to jump to for each button (None when there is nowhere to go)."""
    steps = tl.steps
    seq_at = tl.columns["seq"].__getitem__
    starts = [c.positions[0] for c in tl.cycles]
    errors = tl.error_positions()
    here = tl.cycle_index[pos]
    this_start = tl.cycles[here].positions[0] if here is not None else None
    i = bisect_left(starts, pos)
    prev_cycle = this_start if this_start is not None and this_start < pos else (starts[i - 1] if i > 0 else None)
    j = bisect_right(starts, pos)
    next_cycle = starts[j] if j < len(starts) else None
    k = bisect_left(errors, pos)
    m = bisect_right(errors, pos)
    return {
        "first": seq_at(0) if pos > 0 else None,
        "prev_cycle": seq_at(prev_cycle) if prev_cycle is not None else None,
        "prev": seq_at(pos - 1) if pos > 0 else None,
        "next": seq_at(pos + 1) if pos + 1 < len(steps) else None,
        "next_cycle": seq_at(next_cycle) if next_cycle is not None else None,
        "prev_error": seq_at(errors[k - 1]) if k > 0 else None,
        "next_error": seq_at(errors[m]) if m < len(errors) else None,
        "last": seq_at(len(steps) - 1) if pos < len(steps) - 1 else None,
    }


def go(seq: int) -> None:
    st.session_state["step"] = seq


STEP_IN_URL = "_step_in_url"  # (run, ?step=) as last read or written: a link that names another step is followed


def cursor(tl: Timeline) -> int:
    """The cursor's seq, in the run's range: `st.session_state["step"]`, else the link's `?step=`, else the first
    step; kept in `?step=` (left out at the first step), so the address bar always links to what is shown.
    A `?step=` other than the one last read or written here (a link followed, another run) is followed.
    A link's `?event=` (a step's event id, which names it for good while its seq may still move) opens that
    step and gives way to its `?step=`."""
    first, last = tl.steps[0].seq, tl.steps[-1].seq
    raw = st.query_params.get("step")
    event = st.query_params.get("event")
    if event is not None:
        del st.query_params["event"]
        named = tl.seq_of_event(event)
        if named is None:
            held = "does not hold yet (its spans are arriving)" if tl.session.get("order_settling") else "does not hold"
            st.warning(f"This link names a step this run {held}: event {event[:80]!r}. Showing step {first}.")
        st.session_state["step"] = first if named is None else named
        st.session_state[STEP_IN_URL] = (tl.id, raw)  # a `?step=` beside it gives way
    if st.session_state.get(STEP_IN_URL) != (tl.id, raw):
        linked = linked_step(raw)
        st.session_state["step"] = first if linked is None else linked
    current = st.session_state.get("step")
    seq = min(max(current, first), last) if isinstance(current, int) else first
    st.session_state["step"] = seq
    shown = None if seq == first else str(seq)
    if raw != shown:
        if shown is None:
            st.query_params.pop("step", None)
        else:
            st.query_params["step"] = shown
    st.session_state[STEP_IN_URL] = (tl.id, shown)
    return seq


def scrubber(tl: Timeline, noted: set[int], explanation=None, structure: Structure | None = None, hits: list[int] = ()) -> int:
    """The strip (its slider, clickable ticks, jump buttons and go-to box: ui/components.py); returns the position."""
    seq = cursor(tl)
    pos = tl.position_of(seq)
    _strip(tl, seq, pos, noted, explanation, structure, hits)
    if tl.steps[pos].seq != seq:
        why = "is not a step's number while the run's spans arrive" if tl.session.get("order_settling") else "was never received"
        st.info(f"Step {seq} {why}; showing step {tl.steps[pos].seq}, the next one that was.")
    return pos


STRIP_KINDS = {  # what a tick means: (lane, colour), in legend order
    "error": ("what went wrong", "#d62728"),
    "cause": ("what went wrong", "#6a3d9a"),  # apart from the error's red and the cursor's blue at a glance
    "turning point": ("what went wrong", "#2ca02c"),
    "note": ("found", "#ff9f1c"),
    "search hit": ("found", "#e377c2"),
    "retry": ("shape", "#8c564b"),
    "group": ("shape", "#17becf"),
    "cycle start": ("shape", "#c7c7c7"),
    "missing": ("shape", "#b0b0b0"),
    "you are here": ("found", "#1f77b4"),
}
LANES = ["what went wrong", "found", "shape"]
MAX_CYCLE_TICKS = 2000  # past this, cycle starts are left off the strip (said in its caption)
MAX_HIT_TICKS = 2000  # likewise search hits: the count and previous/next hit still cover them all


def strip_ticks(
    tl: Timeline, seq: int, noted: set[int], *, hits: list[int] = (), explanation=None, structure: Structure | None = None
) -> list[dict]:
    """The strip's clickable ticks: errors, the causal chain and turning point, notes, search hits,
    retries, structure nodes, cycle starts and the cursor (one dict per tick: seq, what, lane)."""
    ticks = []
    if explanation is not None:
        ticks += [(link.seq, "cause") for link in explanation.chain]
        if explanation.turning_point is not None and explanation.turning_point.seq is not None:
            ticks.append((explanation.turning_point.seq, "turning point"))
    ticks += [(n, "note") for n in sorted(noted)]
    if len(hits) <= MAX_HIT_TICKS:
        ticks += [(h, "search hit") for h in hits]
    ticks.append((seq, "you are here"))
    return _run_ticks(tl, structure) + [{"seq": q, "what": what, "lane": STRIP_KINDS[what][0]} for q, what in ticks]


def _run_ticks(tl: Timeline, structure: Structure | None) -> list[dict]:
    """The ticks that depend on the run alone (errors, retries, groups, cycle starts): passes over every
    step, so made once per opened version of the run (the Timeline is cached per version)."""
    key = ("strip", structure is not None)
    if key not in tl.cache:
        seqs = tl.columns["seq"]
        ticks = [(seqs[p], "error") for p in tl.error_positions()]
        ticks += [(seq, "retry") for seq, retry in zip(seqs, tl.columns["retry"], strict=True) if retry]
        if structure is not None:
            ticks += [(seqs[p], "group") for p in structure.nodes]
        if len(tl.cycles) <= MAX_CYCLE_TICKS:
            ticks += [(c.first_seq, "cycle start") for c in tl.cycles]
        tl.cache[key] = [{"seq": q, "what": what, "lane": STRIP_KINDS[what][0]} for q, what in ticks]
    return tl.cache[key]


def _strip(
    tl: Timeline, seq: int, pos: int, noted: set[int], explanation=None, structure: Structure | None = None, hits: list[int] = ()
) -> None:
    """A bar under the slider in three lanes: what went wrong (errors, the causal chain, the turning point),
    what was found (notes, search hits, the cursor), and the run's shape (retries, groups, cycle starts,
    missing steps); then the jump buttons and a go-to box. Clicking a tick or a button, or going to a
    step, moves the cursor there. The buttons are the strip's, not Streamlit's: fewer elements for a
    click to redraw."""
    targets = jump_targets(tl, pos)
    ticks = strip_ticks(tl, seq, noted, hits=hits, explanation=explanation, structure=structure)
    kinds = {what: [LANES.index(lane), colour] for what, (lane, colour) in STRIP_KINDS.items()}
    shown = {t["what"] for t in ticks} | ({"missing"} if tl.gaps else set())
    left_off = " · cycle starts left off (too many)" if len(tl.cycles) > MAX_CYCLE_TICKS else ""
    if len(hits) > MAX_HIT_TICKS:
        left_off += f" · the {len(hits):,} search hits left off (too many: step through them with Next hit)"
    components.strip(
        {
            "first": tl.steps[0].seq,
            "last": tl.steps[-1].seq,
            "lanes": LANES,
            "kinds": kinds,
            "cursor": seq,
            "ticks": [[t["seq"], t["what"]] for t in ticks if t["what"] != "you are here"],
            "gaps": [[g.first_missing - 0.5, g.last_missing + 0.5] for g in tl.gaps],
            "legend": [[what, colour] for what, (_, colour) in STRIP_KINDS.items() if what in shown],
            "left_off": left_off,
            "jumps": [[name, label, targets[name], key] for name, label, key in JUMPS],
        },
        key="strip",
        on_pick=go,
    )


# ------------------------------------------------------------------ the run

METRIC_WIDTH = 150  # pixels: six in a row on a desktop, two in a row at a phone's 390
# On a phone (Streamlit stacks columns at 640 px or less) the selected step comes right under the
# scrubber, before the list of steps around it.
PHONE_CSS = """<style>
@media (max-width: 640px) {
  [data-testid="stColumn"]:has(.st-key-step_detail) { order: -1; }
}
</style>"""


def phone_layout() -> None:
    st.html(PHONE_CSS)


def _errors_card(tl: Timeline, errors: int) -> tuple[str, str]:
    """The Errors card, split as the "Did" sentences count them: failed tool calls there read "(failed)", the
    run's own errors "N error(s) recorded"."""
    in_tools = sum(1 for i in tl.error_positions() if tl.steps[i].tool_name)
    if 0 < in_tools < errors:
        return f"Errors ({in_tools} in tool calls, {errors - in_tools} of the run)", f"{errors:,}"
    return "Errors", f"{errors:,}"


def run_header(tl: Timeline, run_notes: list[dict]) -> None:
    s = tl.session
    st.title(md(s.get("name") or s["id"]), anchor=False)  # a run's name is data: shown as text, never as markup
    dims = [
        ("Agent", s.get("agent_id")),
        ("Model", s.get("model")),
        ("Workflow", s.get("workflow")),
        ("Environment", s.get("environment")),
        ("Version", s.get("agent_version")),
        ("Tags", ", ".join(s.get("tags") or [])),
        ("User", s.get("user_id")),
        ("Started", fmt_when(s.get("started_at")) if s.get("started_at") else "time not recorded"),
    ]
    st.caption(" · ".join(f"{k}: {md(v)}" for k, v in dims if v) + f" · id: {md(s['id'])}")
    if s.get("thread_id"):  # the conversation this run is a turn of, with its other runs in order
        st.page_link(
            PAGE_THREADS,
            label=md(f"Thread {s['thread_id']}"),
            icon=":material/forum:",
            query_params={"thread": s["thread_id"]},
        )
    sentence = plain_words(tl.summary())  # an error's JSON body told in words, not shown raw
    if s.get("outcome"):
        sentence += f" Outcome: {plain_words(s['outcome'])}"
    if s.get("replay_of"):  # a replay's session status is no verdict on it: no green or red
        st.info(md(sentence), icon="🔁")
    else:
        box = {"failed": st.error, "succeeded": st.success, "incomplete": st.warning}.get(s.get("status"), st.info)
        box(md(sentence), icon=status_label(s.get("status")).split(" ")[0])
    totals = tl.totals.at(len(tl.steps) - 1) if tl.steps else None
    card = components.card
    components.metrics(
        [
            card("Steps", f"{len(tl.steps):,}"),
            card("Cycles", f"{len(tl.cycles):,}"),
            card(*_errors_card(tl, totals["errors"] if totals else 0)),
            # the run's totals as the Store defines them (steps' sums, else the source's run totals)
            card(
                "Tokens",
                f"{s['tokens_in'] + s['tokens_out']:,}",
                help="the source's run totals: its steps carry none" if s.get("totals_source") == "source" else None,
            ),
            card(
                "Cost",
                (fmt_cost(s["cost_usd"]) + (" (estimated)" if s.get("cost_estimated") else ""))
                if s.get("cost_usd") is not None
                else "—",
                help="priced from litellm's list prices: the source gave no cost" if s.get("cost_estimated") else None,
            ),
            card("Duration", fmt_duration(s.get("duration_s"))),
        ],
        key="run_metrics",
        width=METRIC_WIDTH,
    )
    if tl.gaps:
        missing = sum(g.last_missing - g.first_missing + 1 for g in tl.gaps)
        labels = ", ".join(g.label for g in tl.gaps[:5]) + (" …" if len(tl.gaps) > 5 else "")
        st.warning(
            md(
                f"{missing} step{'s' if missing != 1 else ''} never arrived ({labels}). "
                "The timeline shows where they are missing; nothing was filled in."
            ),
            icon="🕳️",
        )
    if s.get("order_settling"):
        st.info(
            "This run's spans are still arriving out of order: its steps are shown in order, with room left "
            "between their numbers; they are numbered 1, 2, 3… once the spans stop coming. No step is missing "
            "for that.",
            icon="⏳",
        )
    if s.get("status") == "incomplete":
        st.warning(
            md(f"This run stopped sending events at {fmt_when(s.get('last_event_at'))} without saying it had finished."), icon="⚠️"
        )
    for note in run_notes:
        st.markdown(note_line(note))


EXPLAIN_TTL_S = 600  # peers' durations feed the slow-step rule: an explanation is recomputed at least this often


@st.cache_data(ttl=EXPLAIN_TTL_S, max_entries=64, show_spinner=False)
def _explanation(_store: Store, url: str, session_id: str, stamp: tuple, successes: int) -> Explanation:
    return explain(_store, session_id)


def _stamp(s: dict) -> tuple:
    """A version of the run: changes with new steps, a new status or outcome."""
    return (
        s.get("steps"),
        s.get("max_seq"),
        str(s.get("last_event_at")),
        s.get("status"),
        str(s.get("ended_at")),
        s.get("outcome"),
    )


def explanation_for(store: Store, tl: Timeline) -> Explanation | None:
    """explain() once per version of the run and of the successful runs it may be compared with
    (new steps, a new status or a new successful run recompute it); None for a run that is not explained."""
    s = tl.session
    if (s.get("status") or "unknown") not in EXPLAINED:
        return None
    return _explanation(store, store.url, tl.id, _stamp(s), store.count_sessions(SessionFilter(status="succeeded")))


@st.cache_data(max_entries=64, show_spinner=False)
def _story(_tl: Timeline, url: str, session_id: str, stamp: tuple) -> list[str]:
    return story(_tl.columns, _tl.cycles)


def story_of(store: Store, tl: Timeline) -> list[str]:
    """The run in a sentence a group of cycles (cycle_groups.story), once per version of the run."""
    return _story(tl, store.url, tl.id, _stamp(tl.session))


def plain_header(store: Store, tl: Timeline, explanation, *, narrate: bool = True) -> None:
    """For readers who are not engineers: what it was asked, what it did (a sentence per group of cycles),
    how it ended, and why (the cause line)."""
    first = tl.first_input()
    asked = first.content if first is not None else None
    s = tl.session
    lines = [f"**Asked:** {md(short(asked, 240)) if asked else '(no input recorded)'}"]
    did = story_of(store, tl)
    if did:
        lines.append("**Did:** " + " ".join(md(sentence) for sentence in did))
    lines.append(f"**Ended:** {md(ended_label(store, s))}" + (f" — {md(s['outcome'])}" if s.get("outcome") else ""))
    if explanation is not None:
        lines.append(f"**Why:** {md(explanation.cause_line())}")
    st.markdown("  \n".join(lines))
    if explanation is None or not explanation.chain:
        return
    with st.container(horizontal=True, gap="small"):
        for link in explanation.chain:
            st.button(
                f"Step {link.seq}",
                key=f"cause_{link.seq}",
                on_click=go,
                args=(link.seq,),
                help=link.summary,
                icon=":material/arrow_outward:" if link is explanation.head else None,
            )
    with st.expander("Causal chain and turning point"):
        for link in explanation.chain:
            st.markdown(f"**Step {link.seq}** — {md(link.summary)}")
        tp = explanation.turning_point
        told = any(link.kind == "turning_point" for link in explanation.chain)  # the chain tells it already
        if tp is not None and not told:
            st.markdown(
                f"**Turning point** (step {tp.seq} here, step {tp.compared_seq} of {md(tp.compared_with)}): {md(tp.summary)}"
            )
        for c in explanation.contradictions:
            st.markdown(f"**Contradiction** at step {c.seq} (vs step {c.earlier_seq}): {md(c.summary)}")
        for note in explanation.notes[:1]:
            st.caption(md(note))
    if narrate:  # a shared page offers no model call: it would spend the team's money for a stranger
        narrative_view(explanation)


def narrative_view(explanation: Explanation) -> None:
    """The optional paragraph a model writes from the causal chain (whatif/narrative.py), asked for by a click
    and shown under the rule-based answer, marked as a model's, with its cost. Off unless configured."""
    model = config.explain_model()
    if model is None:
        return
    api_base = config.explain_api_base()
    key = f"narrative_error_{explanation.session}"
    result = narrative.cached(explanation, model, api_base)
    if result is None:
        tokens_in, at_most = narrative.estimate(explanation, model)
        st.caption(
            md(
                f"Asking costs about {tokens_in:,} tokens in and at most {narrative.MAX_TOKENS} out: "
                + (
                    f"at most ${at_most:.4f} at {model}'s list price."
                    if at_most is not None
                    else f"the price of {model} is not known, so the cost is not either."
                )
            )
        )
        if st.button(
            f"Ask {model} to explain in a paragraph",
            key="narrate",
            icon=":material/edit_note:",
            help="One model call. The model is given only the causal chain above (not the run) and must cite "
            "a step for every claim. Its real cost is shown with the paragraph.",
        ):
            with st.spinner(f"Asking {model}…"):
                try:
                    result = narrative.narrate(explanation, model, api_base=api_base, api_key_env=config.explain_api_key_env())
                    st.session_state.pop(key, None)
                except narrative.NarrativeError as exc:
                    st.session_state[key] = exc
        error = st.session_state.get(key)
        if result is None and error is not None:
            st.error(md(f"No paragraph from {model}: {error.plain}"), icon="⚠️")
            with st.expander("What the provider said"):
                st.code(f"{error.error_class}: {error.raw}", language=None, wrap_lines=True)
        if result is None:
            return
    with st.container(border=True, key="narrative"):
        st.caption(
            md(
                f"✍️ Written by a model ({result.model}) from the causal chain above, not by the rules: "
                f"check it against the steps it cites. {result.cost_line()}"
            )
        )
        st.text(result.text)
        if result.not_in_chain:
            st.caption(
                md(
                    "It cites step"
                    + ("s " if len(result.not_in_chain) > 1 else " ")
                    + ", ".join(map(str, result.not_in_chain))
                    + ", which the causal chain does not name."
                )
            )
        if result.cited:
            with st.container(horizontal=True, gap="small"):
                for seq in result.cited[:12]:
                    st.button(f"Step {seq}", key=f"cited_{seq}", on_click=go, args=(seq,), type="tertiary")


def search_box() -> None:
    """Search inside the run (content, tool names, arguments, error class): drawn above the strip, outside
    what a click redraws; a search redraws the page, its hits are ticks on the strip."""
    st.text_input(
        "Search in this run",
        key="run_search",
        placeholder="words, tool name or argument",
        help="Whole words, the last one also as the start of a word (“refund” finds “refunded”); "
        "every word must be in the step. The same search as on the Runs page.",
    )


def search_hits(tl: Timeline, pos: int, hits: list[int]) -> None:
    """The search's hits as seen from the cursor: how many, previous/next hit, and the matched text of the hit
    at or after the cursor."""
    query = st.session_state.get("run_search")
    if not query:
        return
    if not SearchQuery.parse(query):
        st.caption("Type a word: punctuation alone matches nothing.")
        return
    if not hits:
        st.caption(f"No step holds “{md(query)}”.")
        return
    seq = tl.steps[pos].seq
    at = bisect_left(hits, seq)
    here = at < len(hits) and hits[at] == seq
    before, after = hits[at - 1] if at else None, hits[at + 1 if here else at] if (at + here) < len(hits) else None
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.caption(f"{len(hits):,} step{'s' if len(hits) != 1 else ''} match" + (f" (this is hit {at + 1:,})" if here else ""))
        st.button(
            "Previous hit",
            key="hit_prev",
            disabled=before is None,
            on_click=go,
            args=(before,),
            icon=":material/keyboard_arrow_up:",
        )
        st.button(
            "Next hit", key="hit_next", disabled=after is None, on_click=go, args=(after,), icon=":material/keyboard_arrow_down:"
        )
    shown = seq if here else after if after is not None else before
    step = tl.step_at_seq(shown)
    parts = hit_snippet(query, step) if step is not None else []
    st.caption(md(f"Step {shown}: ") + "".join(f"**{md(t)}**" if hit else md(t) for t, hit in parts))


def run_hits(store: Store, tl: Timeline, query: str | None) -> list[int]:
    """Seqs of the steps that match `query`: the full-text index (content, tool name, arguments; see
    storage/search.py for what a query means), and the error class by the same word rules. Kept for the
    last query of each opened version of the run, since the strip and the hit buttons both ask."""
    parsed = SearchQuery.parse(query)
    if not parsed:
        return []
    found = tl.cache.get("search")
    if found is None or found[0] != query:
        indexed = store.search_seqs_in_session(tl.id, query)
        terms = [SearchQuery((t,)).pattern() for t in parsed.terms]
        named = [s.seq for p in tl.error_class_positions() if all(t.search((s := tl.steps[p]).error_class) for t in terms)]
        found = tl.cache["search"] = (query, sorted(set(indexed) | set(named)))
    return found[1]


def hit_snippet(query: str, step) -> list[tuple[str, bool]]:
    """The matched words of a step in their context, as (text, matched) parts (storage/search.py's snippet)."""
    return snippet(SearchQuery.parse(query), step.content, step.tool_name, args_text(step.tool_args) or None, step.error_class)


def action_links(tl: Timeline, seq: int, explanation) -> None:
    """Replay from here (the what-if page at this step) and Compare with… (the turning-point run preselected)."""
    with st.container(horizontal=True, gap="small"):
        st.page_link(
            PAGE_WHATIF, label="Replay from here", icon=":material/replay:", query_params={"session": tl.id, "step": str(seq)}
        )
        other = explanation.turning_point.compared_with if explanation is not None and explanation.turning_point else None
        st.page_link(
            PAGE_COMPARE,
            label=f"Compare with {other}" if other else "Compare with…",
            icon=":material/compare_arrows:",
            query_params={"a": tl.id, **({"b": other} if other else {})},
        )


# ------------------------------------------------------------------ steps around the cursor


def row_label(step, *, current: bool, noted: bool, run_agent: str | None = None) -> str:
    """'▶ 18  📦 Tool result · run_tests ❗ — FF.F..' (with the agent's name when it is not the run's own),
    as plain text."""
    what = step_label(step.type)
    if step.agent_id and step.agent_id != run_agent:
        what = f"[{step.agent_id}] {what}"
    if step.tool_name:
        what += f" · {step.tool_name}"
    text = short(step.content or step.error_class or args_text(step.tool_args), ROW_TEXT)
    flags = (" ❗" if is_error(step) else "") + (" 📝" if noted else "")
    return f"{'▶ ' if current else ''}{step.seq}  {what}{flags}" + (f" — {text}" if text else "")


def args_text(args: Any) -> str:
    if args is None:
        return ""
    return args if isinstance(args, str) else orjson.dumps(args).decode()


LEFT_VIEWS = ["Steps", "Waterfall"]


def step_window(tl: Timeline, pos: int, noted: set[int]) -> None:
    """The steps around the cursor, under a heading per decision cycle, with missing steps shown;
    clicking a step moves the cursor there. One element drawn by the browser (ui/components.py).
    Or, picked above it, the run's span waterfall (ui/waterfall_view.py)."""
    if st.session_state.get("left_view") not in LEFT_VIEWS:
        st.session_state["left_view"] = LEFT_VIEWS[0]
    if st.segmented_control("Steps", LEFT_VIEWS, required=True, key="left_view", label_visibility="collapsed") == "Waterfall":
        waterfall_view.waterfall(tl, pos, on_pick=go)
        return
    lo, hi = max(0, pos - BEFORE), min(len(tl.steps), pos + AFTER + 1)
    components.step_rows(window_rows(tl, pos, noted, lo, hi), key="step_rows", on_pick=go)


def window_rows(tl: Timeline, pos: int, noted: set[int], lo: int, hi: int) -> list[dict]:
    """The rows of the window from position `lo` to `hi`: steps, cycle headings, missing steps, and how
    many steps lie before and after it."""
    rows = []
    if lo > 0:
        rows.append({"kind": "more", "text": f"… {lo} earlier step{'s' if lo != 1 else ''}"})
    shown_cycle: object = object()
    for p in range(lo, hi):
        step = tl.steps[p]
        if p > lo and tl.gaps and step.seq - tl.steps[p - 1].seq > 1:
            a, b = tl.steps[p - 1].seq + 1, step.seq - 1
            rows.append({"kind": "gap", "text": f"🕳️ {'step ' + str(a) if a == b else f'steps {a}–{b}'} missing: never received"})
        cycle = tl.cycle_index[p]
        if cycle != shown_cycle:
            shown_cycle = cycle
            if cycle is None:
                rows.append({"kind": "cycle", "text": "Outside any cycle"})
            else:
                c = tl.cycles[cycle]
                rows.append(
                    {"kind": "cycle", "text": f"Cycle {cycle + 1} of {len(tl.cycles)} · steps {c.first_seq}–{c.last_seq}"}
                )
        label = row_label(step, current=p == pos, noted=step.seq in noted, run_agent=tl.session.get("agent_id"))
        rows.append({"seq": step.seq, "text": label, "current": p == pos})
    if hi < len(tl.steps):
        rows.append({"kind": "more", "text": f"… {len(tl.steps) - hi} later step{'s' if len(tl.steps) - hi != 1 else ''}"})
    return rows


# ------------------------------------------------------------------ notes, review and delete


def notes_by_seq(tl: Timeline, notes: list[dict]) -> tuple[list[dict], dict[int, list[dict]]]:
    """Run notes, and step notes keyed by the step's seq."""
    seq_of = {}
    wanted = {n["event_id"] for n in notes if n["event_id"]}
    if wanted:
        seq_of = {e: seq for e, seq in zip(tl.columns["event_id"], tl.columns["seq"], strict=True) if e in wanted}
    by_seq: dict[int, list[dict]] = defaultdict(list)
    run_notes = []
    for note in notes:
        if note["event_id"] is None:
            run_notes.append(note)
        elif note["event_id"] in seq_of:
            by_seq[seq_of[note["event_id"]]].append(note)
    return run_notes, dict(by_seq)


def review_form(store: Store, tl: Timeline, step, author: str | None) -> None:
    """No verdict preselected (an accidental approval is worse than a click), and the name stays after a save."""
    if st.session_state.pop("review_saved", False):
        st.toast("Note saved.")
    with st.form("review", border=False):
        target = st.radio("Mark", ["This run", f"Step {step.seq}"], horizontal=True, key="review_target")
        label = st.radio(
            "Verdict", list(REVIEW_LABELS), format_func=REVIEW_LABELS.get, horizontal=True, index=None, key="review_label"
        )
        text = st.text_area("Note", placeholder="What happened here? Anyone opening this run will see it.", key="review_text")
        name = st.text_input("Your name", value=(author or "")[:AUTHOR_MAX], key="review_author", max_chars=AUTHOR_MAX)
        if st.form_submit_button("Save note", type="primary"):
            if label is None:
                st.error("Pick a verdict.")
                return
            event_id = step.event_id if target != "This run" else None
            st.session_state["reviewer"] = name.strip() or None
            annotate(store, tl.id, label, text.strip(), event_id=event_id, author=name.strip() or None, actor=current_actor())
            for key in ("review_target", "review_label", "review_text", "review_author"):
                st.session_state.pop(key, None)
            st.session_state["review_saved"] = True
            st.rerun()


def delete_run(store: Store, tl: Timeline) -> bool:
    """The editor's delete, behind a confirmation; True once the run is gone."""
    with st.expander("Delete this run"):
        sure = st.checkbox(
            "Yes, delete this run with its steps, notes and attachments. This cannot be undone.", key="delete_sure"
        )
        if st.button("Delete run", disabled=not sure, key="delete_run"):
            store.delete_sessions([tl.id], actor=current_actor())
            return True
    return False


# ------------------------------------------------------------------ which run


def _forget_step() -> None:
    st.session_state.pop("step", None)


def session_picker(store: Store, recent: int = 30) -> str | None:
    """The run shown, bound to `?session=`; lists the latest runs plus the one in the link."""
    wanted = st.query_params.get("session")
    rows = store.list_sessions(limit=recent)
    if wanted and wanted not in {r["id"] for r in rows}:
        row = store.get_session(wanted)
        if row is None:
            st.error(md(f"There is no run with the id “{wanted}”. It may have been deleted; pick another one."))
        else:
            rows.insert(0, row)
    if not rows:
        st.info(
            "No runs recorded yet: there is nothing to show on a timeline. Load the demo runs with "
            "`agent-replay demo`, or import a trace on the **Import** page."
        )
        return None
    names = {r["id"]: run_label(r) for r in rows}
    with st.sidebar:
        return url_choice("Run", "session", list(names), format_func=names.get, on_change=_forget_step, placeholder="Pick a run…")
