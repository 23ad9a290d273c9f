"""No secret of the corpus reaches the database, whichever field it arrives in.

Checked the blunt way: every row of every table is dumped as text and searched.
"""

from secrets_corpus import PLACEMENTS, SECRETS
from sqlalchemy import select

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.tables import metadata


def _raw_dump(store) -> str:
    parts = []
    with store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(select(table)):
                parts.append(repr(tuple(row)))
    return "\n".join(parts)


def test_no_corpus_secret_reaches_any_table(store):
    events = [SessionEvent(session_id="leaky", name="run with " + SECRETS[0].text, metadata={"note": SECRETS[1].text})]
    seq = 0
    for secret in SECRETS:
        for field, place in PLACEMENTS.items():
            seq += 1
            events.append(
                StepEvent(
                    session_id="leaky",
                    event_id=f"e{seq}",
                    seq=seq,
                    type="tool_call",
                    tool_name="http",
                    **{field: place(secret.text)},
                )
            )
    events.append(SessionEndEvent(session_id="leaky", status="failed", outcome="crashed: " + SECRETS[2].text))
    report = ingest(store, events)
    assert report.steps == len(SECRETS) * len(PLACEMENTS)
    dump = _raw_dump(store)
    leaked = [s.label for s in SECRETS if s.secret in dump]
    assert leaked == []
    assert "[REDACTED]" in dump
    steps = store.load_steps("leaky")
    assert all(s.redacted >= 1 for s in steps)
    assert report.redacted == sum(s.redacted for s in steps)
