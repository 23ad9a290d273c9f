"""Decode captured OTLP/HTTP protobuf bodies: write their OTLP/JSON twin and summarise the spans per batch.

Runs with any Python that has opentelemetry-proto (every capture virtualenv does).
`finish DIR` writes NNN.json beside each NNN.pb[.gz] and adds span counts to DIR/manifest.json;
`show DIR...` prints, per batch, each span with its parent and whether the root arrived last.

The JSON is a conversion of the same bytes, not what an exporter sent: protobuf's JSON mapping with
the OTLP/JSON rules applied (trace and span ids as hex, enums as integers, camelCase keys).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _message_class(path: str):
    if path.endswith("/logs"):
        return ExportLogsServiceRequest
    if path.endswith("/metrics"):
        return ExportMetricsServiceRequest
    return ExportTraceServiceRequest


def _raw(file: Path) -> bytes:
    data = file.read_bytes()
    return gzip.decompress(data) if file.name.endswith(".gz") else data


def _hex_ids(node):
    """OTLP/JSON writes ids as hex where protobuf's JSON mapping writes base64."""
    if isinstance(node, dict):
        return {
            key: (base64.b64decode(value).hex() if key in ID_KEYS and isinstance(value, str) else _hex_ids(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def decode(file: Path, path: str):
    message = _message_class(path)()
    message.ParseFromString(_raw(file))
    return message


def to_otlp_json(file: Path, path: str) -> dict:
    return _hex_ids(MessageToDict(decode(file, path), use_integers_for_enums=True))


def spans_of(message) -> list[dict]:
    spans = []
    for resource_spans in getattr(message, "resource_spans", []):
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "name": span.name,
                        "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex() or None,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "status": span.status.code,
                    }
                )
    return spans


def finish(directory: Path) -> None:
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for batch in manifest["batches"]:
        file = directory / batch["file"]
        if not batch["is_otlp_protobuf"]:
            continue
        json_name = batch["file"].split(".")[0] + ".json"
        (directory / json_name).write_text(
            json.dumps(to_otlp_json(file, batch["path"]), separators=(",", ":"), ensure_ascii=False)
        )
        batch["json_file"] = json_name
        message = decode(file, batch["path"])
        spans = spans_of(message)
        batch["spans"] = len(spans)
        batch["span_names"] = [span["name"] for span in spans]
        if batch["path"].endswith("/logs"):
            batch["log_records"] = sum(len(s.log_records) for r in message.resource_logs for s in r.scope_logs)
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def show(directory: Path) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    print(
        f"== {directory.name}: {manifest['outcome'].get('status')} "
        f"({manifest['outcome'].get('error') or (manifest['outcome'].get('final_output') or '')[:70]})"
    )
    seen: dict[str, dict] = {}
    order = []
    for batch in manifest["batches"]:
        if not batch["is_otlp_protobuf"] or not batch["path"].endswith("/traces"):
            print(f"  batch {batch['file']} {batch['path']} ({batch.get('log_records', '?')} log records)")
            continue
        spans = spans_of(decode(directory / batch["file"], batch["path"]))
        print(f"  batch {batch['file']} {batch['path']} {len(spans)} spans")
        for span in spans:
            seen[span["span_id"]] = span
            order.append(span["span_id"])
    for span_id in order:
        span = seen[span_id]
        parent = span["parent_span_id"]
        parent_name = seen[parent]["name"] if parent in seen else ("-" if parent is None else f"missing {parent}")
        print(f"    {span['name'][:60]:<60} <- {parent_name[:40]}  [{span['scope']}] status={span['status']}")
    roots = [span_id for span_id in order if seen[span_id]["parent_span_id"] is None]
    traces = {seen[span_id]["trace_id"] for span_id in order}
    print(
        f"  {len(order)} spans, {len(traces)} trace(s), roots: {[seen[r]['name'] for r in roots]}, "
        f"root last: {bool(order) and order[-1] in roots}"
    )


if __name__ == "__main__":
    command, *paths = sys.argv[1:]
    for name in paths:
        {"finish": finish, "show": show}[command](Path(name))
