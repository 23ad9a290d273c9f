"""inspect_ai eval logs: the JSON form (`--log-format json`) and the binary `.eval` ZIP (its default).

Why one session per sample: an eval log is many runs of one task (samples × epochs) under
one eval spec; each sample is what a person debugs. The samples of one eval stay findable
together: `workflow` is the task, tags are `eval:<eval_id>`, `run:<run_id>`, `task:<task>`,
`epoch:<n>`.

- `.eval` ZIP: `header.json` (or `_journal/start.json` while the eval runs) holds the eval
  spec and status; each `samples/<id>_epoch_<n>.json` is one sample; `reductions.json` goes
  into each sample's metadata; `summaries.json` and `_journal/…` repeat what the samples say
  and are yielded as `Ignored` (counted by member kind).
- Events: `sample_init` → the sample's input (input steps), `input` → input, `model` →
  from the output message: reasoning parts → think, text → think when tool calls follow,
  else decision, each tool call → tool_call (arguments as recorded), with the call's usage
  (input/output tokens; cache and reasoning tokens in metadata) on the first step; `tool`
  → the call's tool_result (`error` → status error, its type as error class); `error` →
  error; `info`/`approval` → observation; spans, steps, state/store patches, scores,
  logger and sandbox events → `Ignored` by event type. Steps inside a scorer's span carry
  `phase: scorer` (the grader's model calls are not the agent's). Logs without events
  (older or hand-written) are read from `messages`.
- Strings stored once (`attachment://<hash>` in `sample.attachments`, legacy `tc://<hash>`
  in `transcript.content`) are resolved.
- Status, per sample: the sample's `error` → failed; the eval's `status: error` → failed;
  else the first scorer's value: `C`/`correct`/true/1 → succeeded, `I`/`incorrect`/false/0 →
  failed, anything else (partial, numbers between, dicts) → unknown with the value as
  outcome; no score → unknown. `started` (an eval still being written) reads as unknown:
  a reader of bytes cannot tell whether the writer is still there.
- Times: the sample's `started_at`/`completed_at`, else its first and last event timestamps
  (inspect writes them with a timezone); none → no times.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from ..unpack import Unpacker
from .jsondoc import as_array, as_object, has_key, load_json, parse_arguments, starts_json
from .reader import BadRecord, DocumentError, Event, Ignored, Records
from .runs import Run, compact, parse_time, stable_id

IGNORED_EVENTS = frozenset(
    {
        "span_begin",
        "span_end",
        "step",
        "state",
        "store",
        "score",
        "logger",
        "sandbox",
        "subtask",
        "sample_limit",
        "score_edit",
        "checkpoint",
    }
)
SUCCESS = frozenset({"c", "correct", "true", "1", "1.0", "yes"})
FAILURE = frozenset({"i", "incorrect", "false", "0", "0.0", "no"})
_REF = re.compile(r"^(attachment|tc)://")
_SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


ZIP_ZSTANDARD = 93  # the ZIP compression method inspect_ai ≥ 0.3.2xx writes `.eval` members with (zstd frames)
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def _zstd_member(data: bytes, info: zipfile.ZipInfo, unpacker: Unpacker) -> bytes:
    """A zstd-compressed member: Python before 3.14 reads the archive but not the method. The raw bytes
    are found after the member's local header, decompressed across frames (inspect splits big members)
    a chunk at a time under the file's cap (`unpacker`: the size the archive declares is not trusted),
    and checked against the size and CRC the archive declares."""
    import zstandard  # only for such logs

    head = data[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local header")
    *_, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    packed = data[start : start + info.compress_size]
    if len(packed) < info.compress_size:
        raise EOFError("the member is cut short")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed), read_across_frames=True)
        raw = unpacker.read(reader)
    except zstandard.ZstdError as exc:
        raise ValueError(f"broken zstd data: {exc}") from None
    if len(raw) != info.file_size or zlib.crc32(raw) != info.CRC:
        raise zipfile.BadZipFile("size or CRC does not match the archive's directory")
    return raw


class _Refs:
    """Resolves `attachment://` and `tc://` references from the sample's string table."""

    def __init__(self, table: dict):
        self.table = table

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(("attachment://", "tc://")):
                return self.table.get(_REF.sub("", value), value)
            return value
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


def _content(value: Any) -> tuple[str, list[str]]:
    """(text, reasoning parts) of a message's content: a string or a list of content parts."""
    if value is None:
        return "", []
    if isinstance(value, str):
        return value, []
    texts, reasoning = [], []
    for part in as_array(value):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("type") == "reasoning" and isinstance(part.get("reasoning"), str):
                reasoning.append(part["reasoning"])
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") in ("image", "audio", "video"):
                texts.append(f"[{part['type']}]")
    return "\n".join(texts), reasoning


def _usage(usage: Any) -> dict[str, Any]:
    usage = as_object(usage)
    whole = lambda v: v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None  # noqa: E731
    return {
        "tokens_in": whole(usage.get("input_tokens")),
        "tokens_out": whole(usage.get("output_tokens")),
        "metadata": compact(
            {k: usage.get(k) for k in ("input_tokens_cache_read", "input_tokens_cache_write", "reasoning_tokens", "total_tokens")}
        ),
    }


def _verdict(value: Any) -> str | None:
    """succeeded / failed / None (unknown) for one score value, per the rule in the module docstring."""
    if isinstance(value, bool):
        return "succeeded" if value else "failed"
    if isinstance(value, int | float):
        return "succeeded" if value == 1 else "failed" if value == 0 else None
    if isinstance(value, str):
        key = value.strip().lower()
        return "succeeded" if key in SUCCESS else "failed" if key in FAILURE else None
    return None


class _Sample:
    """One sample being mapped to one run."""

    def __init__(self, run: Run, refs: _Refs, where: str):
        self.run = run
        self.refs = refs
        self.where = where
        self.calls: dict[str, str | None] = {}  # tool call id → tool name
        self.scopes: list[tuple[Any, str]] = []  # open spans / steps: (id or name, type)
        self.times: list = []

    def phase(self) -> str | None:
        return "scorer" if any(kind in ("scorer", "scorers") for _, kind in self.scopes) else None

    def step(self, key: str, type: str, where: str, usage: dict | None = None, **fields: Any) -> None:
        usage = usage or {}
        meta = {**(usage.get("metadata") or {}), **(fields.pop("metadata", None) or {}), "phase": self.phase()}
        if usage.get("duration_ms") is not None:
            fields["duration_ms"] = usage["duration_ms"]
        self.run.step(
            key, type, where=where, tokens_in=usage.get("tokens_in"), tokens_out=usage.get("tokens_out"), metadata=meta, **fields
        )

    def inputs(self, value: Any, key: str, where: str, when) -> None:
        value = self.refs(value)
        if isinstance(value, str):
            self.step(key, "input", where, content=value, timestamp=when, metadata={"role": "user"})
            return
        for j, msg in enumerate(as_array(value)):
            msg = as_object(msg)
            self.message(msg, f"{key}.{j}", where, when)

    def message(self, msg: dict, key: str, where: str, when, usage: dict | None = None, model: str | None = None) -> None:
        """One chat message: system/user → input, assistant → think/tool_call/decision, tool → tool_result."""
        role = msg.get("role")
        text, reasoning = _content(self.refs(msg.get("content")))
        if role == "assistant":
            self.assistant(msg, text, reasoning, key, where, when, usage, model)
        elif role == "tool":
            error = as_object(msg.get("error"))
            call_id = msg.get("tool_call_id")
            self.step(
                key,
                "tool_result",
                where,
                content=text,
                tool_call_id=call_id,
                timestamp=when,
                tool_name=msg.get("function") or (self.calls.get(call_id) if call_id else None),
                status="error" if error else "ok",
                error_class=error.get("type") if error else None,
                metadata={"error": error.get("message")},
            )
        else:
            self.step(key, "input", where, content=text, timestamp=when, metadata={"role": role, "source": msg.get("source")})

    def assistant(self, msg, text, reasoning, key, where, when, usage, model) -> None:
        calls = [c for c in as_array(msg.get("tool_calls")) if isinstance(c, dict)]
        model = model or msg.get("model")
        for j, thought in enumerate(reasoning):
            self.step(f"{key}.r{j}", "think", where, usage, content=thought, timestamp=when, model=model)
            usage = None
        if text or not calls:
            self.step(f"{key}.text", "think" if calls else "decision", where, usage, content=text, timestamp=when, model=model)
            usage = None
        for j, call in enumerate(calls):
            call_id = call.get("id") or f"{key}.c{j}"
            name = call.get("function") if isinstance(call.get("function"), str) else as_object(call.get("function")).get("name")
            self.calls[call_id] = name
            args = self.refs(call.get("arguments"))
            self.step(
                f"{key}.c{j}",
                "tool_call",
                where,
                usage,
                tool_name=name,
                tool_args=parse_arguments(args),
                tool_call_id=call_id,
                timestamp=when,
                model=model,
                metadata={"parse_error": call.get("parse_error"), "message_id": msg.get("id")},
            )
            usage = None

    def event(self, event: dict, i: int, where: str) -> Iterator[Ignored]:
        kind = event.get("event")
        when = parse_time(event.get("timestamp"))
        if when is not None:
            self.times.append(when)
        key = f"ev{i}"
        if kind in ("span_begin", "step") and event.get("action", "begin") == "begin":
            self.scopes.append((event.get("id") or event.get("name"), str(event.get("type") or "")))
        elif kind == "span_end" or (kind == "step" and event.get("action") == "end"):
            ident = event.get("id") or event.get("name")
            for n in range(len(self.scopes) - 1, -1, -1):
                if self.scopes[n][0] == ident:
                    del self.scopes[n:]
                    break
        if kind in IGNORED_EVENTS:
            yield Ignored(where, f"event:{kind}")
        elif kind == "sample_init":
            self.inputs(as_object(event.get("sample")).get("input"), key, where, when)
        elif kind == "input":
            self.step(
                key,
                "input",
                where,
                content=str(self.refs(event.get("input")) or ""),
                timestamp=when,
                metadata={"role": "user", "source": "console input"},
            )
        elif kind == "model":
            self.model(event, key, where, when)
        elif kind == "tool":
            self.tool(event, key, where, when)
        elif kind == "error":
            error = as_object(event.get("error"))
            self.step(
                key,
                "error",
                where,
                content=str(error.get("message") or ""),
                timestamp=when,
                status="error",
                error_class="error",
                metadata={"traceback": error.get("traceback")},
            )
        elif kind in ("info", "approval"):
            data = self.refs({k: v for k, v in event.items() if k not in ("event", "timestamp", "span_id", "working_start")})
            self.step(
                key,
                "observation",
                where,
                content=orjson.dumps(data, default=str).decode(),
                timestamp=when,
                metadata={"event": kind},
            )
        else:
            yield Ignored(where, f"event:{kind}")

    def model(self, event: dict, key: str, where: str, when) -> None:
        output = as_object(event.get("output"))
        choices = as_array(output.get("choices"))
        msg = as_object(as_object(choices[0]).get("message")) if choices else {}
        usage = _usage(output.get("usage"))
        model = output.get("model") or event.get("model")
        error = event.get("error")
        if error and not msg:
            self.step(
                key,
                "error",
                where,
                usage,
                content=str(error),
                timestamp=when,
                model=model,
                status="error",
                error_class="model_error",
            )
            return
        working = event.get("working_time")
        # what belongs to the whole call rides with the usage onto its first step
        usage["duration_ms"] = working * 1000 if isinstance(working, int | float) and working >= 0 else None
        usage["metadata"] = {
            **(usage["metadata"] or {}),
            "stop_reason": as_object(choices[0]).get("stop_reason") if choices else None,
            "config": event.get("config") or None,
            "role": event.get("role"),
        }
        self.assistant(msg, *_content(self.refs(msg.get("content"))), key, where, when, usage, model)

    def tool(self, event: dict, key: str, where: str, when) -> None:
        call_id = event.get("id") or key
        name = event.get("function")
        if call_id not in self.calls:  # a tool run without a model call before it (e.g. by a solver)
            self.calls[call_id] = name
            self.step(
                f"{key}.call",
                "tool_call",
                where,
                tool_name=name,
                tool_args=parse_arguments(self.refs(event.get("arguments"))),
                tool_call_id=call_id,
                timestamp=when,
            )
        error = as_object(event.get("error"))
        text, _ = _content(self.refs(event.get("result")))
        completed = parse_time(event.get("completed"))
        working = event.get("working_time")
        duration = (
            working * 1000
            if isinstance(working, int | float) and working >= 0
            else ((completed - when).total_seconds() * 1000 if completed and when and completed >= when else None)
        )
        self.step(
            key,
            "tool_result",
            where,
            content=text if text or not error else str(error.get("message") or ""),
            tool_name=name or self.calls.get(call_id),
            tool_call_id=call_id,
            timestamp=completed or when,
            duration_ms=duration,
            status="error" if error else "ok",
            error_class=error.get("type") if error else None,
            metadata={"error": error.get("message"), "truncated": event.get("truncated"), "agent": event.get("agent")},
        )


class InspectAIFormat:
    name = "inspect_ai"
    label = "inspect_ai eval log (JSON or .eval ZIP)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if head[:4] == b"PK\x03\x04":
            return filename.endswith(".eval") or b"header.json" in head or b"_journal/start.json" in head
        return starts_json(head) and has_key(head, "eval") and has_key(head, "run_id") and has_key(head, "task_id")

    def read(self, data: bytes, filename: str) -> Iterator[Event | BadRecord | Ignored | Records]:
        """A log's records are its samples' events (messages where a sample has none) and, in a ZIP,
        its other members: the unit the reader ignores in, so the account adds up."""
        count = [0]
        items = list(self._zip(data, filename, count) if data[:4] == b"PK\x03\x04" else self._json(data, filename, count))
        yield Records(count[0], "events and archive members" if data[:4] == b"PK\x03\x04" else "events")
        yield from items

    def _json(self, data: bytes, filename: str, count: list[int]) -> Iterator:
        doc = load_json(data, filename)
        if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
            raise DocumentError(BadRecord(filename, "expected an inspect_ai eval log: an object with 'eval'"))
        samples = doc.get("samples")
        if samples is not None and not isinstance(samples, list):
            raise DocumentError(BadRecord(f"{filename}:samples", f"expected a list, got {type(samples).__name__}"))
        for i, sample in enumerate(samples or ()):
            yield from self._sample(
                doc, sample, as_object(doc).get("reductions"), f"{filename}:samples[{i}]", data, filename, count
            )

    def _zip(self, data: bytes, filename: str, count: list[int]) -> Iterator:
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            names = archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise DocumentError(
                BadRecord(filename, f"not a readable ZIP archive ({exc}); is the .eval file truncated?")
            ) from None

        unpacker = Unpacker()  # every member counts against the one cap of this file

        def member(name: str) -> Any:
            try:
                info = archive.getinfo(name)
                if info.compress_type == ZIP_ZSTANDARD:
                    raw = _zstd_member(data, info, unpacker)
                else:
                    with archive.open(info) as stream:  # checks the CRC at its end
                        raw = unpacker.read(stream)
            # zipfile raises NotImplementedError for a compression method it lacks (bzip2, lzma builds, …),
            # zlib.error for a corrupt deflate stream
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, NotImplementedError, zlib.error) as exc:
                raise DocumentError(BadRecord(f"{filename}!{name}", f"cannot read this ZIP member ({exc})")) from None
            return load_json(raw, f"{filename}!{name}")

        head_name = "header.json" if "header.json" in names else "_journal/start.json" if "_journal/start.json" in names else None
        if head_name is None:
            raise DocumentError(
                BadRecord(filename, "ZIP archive without header.json or _journal/start.json: not an inspect_ai .eval log")
            )
        header = member(head_name)
        if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
            raise DocumentError(BadRecord(f"{filename}!{head_name}", "expected an object with 'eval'"))
        reductions = member("reductions.json") if "reductions.json" in names else None
        samples = [m.string for m in sorted(filter(None, map(_SAMPLE_MEMBER.match, names)), key=_member_order)]
        count[0] += sum(1 for n in names if n not in samples and not n.endswith("/"))  # header, reductions and the ignored ones
        for name in names:
            if name.startswith("_journal/"):
                yield Ignored(f"{filename}!{name}", "zip:_journal")
            elif name == "summaries.json":
                yield Ignored(f"{filename}!{name}", "zip:summaries")
            elif name not in samples and name not in ("header.json", "reductions.json") and not name.endswith("/"):
                yield Ignored(f"{filename}!{name}", "zip:other")
        for name in samples:
            yield from self._sample(header, member(name), reductions, f"{filename}!{name}", data, filename, count)

    def _sample(
        self, log: dict, sample: Any, reductions: Any, where: str, data: bytes, filename: str, count: list[int]
    ) -> Iterator:
        if not isinstance(sample, dict):
            count[0] += 1
            yield BadRecord(where, f"expected a sample object, got {type(sample).__name__}")
            return
        spec = as_object(log.get("eval"))
        eval_id = spec.get("eval_id") or spec.get("task_id") or stable_id(filename, data)
        epoch, sample_id = sample.get("epoch", 1), sample.get("id")
        task = spec.get("task") if isinstance(spec.get("task"), str) else None
        tags = [
            f"eval:{eval_id}",
            f"run:{spec.get('run_id')}" if spec.get("run_id") else None,
            f"task:{task}" if task else None,
            f"epoch:{epoch}",
        ]
        run = Run(
            f"inspect-{str(eval_id)[:100]}-{str(sample_id)[:60]}-e{epoch}",
            where,
            name=f"{task or 'eval'} sample {sample_id} epoch {epoch}",
            workflow=task,
            model=spec.get("model") if isinstance(spec.get("model"), str) else None,
            agent_id=_solver(log),
            agent_version=as_object(spec.get("packages")).get("inspect_ai"),
            tags=[t for t in tags if t],
        )
        transcript = as_object(sample.get("transcript"))
        table = own if isinstance(own := sample.get("attachments"), dict) else as_object(transcript.get("content"))
        mapped = _Sample(run, _Refs(table), where)
        events = sample.get("events") if isinstance(sample.get("events"), list) else as_array(transcript.get("events"))
        count[0] += len(events) if events else max(1, len(as_array(sample.get("messages"))))
        try:
            if events:
                for i, event in enumerate(events):
                    at = f"{where}:events[{i}]"
                    if not isinstance(event, dict):
                        yield BadRecord(at, f"expected an event object, got {type(event).__name__}")
                        continue
                    yield from mapped.event(event, i, at)
            else:
                for i, msg in enumerate(as_array(sample.get("messages"))):
                    if isinstance(msg, dict):
                        mapped.message(msg, f"m{i}", f"{where}:messages[{i}]", None)
                    else:
                        yield BadRecord(f"{where}:messages[{i}]", f"expected a message object, got {type(msg).__name__}")
        except _SHAPE_ERRORS as exc:
            yield BadRecord(where, f"unexpected sample shape ({type(exc).__name__}: {exc})")
            return
        started = parse_time(sample.get("started_at")) or (min(mapped.times) if mapped.times else None)
        ended = parse_time(sample.get("completed_at")) or (max(mapped.times) if mapped.times else None)
        run.session["started_at"] = started
        run.session["metadata"] = compact(_metadata(log, sample, reductions, run))
        _end(run, log, sample, ended)
        yield from run.events()


def _member_order(match: re.Match[str]) -> tuple:
    ident = match.group(1)
    return (int(match.group(2)), (0, int(ident), "") if ident.isdigit() else (1, 0, ident))


def _solver(log: dict) -> str | None:
    spec = as_object(log.get("eval"))
    if isinstance(spec.get("solver"), str):
        return spec["solver"]
    names = [
        name for s in as_array(as_object(log.get("plan")).get("steps")) if isinstance(name := as_object(s).get("solver"), str)
    ]
    return "+".join(names) or None


def _end(run: Run, log: dict, sample: dict, ended) -> None:
    error = sample.get("error")
    if error:
        message = as_object(error).get("message") if isinstance(error, dict) else error
        run.finish("failed", error_class=str(message).splitlines()[0][:200] if message else "error", ended_at=ended)
        return
    if log.get("status") == "error":
        message = as_object(log.get("error")).get("message") or "eval error"
        run.finish("failed", error_class=f"eval error: {str(message).splitlines()[0][:180]}", ended_at=ended)
        return
    scores = as_object(sample.get("scores"))
    if not scores and isinstance(sample.get("score"), dict):  # very old logs: one score
        scores = {"score": sample["score"]}
    first = next(iter(scores.values()), None) if scores else None
    if not isinstance(first, dict):
        run.finish("unknown", ended_at=ended)
        return
    value, answer = first.get("value"), first.get("answer")
    outcome = (
        answer if isinstance(answer, str) and answer else orjson.dumps(value).decode() if not isinstance(value, str) else value
    )
    verdict = _verdict(value)
    run.finish(
        verdict or "unknown", outcome=outcome, error_class=f"score {value}" if verdict == "failed" else None, ended_at=ended
    )


def _metadata(log: dict, sample: dict, reductions: Any, run: Run) -> dict[str, Any]:
    spec = as_object(log.get("eval"))
    usage = as_object(sample.get("model_usage"))
    totals = {
        "tokens_in": sum(as_object(u).get("input_tokens") or 0 for u in usage.values()),
        "tokens_out": sum(as_object(u).get("output_tokens") or 0 for u in usage.values()),
    }
    out: dict[str, Any] = {}
    if not any(s.tokens_in or s.tokens_out for s in run.steps) and any(totals.values()):
        out.update(totals, totals="run totals from the sample's model_usage (the steps carry none)")
    sid = sample.get("id")
    mine = [
        {"scorer": r.get("scorer"), **s}
        for r in as_array(reductions)
        if isinstance(r, dict)
        for s in as_array(r.get("samples"))
        if isinstance(s, dict) and s.get("sample_id") == sid
    ]
    out.update(
        {
            "sample_id": sid,
            "epoch": sample.get("epoch"),
            "target": sample.get("target"),
            "scores": sample.get("scores") or None,
            "reductions": mine or None,
            "sample_metadata": sample.get("metadata") or None,
            "model_usage": usage or None,
            "total_time": sample.get("total_time"),
            "working_time": sample.get("working_time"),
            "uuid": sample.get("uuid"),
            "limit": sample.get("limit"),
            "error": sample.get("error"),
            "eval_status": log.get("status"),
            "eval_id": spec.get("eval_id"),
            "run_id": spec.get("run_id"),
            "task_id": spec.get("task_id"),
            "eval_created": spec.get("created"),
            "eval_stats": {k: v for k, v in as_object(log.get("stats")).items() if k != "model_usage"} or None,
            "dataset": as_object(spec.get("dataset")).get("name"),
        }
    )
    return out


FORMAT = InspectAIFormat()
