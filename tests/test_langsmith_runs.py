"""The LangSmith SDK's requests (tests/fixtures/langsmith, captured from langsmith 0.15.1 by
scripts/capture_sdks/capture_langsmith.py) posted to the app's LangSmith routes: a trace's runs, whose
starts and ends come in different requests, are merged by id and stored once its root has ended, as
the `langchain` reader reads a run tree; a patch whose post never came is named, never dropped; a
payload file of post/patch halves imports through the same merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from replay_core.ingest.pipeline import ImportRejected, import_file
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.server.routes.langsmith import HeldTraces
from replay_core.storage.store import Store

CAPTURES = FIXTURES / "langsmith"
TOKEN = "ls-token-0000"
ANSWER_OK = "In Paris it is sunny and 21 °C, and the local time is 14:05."


def _requests(capture: str) -> list[tuple[str, str, bytes]]:
    """(path, content type, body) of each POST the SDK made, in arrival order (its GET /info left out)."""
    manifest = json.loads((CAPTURES / capture / "manifest.json").read_text())
    return [
        (r["path"], r["headers"]["content-type"], (CAPTURES / capture / r["file"]).read_bytes())
        for r in manifest["requests"]
        if r["method"] == "POST"
    ]


@pytest.fixture
def client(store):
    with TestClient(create_app(store, access=Access(api_tokens=(TOKEN,)))) as c:
        yield c


def _post(client, path: str, content_type: str, body: bytes) -> dict:
    res = client.post(path, content=body, headers={"x-api-key": TOKEN, "content-type": content_type})
    assert res.status_code == 200, res.text
    return res.json()


def test_info_tells_the_sdk_to_send_multipart_and_every_batch_setting_it_reads(client):
    info = client.get("/info").json()
    assert info["batch_ingest_config"]["use_multipart_endpoint"] is True
    assert {"size_limit", "scale_up_nthreads_limit", "scale_up_qsize_trigger", "scale_down_nempty_trigger"} <= set(
        info["batch_ingest_config"]
    )


@pytest.mark.parametrize("order", ["captured", "reversed"])
@pytest.mark.parametrize("capture", ["batch-ok", "batch-tool-error", "multipart-ok", "multipart-tool-error"])
def test_a_traced_run_is_stored_whole_once_its_root_ends(client, store, capture, order):
    sent = _requests(capture)
    answers = [_post(client, *r) for r in (sent if order == "captured" else sent[::-1])]
    assert [a["held_runs"] for a in answers][-1] == 0
    assert all(a["patches_without_post"] == [] for a in answers)
    assert [bool(a["sessions"]) for a in answers] == [False] * (len(sent) - 1) + [True]  # stored once, when whole
    [run] = store.list_sessions()
    assert (run["name"], run["status"], run["source"], run["model"]) == (
        "travel_assistant",
        "succeeded",
        "langsmith",
        "gpt-4o-mini",
    )
    assert (run["tokens_in"], run["tokens_out"]) == (660, 36)
    steps = store.load_steps(run["id"])
    assert [(s.type, s.tool_name) for s in steps] == [
        ("span", None),
        ("think", None),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("think", None),
        ("tool_call", "get_time"),
        ("tool_result", "get_time"),
        ("decision", None),
    ]
    assert [(s.tokens_in, s.tokens_out) for s in steps if s.type in ("think", "decision")] == [(120, 11), (220, 12), (320, 13)]
    assert [(s.tool_args, s.tool_call_id) for s in steps if s.type == "tool_call"] == [
        ({"city": "Paris"}, "call_get_weather_1"),
        ({"city": "Paris"}, "call_get_time_2"),
    ]
    contexts = store.step_contexts(run["id"])
    assert [len(contexts[s.event_id]) for s in steps if s.type in ("think", "decision")] == [2, 4, 6]
    failed = steps[6]
    if capture.endswith("tool-error"):
        assert (failed.status, failed.error_class) == ("error", "RuntimeError")
        assert "time service unavailable for Paris" in failed.content
    else:
        assert (failed.status, failed.content, run["outcome"]) == ("ok", "14:05 (CET) in Paris", ANSWER_OK)


def test_zstd_multipart_as_the_sdk_sends_it_with_zstandard_installed(client, store):
    import zstandard

    assert client.get("/info").json()["instance_flags"]["zstd_compression_enabled"] is True
    for path, content_type, body in _requests("multipart-ok"):
        packed = zstandard.ZstdCompressor().compress(body)
        res = client.post(
            path, content=packed, headers={"x-api-key": TOKEN, "content-type": content_type, "content-encoding": "zstd"}
        )
        assert res.status_code == 200, res.text
    [run] = store.list_sessions()
    assert (run["status"], run["steps"], run["tokens_in"]) == ("succeeded", 8, 660)
    res = client.post(
        "/runs/multipart",
        content=b"not zstd",
        headers={"x-api-key": TOKEN, "content-type": "multipart/form-data; boundary=x", "content-encoding": "zstd"},
    )
    assert res.status_code == 400 and "zstd" in res.json()["detail"]


def test_a_patch_without_its_post_is_named_not_dropped(client, store, monkeypatch):
    last = _requests("batch-ok")[-1]  # the ends (patches) of the root and of the last model call; their posts went before
    first = _post(client, *last)
    assert (first["sessions"], first["patches_without_post"]) == ([], [])  # their posts may still come
    monkeypatch.setenv("AGENT_REPLAY_IDLE_MINUTES", "0")  # the trace is over
    later = _post(client, "/runs/batch", "application/json", b'{"post": [], "patch": []}')
    assert later["patches_without_post"] == [run["id"] for run in json.loads(last[2])["patch"]]
    assert store.list_sessions() == []


def test_bad_bodies_are_refused_with_a_sentence(client):
    res = client.post("/runs/batch", content=b'{"post": {}}', headers={"x-api-key": TOKEN, "content-type": "application/json"})
    assert res.status_code == 422 and "post" in res.json()["detail"]
    res = client.post("/runs/batch", content=b"{", headers={"x-api-key": TOKEN, "content-type": "application/json"})
    assert res.status_code == 400
    assert client.post("/runs/batch", content=b"{}", headers={"x-api-key": "wrong"}).status_code == 401


def test_a_payload_file_with_both_halves_imports_merged(store, tmp_path):
    """One file of the SDK's halves of a whole trace (its four batch bodies, as captured, put in one payload)."""
    payload: dict[str, list] = {"post": [], "patch": []}
    for _, _, body in _requests("batch-ok"):
        for half, runs in json.loads(body).items():
            payload[half] += runs
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload))
    report = import_file(store, path)
    assert report.files[0]["format"] == "langchain"
    run = store.get_session(report.sessions[0])
    assert (run["status"], run["tokens_in"], run["tokens_out"], run["outcome"]) == ("succeeded", 660, 36, ANSWER_OK)


def test_a_payload_file_whose_patch_has_no_post_is_refused_naming_it(store):
    path = CAPTURES / "batch-ok" / "006.json"  # as the SDK sent it: the root's end, whose start went earlier
    with pytest.raises(
        ImportRejected, match=r"006.json patch\[0\]: a patch of run .* \(travel_assistant\) whose post is not here"
    ):
        import_file(store, path)
    assert store.list_sessions() == []


def test_a_payload_file_of_part_of_a_trace_is_one_run_left_open(store):
    report = import_file(store, CAPTURES / "batch-ok" / "003.json")  # the first model call's start only
    run = store.get_session(report.sessions[0])
    assert run["status"] in ("running", "unknown") and run["outcome"] is None  # no end in the file (unknown once idle)
    [think] = store.load_steps(run["id"])
    assert (think.type, think.tokens_in, think.content) == ("think", None, "")  # its answer and usage are in its patch


def test_the_fixture_holds_no_key():
    for path in Path(CAPTURES).rglob("*"):
        if path.is_file():
            assert b"ls-token" not in path.read_bytes() and b"capture-placeholder" not in path.read_bytes()


def _stored(store) -> list[tuple]:
    [run] = store.list_sessions()
    steps = store.load_steps(run["id"])
    return [(run["status"], run["tokens_in"], run["tokens_out"], run["outcome"])] + [
        (s.event_id, s.type, s.tool_args, s.content, s.tokens_in, s.status) for s in steps
    ]


@settings(max_examples=8, deadline=None)
@given(order=st.permutations(range(5)), halves=st.sampled_from(["batch-ok", "batch-tool-error"]))
def test_any_order_of_the_sdks_requests_stores_the_same_run(tmp_path_factory, order, halves):
    """The halves of a trace merged by id give one run whatever order its requests arrive in."""
    bodies = [json.loads(body) for _, _, body in _requests(halves)]
    runs = []
    for sequence in (range(len(bodies)), order):
        store = Store(f"sqlite:///{tmp_path_factory.mktemp('held') / 'r.db'}")
        held = HeldTraces(store)
        answers = [held.receive(bodies[i].get("post", []), bodies[i].get("patch", [])) for i in sequence]
        assert sum(len(a["sessions"]) for a in answers) == 1 and answers[-1]["held_runs"] == 0
        runs.append(_stored(store))
        store.close()
    assert runs[0] == runs[1]
