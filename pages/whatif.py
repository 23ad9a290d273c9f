"""What-if: re-run a stretch of a run with other models, prompt or temperature, and see where it departs.

`?session=<id>&step=<n>` arrives with a run and the cycle of step n picked (the timeline
links here). Launching costs money, so it needs the editor role.
"""

from __future__ import annotations

import difflib
import json
import threading
import time

import streamlit as st

from replay_core.whatif.replay import Progress, ReplayError, estimate_for, open_recording, replay_many
from replay_core.understand.replay_outcome import describe, replay_outcome
from replay_core.whatif.models import RECORDED_OPTION, ModelOption, Readiness, offered_models, readiness
from replay_core.whatif.replay_config import RECORDED, Budget, ConfigError, configs_for, default_api_base, default_api_key_env
from replay_core.storage.store import SessionFilter
from replay_core.storage.actor import REPLAY
from ui.common import PAGE_TIMELINE, current_actor, fmt_cost, fmt_when, get_store, load_timeline, md, short, status_label, url_choice

PAGE_COMPARE = "pages/compare.py"

st.title("What-if replay")
st.caption("Re-run part of a recorded run with another model, temperature or system prompt, and see exactly "
           "where the new run departs from the original.")
store = get_store()

# ---------------------------------------------------------------------------- the run

rows = store.list_sessions(limit=50)
wanted = st.query_params.get("session")
if wanted and wanted not in {r["id"] for r in rows} and (row := store.get_session(wanted)) is not None:
    rows.insert(0, row)
if not rows:
    st.info("There are no runs to replay yet. Load the demo runs with `agent-replay demo`, or import a trace on the "
            "**Import** page.")
    st.stop()
names = {r["id"]: f"{r['name'] or r['id']} · {status_label(r['status'])} · {fmt_when(r['started_at'])}" for r in rows}
session_id = url_choice("Run to replay", "session", list(names), format_func=names.get, placeholder="Pick a run…")
if session_id is None:
    st.stop()
tl = load_timeline(store, session_id)
if tl is None or not tl.cycles:
    st.warning("This run has no decision cycles (no thought, tool call or answer) to replay. Pick another run.")
    st.stop()

# ---------------------------------------------------------------------------- the range, by cycles


def cycle_label(i: int) -> str:
    c = tl.cycles[i]
    return f"cycle {i + 1} (steps {c.first_seq}–{c.last_seq})"


start = 0
if (step := st.query_params.get("step", "")).isdigit():
    pos = tl.position_of(int(step))
    after = [c for c in tl.cycle_index[pos:] if c is not None]
    start = after[0] if after else len(tl.cycles) - 1
last = len(tl.cycles) - 1
first_c, last_c = (0, 0) if last == 0 else st.select_slider(
    "Cycles to replay", options=list(range(len(tl.cycles))), value=(start, last), format_func=cycle_label,
    key=f"cycles_{session_id}_{start}",
)
from_step = tl.steps[0].seq if first_c == 0 else tl.cycles[first_c].first_seq
to_step = tl.steps[-1].seq if last_c == last else tl.cycles[last_c].last_seq
try:
    rec = open_recording(store, session_id, from_step, to_step)
except ReplayError as exc:
    st.warning(md(str(exc)))
    st.stop()
st.caption(f"Steps {from_step}–{to_step}: {len(rec.range_steps)} steps, {len(rec.turns)} model turns. The model starts "
           f"from the context {rec.context_source}.")

# ---------------------------------------------------------------------------- models and settings

actor = current_actor()
editor = actor.may(REPLAY)
try:
    options = offered_models()
    setup_error = None
except ConfigError as exc:  # a broken models file: say so, offer what still works
    options, setup_error = [RECORDED_OPTION], exc
by_model = {o.model: o for o in options}
if setup_error is not None:
    st.error("The list of models set up on this server could not be read, so only the run's own answers are offered.")
    with st.expander("What is wrong with it (for whoever runs Agent Replay)"):
        st.code(str(setup_error), language=None)
elif len(options) == 1:
    st.info("No live model is set up on this server yet. You can still replay with **the run's own answers**: a check "
            "that replaying reproduces the run step by step. To add models, see *For engineers* below.")
chosen = st.multiselect("Models", list(by_model), default=[RECORDED] if len(options) == 1 else [], key="models",
                        format_func=lambda m: by_model[m].label, help="The models set up on this server, with their prices.")

with st.expander("Model settings"):
    left, right = st.columns(2)
    temperature = left.number_input("Temperature", min_value=0.0, max_value=2.0, value=None, step=0.1, placeholder="model default",
                                    help="Higher: more varied answers.")
    max_tokens = right.number_input("Max tokens per answer", min_value=1, value=None, step=256, placeholder="model default")

with st.expander("For engineers: other models and connection settings"):
    st.markdown(
        "The list above comes from `AGENT_REPLAY_MODELS` (comma-separated litellm model strings) and the models file "
        "named by `AGENT_REPLAY_MODELS_FILE` (name, provider, price; see docs/replay.md). Hosted providers need their key "
        "in the server's environment (for example `OPENAI_API_KEY`); a local OpenAI-compatible server (Ollama, vLLM, "
        "LM Studio) is reached at `AGENT_REPLAY_API_BASE`. Each model is checked before launch."
    )
    typed = st.text_input("Other models", key="models_typed", placeholder="e.g. openai/gpt-4o-mini, ollama/llama3.1",
                          help="Any litellm model string; separate several with commas.")
    left, right = st.columns(2)
    api_base = left.text_input("API base for these models", value=default_api_base() or "", placeholder="http://127.0.0.1:11434/v1")
    api_key_env = right.text_input("API key variable", value=default_api_key_env() or "", placeholder="OPENAI_API_KEY",
                                   help="The NAME of the environment variable holding the key; the key itself is never stored.")
    fallback = left.text_input("Fallback for the run's own answers", placeholder="a live model, asked where the run departs")
    params_text = right.text_input("Other litellm parameters", key="params", placeholder='{"top_p": 0.9, "seed": 7}',
                                   help="A JSON object passed to litellm as it is.")
typed_options = [ModelOption(m, m, m.split("/", 1)[0] if "/" in m else None, api_base.strip() or None, api_key_env.strip() or None)
                 for m in dict.fromkeys(m.strip() for m in typed.split(",") if m.strip()) if m not in by_model]
picked = [by_model[m] for m in chosen] + typed_options
fallback_option = next((o for o in options if o.model == fallback.strip()), None) or (
    ModelOption(fallback.strip(), fallback.strip(), None, api_base.strip() or None, api_key_env.strip() or None)
    if fallback.strip() else None)


@st.cache_data(ttl=30, show_spinner="Checking that the models can run…")
def _readiness(option: ModelOption) -> Readiness:
    return readiness(option)


blocked = []  # (option, readiness) of the picked models that cannot run now
if editor:  # the checks reach out to model servers: only for those who may launch
    for option in [*picked, *([fallback_option] if fallback_option and RECORDED in chosen else [])]:
        ready = _readiness(option)
        if not ready.ok:
            blocked.append((option, ready))
for option, ready in blocked:
    st.warning(md(f"{option.name} cannot run now: {ready.reason}"), icon=":material/block:")
    with st.expander(f"How to fix it (for whoever runs Agent Replay): {md(option.name)}"):
        st.code(ready.fix, language="bash")
runnable = [o for o in picked if o not in {b for b, _ in blocked}]

original_prompt = rec.system_prompt()
prompt_mode = st.radio("System prompt", ["Keep the original", "Edit it", "Append to it"], horizontal=True, key="prompt_mode")
system_prompt, system_mode = None, "replace"
if prompt_mode == "Edit it":
    system_prompt = st.text_area("New system prompt", value=original_prompt, height=160, key=f"prompt_{session_id}")
elif prompt_mode == "Append to it":
    system_prompt, system_mode = st.text_area("Text to append", height=100, key="prompt_append"), "append"
if system_prompt is not None:
    edited = system_prompt if system_mode == "replace" else f"{original_prompt}\n\n{system_prompt}".strip()
    diff = list(difflib.unified_diff(original_prompt.splitlines(), edited.splitlines(), "original", "replay", lineterm=""))
    st.code("\n".join(diff) if diff else "(no change to the system prompt)", language="diff")
elif original_prompt:
    with st.expander("Original system prompt"):
        st.text(original_prompt)

with st.expander("Budget per replay"):
    left, mid, right = st.columns(3)
    max_steps = left.number_input("Max steps", min_value=1, value=2 * len(rec.range_steps) + 20)
    max_cost = mid.number_input("Max cost (USD)", min_value=0.0, value=None, step=0.5, placeholder="no limit")
    timeout = right.number_input("Max time (s)", min_value=1.0, value=600.0, step=30.0)

# ---------------------------------------------------------------------------- estimate and launch

configs = []
if runnable:
    try:
        params = json.loads(params_text) if params_text.strip() else {}
        if not isinstance(params, dict):
            raise ConfigError("Other litellm parameters: give a JSON object, e.g. {\"top_p\": 0.9}")
        shared = dict(temperature=temperature, max_tokens=max_tokens, params=params, system_prompt=system_prompt,
                      system_mode=system_mode, budget=Budget(max_steps=int(max_steps), max_cost_usd=max_cost, timeout_s=timeout))
        configs = [c for o in runnable for c in configs_for([o.model], **shared, **o.settings(),
                                                            fallback_model=fallback_option.model if fallback_option else None)]
    except ConfigError as exc:
        st.error(md(str(exc)))
    except ValueError as exc:  # JSON that does not parse
        st.error(md(f"Other litellm parameters: not JSON ({exc})"))
if configs:
    st.subheader("Estimate")
    st.caption("Only for the models that can run now.")
    st.dataframe(
        [{"model": e.model, "model turns": e.turns, "tokens in (≈)": e.tokens_in, "tokens out (≈)": e.tokens_out,
          "cost (≈)": "unknown" if e.cost_usd is None else fmt_cost(e.cost_usd), "notes": "; ".join(e.notes)}
         for e in estimate_for(rec, configs)],
        hide_index=True,
    )

if not editor:
    st.caption("Only editors can launch replays (they cost money). You can still open earlier replays below.")
launch = st.button("Launch", type="primary", disabled=not (editor and configs and not blocked), key="launch",
                   help="Remove or fix the models that cannot run first." if blocked else None)


def run_replays() -> list[dict]:
    """Run the fan-out on a worker thread and show each model's progress until all are done."""
    progress: dict[str, Progress] = {}
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["results"] = replay_many(store, session_id, from_step, to_step, configs, actor=actor,
                                             on_progress=lambda p: progress.__setitem__(p.model, p))
        except Exception as exc:  # shown below, with its class
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="whatif", daemon=True)
    worker.start()
    boxes = {c.label: st.empty() for c in configs}
    while worker.is_alive():
        for label, box in boxes.items():
            p = progress.get(label)
            box.text(f"{label}: " + (f"{p.steps} steps so far" if p else "starting…"))
        time.sleep(0.2)
    for box in boxes.values():
        box.empty()
    if "error" in outcome:
        st.error("The replays could not run. Nothing was launched past this point.")
        with st.expander("What went wrong (for engineers)"):
            st.code(f"{type(outcome['error']).__name__}: {outcome['error']}", language=None)
        return []
    return [r.to_dict() for r in outcome["results"]]


if launch:
    st.session_state["whatif_results"] = {"source": session_id, "results": run_replays()}

# ---------------------------------------------------------------------------- results

def outcome_of(r: dict):
    """The replay's own outcome against the original (reproduced, diverged at step 8, could not start: …)."""
    return describe(r["outcome"], r["message"], r["error_class"], r["first_divergence"], model=r["model"],
                    started=r["model_calls"] > 0)


shown = st.session_state.get("whatif_results")
if shown and shown["source"] == session_id and shown["results"]:
    st.subheader("Results")
    st.dataframe(
        [{"model": r["model"], "outcome": outcome_of(r).text, "steps": r["steps"], "tokens in": r["tokens_in"],
          "tokens out": r["tokens_out"], "cost": "unknown" if r["cost_usd"] is None else fmt_cost(r["cost_usd"]),
          "model time (s)": round(r["latency_ms"] / 1000, 2),
          "first divergence": r["first_divergence"]["summary"] if r["first_divergence"] else "none: same steps as the original"}
         for r in shown["results"]],
        hide_index=True,
    )
    for r in shown["results"]:
        told = outcome_of(r)
        if told.kind in ("could_not_start", "stopped") and told.raw:
            with st.expander(f"What the provider said about the {md(r['model'])} replay (for engineers)"):
                st.code(told.raw, language=None)
        left, right = st.columns(2)
        left.page_link(PAGE_TIMELINE, label=f"Timeline of the {md(r['model'])} replay", icon=":material/timeline:",
                       query_params={"session": r["session"]})
        right.page_link(PAGE_COMPARE, label=f"Compare the {md(r['model'])} replay with the original",
                        icon=":material/compare_arrows:", query_params={"a": session_id, "b": r["session"]})

earlier = store.list_sessions(SessionFilter(replay_of=session_id), limit=10)
if earlier:
    with st.expander(f"Earlier replays of this run ({store.count_sessions(SessionFilter(replay_of=session_id))})"):
        for r in earlier:
            told = replay_outcome(store, r).text
            st.page_link(PAGE_COMPARE, label=md(short(f"{r['model']} · {told} · {fmt_when(r['started_at'])}")),
                         query_params={"a": session_id, "b": r["id"]})
