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
from replay_core.whatif.replay_config import (
    RECORDED, Budget, ConfigError, configs_for, configured_models, configured_providers, default_api_base,
    default_api_key_env,
)
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

providers = configured_providers()
if not providers:
    st.info(
        "No model provider is set up. To replay with a live model, set a provider key in the environment the app "
        "runs in (for example `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`), or run a local OpenAI-compatible server "
        "(Ollama, vLLM, LM Studio) and give its address below or in `AGENT_REPLAY_API_BASE`. Until then, the model "
        "`recorded` replays the run from its own answers: a null replay that must match the original."
    )
offered = configured_models()
chosen = st.multiselect("Models", offered, default=[RECORDED] if not providers else [], key="models",
                        help="Models listed in AGENT_REPLAY_MODELS, and `recorded` (the run's own answers).")
typed = st.text_input("Other models", key="models_typed", placeholder="e.g. openai/gpt-4o-mini, ollama/llama3.1",
                      help="Any litellm model string; separate several with commas.")
models = list(dict.fromkeys([*chosen, *(m.strip() for m in typed.split(",") if m.strip())]))

with st.expander("Model settings"):
    left, right = st.columns(2)
    temperature = left.number_input("Temperature", min_value=0.0, max_value=2.0, value=None, step=0.1, placeholder="model default")
    max_tokens = right.number_input("Max tokens per answer", min_value=1, value=None, step=256, placeholder="model default")
    api_base = left.text_input("API base (local server)", value=default_api_base() or "", placeholder="http://127.0.0.1:11434/v1")
    api_key_env = right.text_input("API key variable", value=default_api_key_env() or "", placeholder="OPENAI_API_KEY",
                                   help="The NAME of the environment variable holding the key; the key itself is never stored.")
    fallback = left.text_input("Fallback for `recorded`", placeholder="a live model, asked where the run departs")
    params_text = right.text_input("Other litellm parameters", key="params", placeholder='{"top_p": 0.9, "seed": 7}',
                                   help="A JSON object passed to litellm as it is.")

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
if models:
    try:
        params = json.loads(params_text) if params_text.strip() else {}
        if not isinstance(params, dict):
            raise ConfigError("Other litellm parameters: give a JSON object, e.g. {\"top_p\": 0.9}")
        configs = configs_for(
            models, fallback_model=fallback.strip() or None, temperature=temperature, max_tokens=max_tokens, params=params,
            api_base=api_base.strip() or None, api_key_env=api_key_env.strip() or None, system_prompt=system_prompt,
            system_mode=system_mode, budget=Budget(max_steps=int(max_steps), max_cost_usd=max_cost, timeout_s=timeout),
        )
    except ConfigError as exc:
        st.error(md(str(exc)))
    except ValueError as exc:  # JSON that does not parse
        st.error(md(f"Other litellm parameters: not JSON ({exc})"))
if configs:
    st.subheader("Estimate")
    st.dataframe(
        [{"model": e.model, "model turns": e.turns, "tokens in (≈)": e.tokens_in, "tokens out (≈)": e.tokens_out,
          "cost (≈)": "unknown" if e.cost_usd is None else fmt_cost(e.cost_usd), "notes": "; ".join(e.notes)}
         for e in estimate_for(rec, configs)],
        hide_index=True,
    )

actor = current_actor()
editor = actor.may(REPLAY)
if not editor:
    st.caption("Only editors can launch replays (they cost money). You can still open earlier replays below.")
launch = st.button("Launch", type="primary", disabled=not (editor and configs), key="launch")


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
        st.error(md(f"The replay could not run: {type(outcome['error']).__name__}: {outcome['error']}"))
        return []
    return [r.to_dict() for r in outcome["results"]]


if launch:
    st.session_state["whatif_results"] = {"source": session_id, "results": run_replays()}

# ---------------------------------------------------------------------------- results

shown = st.session_state.get("whatif_results")
if shown and shown["source"] == session_id and shown["results"]:
    st.subheader("Results")
    st.dataframe(
        [{"model": r["model"], "status": status_label(r["status"]), "stopped": f"{r['outcome'].replace('_', ' ')}: {r['message']}",
          "steps": r["steps"], "tokens in": r["tokens_in"], "tokens out": r["tokens_out"],
          "cost": "unknown" if r["cost_usd"] is None else fmt_cost(r["cost_usd"]),
          "model time (s)": round(r["latency_ms"] / 1000, 2),
          "first divergence": r["first_divergence"]["summary"] if r["first_divergence"] else "none: same steps as the original"}
         for r in shown["results"]],
        hide_index=True,
    )
    for r in shown["results"]:
        left, right = st.columns(2)
        left.page_link(PAGE_TIMELINE, label=f"Timeline of the {md(r['model'])} replay", icon=":material/timeline:",
                       query_params={"session": r["session"]})
        right.page_link(PAGE_COMPARE, label=f"Compare the {md(r['model'])} replay with the original",
                        icon=":material/compare_arrows:", query_params={"a": session_id, "b": r["session"]})

earlier = store.list_sessions(SessionFilter(replay_of=session_id), limit=10)
if earlier:
    with st.expander(f"Earlier replays of this run ({store.count_sessions(SessionFilter(replay_of=session_id))})"):
        for r in earlier:
            st.page_link(PAGE_COMPARE, label=md(short(f"{r['model']} · {status_label(r['status'])} · {fmt_when(r['started_at'])}")),
                         query_params={"a": session_id, "b": r["id"]})
