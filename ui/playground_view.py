"""The playground on screen: one model call's messages to edit (system prompt, each message's text, add or
remove one), What-if's model picker with its credential check, one run, and the answer beside the recorded one."""

from __future__ import annotations

import uuid

import streamlit as st

from replay_core.storage.actor import REPLAY, Actor
from replay_core.storage.store import Store
from replay_core.understand.timeline import Timeline
from replay_core.whatif.playground import ModelCall, Ran, answer_of, model_steps, problems, run_call, with_system_prompt
from replay_core.whatif.replay import ReplayError
from replay_core.whatif.replay_config import RECORDED, Budget, ReplayConfig

from . import components
from . import whatif_view as wv
from .common import PAGE_COMPARE, PAGE_TIMELINE, md, short, step_label
from .step_view import answer_message, message_text

ROLES = ("user", "assistant", "tool", "system")
LAST = "playground_last"  # the last run of each call: {call key: replay session id}


def pick_step(tl: Timeline) -> int | None:
    """The model step to open: `?step=` when it is one, else picked from the run's thoughts, calls and answers."""
    steps = model_steps(tl)
    if not steps:
        st.warning("This run has no model output (a thought, tool call or answer) to open in the playground.")
        return None
    wanted = st.query_params.get("step", "")
    seqs = [s.seq for s in steps]
    labels = {s.seq: f"step {s.seq} · {step_label(s.type)} · {short(s.tool_name or s.content or '', 60)}" for s in steps}
    index = seqs.index(int(wanted)) if wanted.isdigit() and int(wanted) in seqs else None
    if wanted and index is None:
        st.info(f"Step {md(wanted)} is not a model's output; pick one of the model's steps.")
    seq = st.selectbox("Model call", seqs, index=index, format_func=labels.get, placeholder="Pick a model step…")
    if seq is not None:
        st.query_params["step"] = str(seq)
    return seq


def _key(call: ModelCall) -> str:
    return f"{call.session_id}@{call.seq}"


def _messages_state(call: ModelCall) -> list[dict]:
    """The messages being edited (without the system prompt), each with an id its widgets are keyed by."""
    key = f"pg_messages_{_key(call)}"
    if key not in st.session_state:
        rest = [m for m in call.messages if m.get("role") != "system"]
        st.session_state[key] = [{"id": uuid.uuid4().hex[:8], "message": dict(m)} for m in rest]
    return st.session_state[key]


def edit_messages(call: ModelCall) -> list[dict]:
    """The system prompt and each message, editable; messages added or removed. Returns what would be sent."""
    st.caption(
        f"The {len(call.messages)} messages the model was sent before step {call.seq} (the context {call.context_source}). "
        "Edit any of them; a message left as it is goes as recorded."
    )
    system = st.text_area("System prompt", value=call.system_prompt, height=120, key=f"pg_system_{_key(call)}")
    items = _messages_state(call)
    for item in list(items):
        message = item["message"]
        role = str(message.get("role"))
        with st.container(border=True, key=f"pg_msg_{item['id']}"):
            head, remove = st.columns([6, 1], vertical_alignment="center")
            tool = f" · answers {message.get('tool_call_id')}" if role == "tool" else ""
            head.markdown(f"**{md(role)}**{md(tool)}")
            if remove.button("Remove", key=f"pg_rm_{item['id']}", type="tertiary", icon=":material/delete:"):
                items.remove(item)
                st.rerun()
            original = message_text(message)
            text = st.text_area(
                f"Text of this {role} message",
                value=original,
                key=f"pg_text_{item['id']}",
                height=min(400, 68 + 22 * original.count("\n") + len(original) // 4),
                label_visibility="collapsed",
            )
            if text != original:
                item["message"] = {**message, "content": text}
            for call_ in message.get("tool_calls") or ():
                fn = call_.get("function") or {}
                st.caption(md(f"Calls {fn.get('name')}({short(str(fn.get('arguments', '')), 120)}), kept as recorded."))
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    role = left.selectbox("Add a message", ROLES[:2], key=f"pg_add_role_{_key(call)}")
    if right.button("Add", key=f"pg_add_{_key(call)}", icon=":material/add:"):
        items.append({"id": uuid.uuid4().hex[:8], "message": {"role": role, "content": ""}})
        st.rerun()
    return with_system_prompt([item["message"] for item in items], system)


def pick_config(editor: bool) -> tuple[ReplayConfig | None, bool]:
    """What-if's model picker and its check: the one model to ask and whether a picked one cannot run (said, with the
    fix, before anything runs)."""
    choice = wv.pick_models()
    blocked = wv.blocked_models(choice, editor)
    configs = [c for c in wv.replay_configs(choice, blocked, (None, "replace"), Budget()) if c.model != RECORDED]
    if choice.recorded:
        st.caption(problems(ReplayConfig(model=RECORDED))[0])
    if len(configs) > 1:
        st.caption(f"Each run asks one model: {md(configs[0].model)}, the first picked.")
    return (configs[0] if configs else None), bool(blocked)


def run_button(
    store: Store, call: ModelCall, messages: list[dict], config: ReplayConfig | None, blocked: bool, actor: Actor
) -> Ran | None:
    """Run: editors only (a call costs money), with a model that can run now; the run, or None."""
    editor = actor.may(REPLAY)
    if not editor:
        st.caption("Only editors can run a model (it costs money). You can still read and edit the messages.")
    ready = editor and config is not None and not blocked
    if not st.button("Run", type="primary", key="pg_run", disabled=not ready, icon=":material/play_arrow:") or config is None:
        return None
    with st.spinner(f"Asking {config.model}…"):
        try:
            ran = run_call(store, call, messages, config, actor=actor)
        except ReplayError as exc:
            st.error(md(str(exc)))
            return None
    st.session_state.setdefault(LAST, {})[_key(call)] = ran.result.session
    return ran


def recorded_answer(call: ModelCall) -> None:
    st.subheader("Recorded answer")
    components.transcript(
        [f"What {call.model or 'the model'} answered at step {call.seq}."],
        [answer_message(call.answer, f"assistant · recorded · {call.model or 'model not recorded'}")],
        key="pg_recorded",
    )


def show_ran(store: Store, call: ModelCall, ran: Ran | None = None) -> None:
    """The latest run of this call: its answer (or the provider's error), and where to open it."""
    replay_id = ran.result.session if ran else st.session_state.get(LAST, {}).get(_key(call))
    if replay_id is None:
        st.subheader("New answer")
        st.caption("Pick a model and press Run: its answer shows here, beside the recorded one.")
        return
    steps = ran.answer if ran else answer_of(store, replay_id)
    session = store.get_session(replay_id) or {}
    model = session.get("model") or "the model"
    error = next((s for s in steps if s.type == "error"), None)
    with st.container(key="pg_new"):
        st.subheader("New answer")
        if error is not None:
            st.error(md(f"{model} gave no answer: {error.content}"), icon=":material/error:")
        else:
            components.transcript(
                [f"What {model} answered to the edited messages, just now."],
                [answer_message(steps, f"assistant · new · {model}")],
                key="pg_answer",
            )
        st.caption("Stored as a one-step replay of this run: Compare and the timeline open it.")
        with st.container(horizontal=True, gap="small"):
            st.page_link(
                PAGE_COMPARE,
                label="Compare with the original",
                icon=":material/compare_arrows:",
                query_params={"a": call.session_id, "b": replay_id},
            )
            st.page_link(
                PAGE_TIMELINE,
                label="Open on the timeline",
                icon=":material/timeline:",
                query_params={"session": replay_id, "step": str(call.from_step)},
            )
