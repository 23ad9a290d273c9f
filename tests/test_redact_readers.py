"""Every reader of the registry, one by one: the corpus's secrets planted in the free text of a real file
of that format (tests/fixtures/SOURCES.md) are found nowhere in the database after the import — the SQLite
file's raw bytes, a `pg_dump` of PostgreSQL, every row as text.

The test proves the secrets reached the reader's output: the same file imported with redaction off
shows them (so a reader that dropped the planted text could not pass unseen)."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from secrets_corpus import SECRETS
from test_import_mutations import PER_READER
from test_redact_ways_in import assert_no_leak, needles, raw_text

from replay_core.ingest.formats import registry
from replay_core.ingest.pipeline import import_bytes
from replay_core.ingest.redact import Redactor
from replay_core.storage.store import Store


class _Keeping(Redactor):
    """Redaction off: what the reader alone carries into the store."""

    def event(self, event):
        return event


def _planted(value, counter: list[int]):
    """A copy with a corpus secret after every free-text string (a space in it, 16+ characters): the
    text people and agents write, not the structural values (ids, roles, kinds, times) a reader keys on."""
    if isinstance(value, dict):
        return {k: _planted(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_planted(v, counter) for v in value]
    if isinstance(value, str) and " " in value and len(value) >= 16:
        secret = SECRETS[counter[0] % len(SECRETS)]
        counter[0] += 1
        return f"{value} {secret.text}"
    return value


def _planted_lines(text: str, counter: list[int]) -> str:
    """A markdown log (aider) with a corpus secret after every line of free text (not its `#`/`>` markers)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith(("#", ">")):
            lines[i] = _planted(line, counter)
    return "\n".join(lines)


def planted_file(fmt: str) -> bytes:
    data = PER_READER[fmt].read_bytes()
    counter = [0]
    if data.lstrip()[:1] not in (b"{", b"["):
        body = _planted_lines(data.decode(), counter).encode()
        assert counter[0] > 0, f"{fmt}: no free text to plant secrets in"
        return body
    try:  # the stdlib's json: it keeps 128-bit integer ids (otel-spans) exact
        body = json.dumps(_planted(json.loads(data), counter)).encode()
    except json.JSONDecodeError:
        body = b"".join(
            json.dumps(_planted(json.loads(line), counter)).encode() + b"\n" for line in data.splitlines() if line.strip()
        )
    assert counter[0] > 0, f"{fmt}: no free text to plant secrets in"
    if fmt == "otlp-proto":
        return json_format.Parse(body, ExportTraceServiceRequest()).SerializeToString()
    return body


def test_every_reader_is_here():
    assert set(PER_READER) == set(registry())


@pytest.mark.parametrize("fmt", sorted(PER_READER))
def test_planted_secrets_of_each_reader_are_never_stored(store, fmt, tmp_path):
    data = planted_file(fmt)
    bare = Store(f"sqlite:///{tmp_path / 'bare.db'}")
    import_bytes(bare, data, f"planted.{fmt}", fmt=fmt, redactor=_Keeping())
    text = raw_text(bare)
    bare.close()
    reached = [s.label for s in SECRETS if s.secret in text]
    assert reached, f"{fmt}: none of the planted secrets reached the store even without redaction"
    report = import_bytes(store, data, f"planted.{fmt}", fmt=fmt)
    assert report.steps > 0 and report.redacted > 0
    assert_no_leak(store, [s for s in SECRETS if s.label in reached])
    text = raw_text(store)
    assert [s.label for s in SECRETS if any(n in text for n in needles(s.secret))] == []
