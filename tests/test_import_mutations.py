"""Bad input, for every reader: a truncated, reordered or type-confused copy of a real file either imports
accounted (every record read, used, ignored or refused) or is refused with one line naming the file and
where; never a traceback, never half-stored. Hypothesis, fixed seed, bounded examples."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES
from format_mutations import byte_mutated
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from replay_core.ingest.formats import registry
from replay_core.ingest.pipeline import FileRefused, ImportRejected, import_bytes
from replay_core.storage.store import Store

REPO = Path(__file__).resolve().parent.parent
# one real file per reader (tests/fixtures/SOURCES.md); the reader is forced so each one meets the damage
PER_READER = {
    "native": REPO / "data/demo/01-refund-defective-backpack.jsonl",
    "otlp-json": FIXTURES / "otel/edge_failed_and_totals.otlp.json",
    "otel-spans": FIXTURES / "otel/TINYAGENT_trace.json",
    "swe_agent": FIXTURES / "swe_agent/networking_1.traj",
    "mini_swe_agent": FIXTURES / "mini_swe_agent/github_issue.traj.json",
    "smolagents": FIXTURES / "smolagents/decentralized_run_023f7ac8_messages.jsonl",
    "notte": FIXTURES / "notte/notte_agent_status.json",
    "langchain": FIXTURES / "langchain/langsmith_agent_run.json",
    "anthropic": FIXTURES / "anthropic/messages_transcript.json",
    "openai_chat": FIXTURES / "openai_chat/chat_log.jsonl",
    "claude_code": FIXTURES / "claude_code/daaain_sidechain_integrated.jsonl",
    "codex_cli": FIXTURES / "codex_cli/yepanywhere_codex-basic_native.jsonl",
    "gemini_cli": FIXTURES / "gemini_cli/jazzyalex_agent-sessions_jsonl_v040.jsonl",
    "openhands": FIXTURES / "openhands/basic_interactions.json",
    "inspect_ai": FIXTURES / "inspect_ai/log_read_sample.json",
    "browser_use": FIXTURES / "browser_use/Pentest_agent_agent_history.json",
    "atif": FIXTURES / "atif/terminus_2_hello-world-timeout.trajectory.json",
    "langfuse": FIXTURES / "langfuse/ui_export_agent_run.json",
    "letta": FIXTURES / "letta/memgpt_agent_with_convo.af",
    "phoenix": FIXTURES / "phoenix/rest_spans.json",
    "pydantic_ai": FIXTURES / "pydantic_ai/messages_retry.json",
    "openai_agents": FIXTURES / "openai_agents/run_state_pending_approval.json",
    "openai_input_list": FIXTURES / "openai_agents/result_input_list.json",
    "aider": FIXTURES / "aider/simple-calculator.aider.chat.history.md",
    "autogen": FIXTURES / "autogen/task_result_tool_error.json",
    "crewai": FIXTURES / "crewai/crew_output_tool_error.json",
    "cline_ui": FIXTURES / "cline/ui_messages.first61.json",
    "goose": FIXTURES / "goose/export-session.json",
    "otlp-proto": FIXTURES / "otel/edge_failed_and_totals.otlp.json",  # the same export, encoded by opentelemetry-proto
}
EXAMPLES = int(os.environ.get("FUZZ_READER_EXAMPLES", "30"))  # `make fuzz` runs more, with more seeds
SEEDS = [int(x) for x in os.environ.get("FUZZ_SEEDS", "0").split(",")]


def _original(fmt: str) -> bytes:
    data = PER_READER[fmt].read_bytes()
    if fmt != "otlp-proto":
        return data
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return json_format.Parse(data, ExportTraceServiceRequest()).SerializeToString()


def test_every_reader_of_the_registry_is_fuzzed():
    assert set(PER_READER) == set(registry())


OTHER_TYPES = [None, 0, -1, 1.5, "", "x", True, [], {}, [1, "a"], {"k": None}]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    out = list(value)
    out[head] = _replace(out[head], rest, new)
    return out


def _documents(data: bytes) -> tuple[list, bool]:
    """The file as JSON values: its lines (JSONL) or its one document."""
    try:
        return [orjson.loads(data)], False
    except orjson.JSONDecodeError:
        return [orjson.loads(line) for line in data.split(b"\n") if line.strip()], True


def _encode(docs: list, lines: bool) -> bytes:
    if lines:
        return b"\n".join(orjson.dumps(d) for d in docs) + b"\n"
    return orjson.dumps(docs[0], option=orjson.OPT_INDENT_2)


@st.composite
def mutated(draw, data: bytes) -> bytes:
    try:
        docs, lines = _documents(data)
    except orjson.JSONDecodeError:  # a binary export (protobuf): cut it, or flip a byte
        at = draw(st.integers(0, len(data) - 1))
        if draw(st.booleans()):
            return data[:at]
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    kind = draw(st.sampled_from(["truncate", "reorder", "confuse"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "reorder":
        if lines:
            return _encode(draw(st.permutations(docs)), True)
        lists = [p for p in _paths(docs[0]) if isinstance(_get(docs[0], p), list) and len(_get(docs[0], p)) > 1]
        if not lists:
            return data
        where = draw(st.sampled_from(lists))
        return _encode([_replace(docs[0], where, draw(st.permutations(_get(docs[0], where))))], False)
    i = draw(st.integers(0, len(docs) - 1))
    where = draw(st.sampled_from(list(_paths(docs[i]))))
    docs[i] = _replace(docs[i], where, draw(st.sampled_from(OTHER_TYPES)))
    return _encode(docs, lines)


def _get(value, path):
    for part in path:
        value = value[part]
    return value


def _state(store: Store) -> dict:
    return {sid: store.get_session(sid)["steps"] for sid in store.session_ids()}


@pytest.mark.load  # a fuzz: its point is its breadth (30 damaged copies of each reader's file)
@pytest.mark.parametrize("fmt", sorted(PER_READER))
@pytest.mark.parametrize("fuzz_seed", SEEDS)
def test_damaged_files_are_refused_cleanly_or_imported_accounted(fmt, fuzz_seed, tmp_path_factory):
    original = _original(fmt)
    store = Store(f"sqlite:///{tmp_path_factory.mktemp(fmt) / 'm.db'}")

    @seed(fuzz_seed)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=mutated(original), skip_bad=st.booleans())
    def check(data: bytes, skip_bad: bool) -> None:
        before = _state(store)
        try:
            report = import_bytes(store, data, "damaged.json", fmt=fmt, skip_bad=skip_bad)
        except (ImportRejected, FileRefused) as exc:
            message = str(exc)
            assert message.startswith("damaged.json") and "\n" not in message and "Traceback" not in message, message
            assert _state(store) == before  # nothing half-stored
            return
        (acc,) = report.files
        assert acc["used"] + sum(acc["ignored"].values()) + acc["bad"] == acc["records"] or acc["used"] == 0
        assert len(report.errors) == acc["bad"] and (skip_bad or not report.errors)

    check()
    store.close()


def test_a_type_confused_line_is_named_by_its_line(tmp_path):
    lines = (FIXTURES / "openai_chat/chat_log.jsonl").read_bytes().split(b"\n")
    second = orjson.loads(lines[1])
    second["request"]["messages"][2]["tool_calls"] = [None]  # a call that is not an object
    lines[1] = orjson.dumps(second)
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    with pytest.raises(ImportRejected) as exc:
        import_bytes(store, b"\n".join(lines), "log.jsonl")
    assert str(exc.value) == (
        "log.jsonl:2: cannot be read as openai_chat: unexpected AttributeError ('NoneType' object has no attribute 'get')"
    )
    assert store.session_ids() == []
    with pytest.raises(FileRefused) as skipped:  # the reader broke off: --skip-bad has no half-read file to store
        import_bytes(store, b"\n".join(lines), "log.jsonl", skip_bad=True)
    assert "openai_chat: 0 of 3 lines used, 1 bad, 0 steps" in str(skipped.value)
    assert store.session_ids() == []
    store.close()


FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".md")
BYTE_EXAMPLES = int(os.environ.get("FUZZ_BYTE_EXAMPLES", "40"))  # `make fuzz`: 700 for each of 3 seeds


@pytest.mark.load  # a fuzz: its point is its breadth
@pytest.mark.parametrize("fuzz_seed", SEEDS)
def test_byte_damage_to_any_fixture_never_gives_a_traceback_or_half_a_file(fuzz_seed, tmp_path):
    """Bytes flipped, deleted, inserted or cut off in any fixture, read with auto-detection as an
    import does: the file imports accounted, or is refused with one line naming it; nothing half-stored."""
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    originals = {path: path.read_bytes() for path in FIXTURE_FILES}

    @seed(fuzz_seed)
    @settings(
        max_examples=BYTE_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data(), skip_bad=st.booleans())
    def check(data, skip_bad: bool) -> None:
        path = data.draw(st.sampled_from(FIXTURE_FILES), label="fixture")
        damaged = data.draw(byte_mutated(originals[path]), label="damaged")
        name = f"damaged{''.join(path.suffixes)}"
        before = _state(store)
        try:
            report = import_bytes(store, damaged, name, skip_bad=skip_bad)
        except (ImportRejected, FileRefused) as exc:
            message = str(exc)
            assert message.startswith(name) and "\n" not in message and "Traceback" not in message, message
            assert _state(store) == before  # nothing half-stored
            return
        (acc,) = report.files
        assert acc["steps"] > 0 or not report.sessions
        assert acc["used"] + sum(acc["ignored"].values()) + acc["bad"] == acc["records"] or acc["used"] == 0
        assert len(report.errors) == acc["bad"] and (skip_bad or not report.errors)

    check()
    store.close()
