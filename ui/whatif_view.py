"""A what-if replay on screen: the run and the cycles to replay, the models and their settings, the
system prompt, the budget, the estimate, the launch with its progress, and the results."""

from __future__ import annotations

import difflib
import json
import threading
import time
from dataclasses import dataclass

import streamlit as st

from replay_core.storage.actor import Actor
from replay_core.storage.store import SessionFilter, Store
from replay_core.understand.compare import describe as describe_step
from replay_core.understand.replay_outcome import ReplayOutcome, describe, replay_outcome
from replay_core.understand.timeline import Timeline
from replay_core.whatif.models import RECORDED_OPTION, ModelOption, Readiness, offered_models, readiness
from replay_core.whatif.replay import Progress, Recording, ReplayError, estimate_for, open_recording, replay_many
from replay_core.whatif.replay_config import (
    RECORDED,
    Budget,
    ConfigError,
    ReplayConfig,
    configs_for,
    default_api_base,
    default_api_key_env,
)

from . import components
from .common import PAGE_COMPARE, PAGE_TIMELINE, fmt_cost, fmt_when, md, run_label, short, url_choice, with_linked_runs
from .step_view import answer_message, raw_json

RESULTS = "whatif_results"  # the last launch's results, kept for the run they replayed


@dataclass
class ModelChoice:
    """The models picked to replay with, and the settings they share."""

    picked: list[ModelOption]
    fallback: ModelOption | None  # asked where a replay with the run's own answers departs
    recorded: bool  # the run's own answers are among the picked
    temperature: float | None
    max_tokens: int | None
    params_text: str  # other litellm parameters, as typed


def pick_run(store: Store) -> str | None:
    """The run to replay, bound to `?session=`: the latest runs plus the one in the link."""
    rows = with_linked_runs(store, store.list_sessions(limit=50), "session")
    if not rows:
        st.info(
            "There are no runs to replay yet. Load the demo runs with `agent-replay demo`, or import a trace on the "
            "**Import** page."
        )
        return None
    names = {r["id"]: run_label(r) for r in rows}
    return url_choice("Run to replay", "session", list(names), format_func=names.get, placeholder="Pick a run…")


def _start_cycle(tl: Timeline) -> int:
    """The cycle of `?step=` (the next one when the step is between cycles), else the first."""
    step = st.query_params.get("step", "")
    if not step.isdigit():
        return 0
    after = [c for c in tl.cycle_index[tl.position_of(int(step)) :] if c is not None]
    return after[0] if after else len(tl.cycles) - 1


def pick_range(store: Store, tl: Timeline, session_id: str) -> Recording | None:
    """The cycles to replay (from the linked step's to the last by default); None when they cannot be."""

    def cycle_label(i: int) -> str:
        c = tl.cycles[i]
        return f"cycle {i + 1} (steps {c.first_seq}–{c.last_seq})"

    start, last = _start_cycle(tl), len(tl.cycles) - 1
    first_c, last_c = (
        (0, 0)
        if last == 0
        else st.select_slider(
            "Cycles to replay",
            options=list(range(len(tl.cycles))),
            value=(start, last),
            format_func=cycle_label,
            key=f"cycles_{session_id}_{start}",
        )
    )
    from_step = tl.steps[0].seq if first_c == 0 else tl.cycles[first_c].first_seq
    to_step = tl.steps[-1].seq if last_c == last else tl.cycles[last_c].last_seq
    try:
        rec = open_recording(store, session_id, from_step, to_step)
    except ReplayError as exc:
        st.warning(md(str(exc)))
        return None
    st.caption(
        f"Steps {from_step}–{to_step}: {len(rec.range_steps)} steps, {len(rec.turns)} model turns. The model starts "
        f"from the context {rec.context_source}."
    )
    return rec


def offered_options() -> list[ModelOption]:
    """The models set up on this server; with a broken models file, says so and offers what still works."""
    try:
        options = offered_models()
    except ConfigError as exc:
        st.error("The list of models set up on this server could not be read, so only the run's own answers are offered.")
        with st.expander("What is wrong with it (for whoever runs Agent Replay)"):
            st.code(str(exc), language=None)
        return [RECORDED_OPTION]
    if len(options) == 1:
        st.info(
            "No live model is set up on this server yet. You can still replay with **the run's own answers**: a check "
            "that replaying reproduces the run step by step. To add models, see *For engineers* below."
        )
    return options


def _model_settings() -> tuple[float | None, int | None]:
    with st.expander("Model settings"):
        left, right = st.columns(2)
        temperature = left.number_input(
            "Temperature",
            min_value=0.0,
            max_value=2.0,
            value=None,
            step=0.1,
            placeholder="model default",
            help="Higher: more varied answers.",
        )
        max_tokens = right.number_input("Max tokens per answer", min_value=1, value=None, step=256, placeholder="model default")
    return temperature, max_tokens


def _engineer_settings() -> tuple[str, str, str, tuple[str | None, str | None]]:
    """Models typed by hand, the fallback, other litellm parameters, and the (API base, key variable) they use."""
    with st.expander("For engineers: other models and connection settings"):
        st.markdown(
            "The list above comes from `AGENT_REPLAY_MODELS` (comma-separated litellm model strings) and the models file "
            "named by `AGENT_REPLAY_MODELS_FILE` (name, provider, price; see docs/replay.md). Hosted providers need their key "
            "in the server's environment (for example `OPENAI_API_KEY`); a local OpenAI-compatible server (Ollama, vLLM, "
            "LM Studio) is reached at `AGENT_REPLAY_API_BASE`. Each model is checked before launch."
        )
        typed = st.text_input(
            "Other models",
            key="models_typed",
            placeholder="e.g. openai/gpt-4o-mini, ollama/llama3.1",
            help="Any litellm model string; separate several with commas.",
        )
        left, right = st.columns(2)
        api_base = left.text_input(
            "API base for these models", value=default_api_base() or "", placeholder="http://127.0.0.1:11434/v1"
        )
        api_key_env = right.text_input(
            "API key variable",
            value=default_api_key_env() or "",
            placeholder="OPENAI_API_KEY",
            help="The NAME of the environment variable holding the key; the key itself is never stored.",
        )
        fallback = left.text_input("Fallback for the run's own answers", placeholder="a live model, asked where the run departs")
        params_text = right.text_input(
            "Other litellm parameters",
            key="params",
            placeholder='{"top_p": 0.9, "seed": 7}',
            help="A JSON object passed to litellm as it is.",
        )
    return typed, fallback.strip(), params_text, (api_base.strip() or None, api_key_env.strip() or None)


def pick_models() -> ModelChoice:
    """The models offered and typed, with their settings."""
    options = offered_options()
    by_model = {o.model: o for o in options}
    chosen = st.multiselect(
        "Models",
        list(by_model),
        default=[RECORDED] if len(options) == 1 else [],
        key="models",
        format_func=lambda m: by_model[m].label,
        help="The models set up on this server, with their prices.",
    )
    temperature, max_tokens = _model_settings()
    typed, fallback, params_text, connection = _engineer_settings()
    typed_options = [
        ModelOption(m, m, m.split("/", 1)[0] if "/" in m else None, *connection)
        for m in dict.fromkeys(m.strip() for m in typed.split(",") if m.strip())
        if m not in by_model
    ]
    fallback_option = next((o for o in options if o.model == fallback), None) or (
        ModelOption(fallback, fallback, None, *connection) if fallback else None
    )
    return ModelChoice(
        [by_model[m] for m in chosen] + typed_options, fallback_option, RECORDED in chosen, temperature, max_tokens, params_text
    )


@st.cache_data(ttl=30, show_spinner="Checking that the models can run…")
def _readiness(option: ModelOption) -> Readiness:
    return readiness(option)


def blocked_models(choice: ModelChoice, editor: bool) -> list[tuple[ModelOption, Readiness]]:
    """The picked models that cannot run now, each with how to fix it. Checked only for those who may
    launch: the checks reach out to model servers."""
    checked = [*choice.picked, *([choice.fallback] if choice.fallback and choice.recorded else [])] if editor else []
    blocked = [(option, ready) for option in checked if not (ready := _readiness(option)).ok]
    for option, ready in blocked:
        st.warning(md(f"{option.name} cannot run now: {ready.reason}"), icon=":material/block:")
        with st.expander(f"How to fix it (for whoever runs Agent Replay): {md(option.name)}"):
            st.code(ready.fix, language="bash")
    return blocked


def system_prompt_choice(rec: Recording, session_id: str) -> tuple[str | None, str]:
    """The system prompt kept, edited or appended to (shown as a diff): (text or None to keep it, "replace" | "append")."""
    original = rec.system_prompt()
    mode = st.radio("System prompt", ["Keep the original", "Edit it", "Append to it"], horizontal=True, key="prompt_mode")
    system_prompt, system_mode = None, "replace"
    if mode == "Edit it":
        system_prompt = st.text_area("New system prompt", value=original, height=160, key=f"prompt_{session_id}")
    elif mode == "Append to it":
        system_prompt, system_mode = st.text_area("Text to append", height=100, key="prompt_append"), "append"
    if system_prompt is not None:
        edited = system_prompt if system_mode == "replace" else f"{original}\n\n{system_prompt}".strip()
        diff = list(difflib.unified_diff(original.splitlines(), edited.splitlines(), "original", "replay", lineterm=""))
        st.code("\n".join(diff) if diff else "(no change to the system prompt)", language="diff")
    elif original:
        with st.expander("Original system prompt"):
            st.text(original)
    return system_prompt, system_mode


def budget_inputs(rec: Recording) -> Budget:
    with st.expander("Budget per replay"):
        left, mid, right = st.columns(3)
        max_steps = left.number_input("Max steps", min_value=1, value=2 * len(rec.range_steps) + 20)
        max_cost = mid.number_input("Max cost (USD)", min_value=0.0, value=None, step=0.5, placeholder="no limit")
        timeout = right.number_input("Max time (s)", min_value=1.0, value=600.0, step=30.0)
    return Budget(max_steps=int(max_steps), max_cost_usd=max_cost, timeout_s=timeout)


def replay_configs(
    choice: ModelChoice, blocked: list[tuple[ModelOption, Readiness]], prompt: tuple[str | None, str], budget: Budget
) -> list[ReplayConfig]:
    """One config per picked model that can run; none, with the reason shown, when a setting is wrong."""
    runnable = [o for o in choice.picked if o not in {b for b, _ in blocked}]
    if not runnable:
        return []
    system_prompt, system_mode = prompt
    try:
        params = json.loads(choice.params_text) if choice.params_text.strip() else {}
        if not isinstance(params, dict):
            raise ConfigError('Other litellm parameters: give a JSON object, e.g. {"top_p": 0.9}')
        shared = {
            "temperature": choice.temperature,
            "max_tokens": choice.max_tokens,
            "params": params,
            "system_prompt": system_prompt,
            "system_mode": system_mode,
            "budget": budget,
        }
        fallback_model = choice.fallback.model if choice.fallback else None
        return [c for o in runnable for c in configs_for([o.model], **shared, **o.settings(), fallback_model=fallback_model)]
    except ConfigError as exc:
        st.error(md(str(exc)))
    except ValueError as exc:  # JSON that does not parse
        st.error(md(f"Other litellm parameters: not JSON ({exc})"))
    return []


def estimate(rec: Recording, configs: list[ReplayConfig]) -> None:
    if not configs:
        return
    st.subheader("Estimate")
    st.caption("Only for the models that can run now.")
    st.dataframe(
        [
            {
                "model": e.model,
                "model turns": e.turns,
                "tokens in (≈)": e.tokens_in,
                "tokens out (≈)": e.tokens_out,
                "cost (≈)": fmt_cost(e.cost_usd, "unknown"),
                "notes": "; ".join(e.notes),
            }
            for e in estimate_for(rec, configs)
        ],
        hide_index=True,
    )


def launch_button(editor: bool, configs: list[ReplayConfig], blocked: list) -> bool:
    """Launching costs money: editors only, and only with every picked model able to run."""
    if not editor:
        st.caption("Only editors can launch replays (they cost money). You can still open earlier replays below.")
    return st.button(
        "Launch",
        type="primary",
        disabled=not (editor and configs and not blocked),
        key="launch",
        help="Remove or fix the models that cannot run first." if blocked else None,
    )


def run_replays(store: Store, session_id: str, rec: Recording, configs: list[ReplayConfig], actor: Actor) -> None:
    """Run the fan-out on a worker thread, show each model's progress until all are done, and keep the results."""
    progress: dict[str, Progress] = {}
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["results"] = replay_many(
                store,
                session_id,
                rec.from_step,
                rec.to_step,
                configs,
                actor=actor,
                on_progress=lambda p: progress.__setitem__(p.model, p),
            )
        except Exception as exc:  # noqa: BLE001 — shown below, with its class
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="whatif", daemon=True)
    worker.start()
    _show_progress(worker, progress, [c.label for c in configs])
    if "error" in outcome:
        st.error("The replays could not run. Nothing was launched past this point.")
        with st.expander("What went wrong (for engineers)"):
            st.code(f"{type(outcome['error']).__name__}: {outcome['error']}", language=None)
    results = [r.to_dict() for r in outcome.get("results", [])]
    st.session_state[RESULTS] = {"source": session_id, "results": results}


def _show_progress(worker: threading.Thread, progress: dict[str, Progress], labels: list[str]) -> None:
    boxes = {label: st.empty() for label in labels}
    while worker.is_alive():
        for label, box in boxes.items():
            p = progress.get(label)
            box.text(f"{label}: " + (f"{p.steps} steps so far" if p else "starting…"))
        time.sleep(0.2)
    for box in boxes.values():
        box.empty()


def _outcome_of(r: dict):
    """The replay's own outcome against the original (reproduced, diverged at step 8, could not start: …)."""
    return describe(
        r["outcome"], r["message"], r["error_class"], r["first_divergence"], model=r["model"], started=r["model_calls"] > 0
    )


def _step_at(store: Store, session_id: str, seq: int | None) -> str:
    """What the run did at step `seq`, in words ("called search(…)", "answered “Stopping here”")."""
    if seq is None:
        return "no step there"
    found = store.load_steps(session_id, from_seq=seq, to_seq=seq)
    return f"step {seq}: {describe_step(found[0])}" if found else f"step {seq}: not stored"


def at_divergence(store: Store, source: str, r: dict) -> tuple[str, str]:
    """What the original did and what the new model did where the replay left the original."""
    div = r["first_divergence"]
    if div is None:
        return "same steps as the replay", "the original's steps"
    if div.get("a_seq") is None and div.get("b_seq") is None:
        return "the same steps, then another ending", "the same steps, then another ending"
    return _step_at(store, source, div.get("a_seq")), _step_at(store, r["session"], div.get("b_seq"))


def _bubble(store: Store, session_id: str, seq: int | None, origin: str) -> dict | None:
    """Step `seq` of a run as a chat bubble (a failure as the error it recorded); None where there is no step."""
    found = store.load_steps(session_id, from_seq=seq, to_seq=seq) if seq is not None else []
    if not found:
        return None
    step = found[0]
    if step.type == "error":  # the run's own failure: said as it was recorded, not as a model's words
        text = f"{step.error_class}: {step.content}" if step.error_class and step.content else step.content or step.error_class
        return _said(f"{origin} · error at step {seq}", text or "error", {"type": "error", "error_class": step.error_class})
    return answer_message(found, f"{origin} · step {seq}")


def _said(origin: str, text: str, stored: dict) -> dict:
    """A bubble of text that is no model's message (an error, the provider's answer), with its JSON as stored."""
    stored = {**stored, "content": text}
    return {"role": "error", "origin": origin, "parts": [("text", text)], "calls": [], "json": raw_json(stored)}


def side_by_side(store: Store, source: str, r: dict, told: ReplayOutcome, *, key: str) -> None:
    """Where the replay left the original, each side's step as the timeline's chat bubbles (Raw JSON a click away):
    what the original did, and what the new model did (or what its provider answered instead)."""
    div = r["first_divergence"] or {}
    original = _bubble(store, source, div.get("a_seq"), "original")
    if told.kind in ("could_not_start", "stopped") and told.raw:
        new = _said(f"{r['model']} · provider's answer", told.raw, {"model": r["model"], "outcome": r["outcome"]})
    else:
        new = _bubble(store, r["session"], div.get("b_seq"), r["model"])
    if original is None and new is None:
        return
    left, right = st.columns(2)
    with left:
        components.transcript(["What the original did there."], [original] if original else [], key=f"{key}_original")
    with right:
        components.transcript([f"What {r['model']} did instead."], [new] if new else [], key=f"{key}_new")


def results(store: Store, session_id: str) -> None:
    """The last launch's replays of this run: a table (what each model did where it left the original,
    beside what the original did), then each one's two sides there as bubbles, and its timeline and comparison."""
    shown = st.session_state.get(RESULTS)
    if not (shown and shown["source"] == session_id and shown["results"]):
        return
    st.subheader("Results")
    st.caption("What each replay did, not whether it was right: that is for a scorer (Experiments) or a reviewer.")
    rows = []
    for r in shown["results"]:
        original, new = at_divergence(store, session_id, r)
        rows.append(
            {
                "model": r["model"],
                "what happened": _outcome_of(r).text,
                "the original did": original,
                "this model did": new,
                "steps": r["steps"],
                "tokens in": r["tokens_in"],
                "tokens out": r["tokens_out"],
                "cost": fmt_cost(r["cost_usd"], "unknown"),
                "model time (s)": round(r["latency_ms"] / 1000, 2),
            }
        )
    said = st.column_config.TextColumn(width="medium")  # the whole of it is in the bubbles below
    st.dataframe(rows, hide_index=True, key="whatif_results", column_config={"the original did": said, "this model did": said})
    for i, r in enumerate(shown["results"]):
        told = _outcome_of(r)
        st.markdown(f"**{md(r['model'])}**: {md(told.text)}")
        side_by_side(store, session_id, r, told, key=f"whatif_said_{i}")
        left, right = st.columns(2)
        left.page_link(
            PAGE_TIMELINE,
            label=f"Timeline of the {md(r['model'])} replay",
            icon=":material/timeline:",
            query_params={"session": r["session"]},
        )
        right.page_link(
            PAGE_COMPARE,
            label=f"Compare the {md(r['model'])} replay with the original",
            icon=":material/compare_arrows:",
            query_params={"a": session_id, "b": r["session"]},
        )


def earlier_replays(store: Store, session_id: str) -> None:
    earlier = store.list_sessions(SessionFilter(replay_of=session_id), limit=10)
    if not earlier:
        return
    with st.expander(f"Earlier replays of this run ({store.count_sessions(SessionFilter(replay_of=session_id))})"):
        for r in earlier:
            told = replay_outcome(store, r).text
            st.page_link(
                PAGE_COMPARE,
                label=md(short(f"{r['model']} · {told} · {fmt_when(r['started_at'])}")),
                query_params={"a": session_id, "b": r["id"]},
            )
