"""The captured framework requests read back as sent: every body parses as the OTLP its path names,
and posting a capture in any order accounts for every request (none dropped for want of a receiver
but the ones it lists)."""

from __future__ import annotations

import gzip

import pytest
from framework_captures import ORDERS, captures, manifest, post, requests

from replay_core.ingest.formats import otel


def test_every_capture_is_here_with_its_requests():
    names = captures()
    assert len(names) == 51
    for name in names:
        assert len(requests(name)) == len(manifest(name)["batches"]) > 0


@pytest.mark.parametrize("name", captures())
def test_every_trace_body_parses_with_the_spans_its_manifest_names(name):
    for request in requests(name):
        if request.path.endswith("/v1/traces"):
            body = request.body
            if request.content_encoding == "gzip":
                body = gzip.decompress(body)
            spans = otel.spans_from_otlp(body, request.content_type)
            assert sorted(s.name for s in spans) == sorted(request.span_names)


@pytest.mark.parametrize("order", ORDERS)
def test_posting_accounts_for_every_request(sqlite_store, order):
    name = "openai-v2-events-slow"
    done = post(sqlite_store, name, order, seed=3)
    sent = len(requests(name))
    assert len(done.reports) + len(done.unsent) == sent
    assert done.unsent == []  # every path the frameworks used has its receiver
