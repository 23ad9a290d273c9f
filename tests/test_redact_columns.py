"""Every column that can hold text has a registered reason why no secret from a trace rests in it
(replay_core/ingest/redacted_columns.py): a new text, JSON or bytes column without one fails here."""

from __future__ import annotations

import pytest
from sqlalchemy import JSON, LargeBinary, String, Text

from replay_core.ingest.redacted_columns import DERIVED, NO_TRACE_TEXT, REDACTED, UNREDACTED
from replay_core.storage.tables import metadata

REGISTRIES = {"REDACTED": REDACTED, "DERIVED": DERIVED, "NO_TRACE_TEXT": NO_TRACE_TEXT, "UNREDACTED": UNREDACTED}


def text_columns() -> set[str]:
    """Columns whose type can hold text: strings, JSON, bytes (what is left is numbers, times, flags)."""
    found = set()
    for table in metadata.sorted_tables:
        for column in table.columns:
            kind = column.type
            if isinstance(kind, String | Text | JSON | LargeBinary) or isinstance(getattr(kind, "impl", None), JSON):
                found.add(f"{table.name}.{column.name}")
    return found


def test_every_text_column_has_a_redaction_path_or_a_reason():
    columns = text_columns()
    assert len(columns) > 100
    registered = [name for registry in REGISTRIES.values() for name in registry]
    assert sorted(columns - set(registered)) == [], "columns with no entry in replay_core/ingest/redacted_columns.py"
    assert sorted(set(registered) - columns) == [], "entries naming no column"
    assert len(registered) == len(set(registered)), "a column in two registries"
    assert all(reason.strip() for registry in REGISTRIES.values() for reason in registry.values())


def test_the_known_gaps_are_exactly_these():
    assert set(UNREDACTED) == set()


def test_an_experiments_failure_text_is_kept_redacted(sqlite_store, monkeypatch):
    """The one message an experiment stores from outside itself, an error's text, goes through the redactor."""
    from replay_core.demo import load_demo
    from replay_core.whatif import dataset, experiment
    from replay_core.whatif.replay_config import ReplayConfig

    load_demo(sqlite_store, only_if_empty=False)
    dataset.create(sqlite_store, "d", [dataset.Case("demo-09-flight-bos-sfo-b")])
    experiment_id, _ = experiment.start(sqlite_store, "d", [ReplayConfig(model="recorded")])
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2

    def broken(self):
        raise RuntimeError(f"the provider said: key {secret} was refused")

    monkeypatch.setattr(experiment._Runner, "run", broken)
    with pytest.raises(RuntimeError):
        experiment.run(sqlite_store, experiment_id)
    message = sqlite_store.get_experiment(experiment_id)["message"]
    assert message.startswith("RuntimeError: the provider said") and secret not in message
