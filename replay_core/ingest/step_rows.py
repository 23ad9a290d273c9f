"""A step's fields straight into the row the Store keeps, validated and redacted, with no StepEvent
made: the way every high-volume door takes (HTTP steps, OTLP spans, a big native file's readers).
Making and walking a StepEvent cost more than the checks and the redaction themselves; the event's
way stays the judge of whatever this one does not vouch for (tests/test_api_step_rows.py,
tests/test_otlp_step_rows.py and tests/test_import_parallel.py hold both ways to the same tables)."""

from __future__ import annotations

from ..events import _STEP_DEFAULTS, fast_step_values
from ..storage.store import StepRow
from .redact import Redactor

# where a step carries images: `attachments` (the native contract: [{"media_type", "data" (base64) | "url",
# "name", "target"}]) or `attachment` (a reader's one screenshot: {"data_b64", "mime_type", "name"});
# ingest.pipeline sets them aside for the media store
CARRIERS = frozenset({"attachment", "attachments"})


def step_row_of(fields: dict, redactor: Redactor, place: str | None = None) -> StepRow | None:
    """A step's fields (a reader's dict, as `fast_step` takes it) validated and redacted straight into the
    row `ingest` would store for its StepEvent, without making one: None when `fast_step` would leave the
    decision to the model, or the step carries images (set aside by `ingest`) or no event_id. `place`: an
    OTLP step's place in its run's order (storage.ingest_state)."""
    values = fast_step_values(fields)
    if values is None or values.get("event_id") is None:
        return None
    metadata = values.get("metadata")
    if metadata and CARRIERS & metadata.keys():
        return None
    values = {**_STEP_DEFAULTS, **values}
    clean = redactor.step_values(values)
    return StepRow.of(clean, clean["redacted"] - values["redacted"], place)
