"""Decompression bombs in files a reader unpacks: an inspect_ai `.eval` (zstd and deflate members) and a
cassette's gzip bodies unpack under AGENT_REPLAY_MAX_UNPACKED_MB, counted as they stream, whatever size
the archive declares; nothing is stored from a refused file. The archive is inspect_ai 0.3.285's own
(tests/fixtures/inspect_ai), with one member swapped for a bomb."""

from __future__ import annotations

import gzip
import io
import struct
import zipfile
import zlib

import pytest
import zstandard
from conftest import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

from replay_core.ingest.pipeline import ImportRejected, import_bytes
from replay_core.ingest.unpack import UnpackedTooLarge, Unpacker

GEN_ZSTD = FIXTURES / "inspect_ai" / "inspect-0.3.285_mockllm_tool_events_zstd.eval"
MEMBER = "samples/1_epoch_1.json"
BOMB = b'{"pad": "' + b"a" * (8 << 20) + b'"}'  # 8 MB that pack to a few KB


def zstd_zip(members: dict[str, bytes], declared: dict[str, int] | None = None) -> bytes:
    """A ZIP whose members are zstd frames (method 93, as inspect_ai writes them), sizes as `declared`."""
    out, central = io.BytesIO(), []
    for name, raw in members.items():
        packed = zstandard.ZstdCompressor().compress(raw)
        size = (declared or {}).get(name, len(raw))
        head = struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, 93, 0, 0, zlib.crc32(raw), len(packed), size, len(name), 0)
        central.append((name, out.tell(), zlib.crc32(raw), len(packed), size))
        out.write(head + name.encode() + packed)
    start = out.tell()
    for name, offset, crc, packed_size, size in central:
        out.write(
            struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, crc, packed_size, size, len(name), 0, 0, 0, 0, 0, offset
            )
            + name.encode()
        )
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return out.getvalue()


def real_members() -> dict[str, bytes]:
    """The members of inspect_ai's .eval, unpacked (small: its own sizes)."""
    archive = zipfile.ZipFile(io.BytesIO(GEN_ZSTD.read_bytes()))
    return {i.filename: _zstd(GEN_ZSTD.read_bytes(), i) for i in archive.infolist()}


def _zstd(data: bytes, info: zipfile.ZipInfo) -> bytes:
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    return zstandard.ZstdDecompressor().stream_reader(data[start : start + info.compress_size], read_across_frames=True).read()


def test_the_rebuilt_archive_imports_as_inspect_wrote_it(store):
    report = import_bytes(store, zstd_zip(real_members()), "rebuilt.eval")
    assert report.steps > 0 and not report.errors


@pytest.mark.parametrize("declared", [None, 2**32 - 1, 100], ids=["honest", "declares-4GB", "declares-100B"])
def test_a_zstd_bomb_member_is_refused_at_the_cap_whatever_it_declares(store, monkeypatch, declared):
    monkeypatch.setenv("AGENT_REPLAY_MAX_UNPACKED_MB", "2")
    members = {**real_members(), MEMBER: BOMB}
    data = zstd_zip(members, {MEMBER: declared} if declared else None)
    assert len(data) < 40_000
    with pytest.raises(ImportRejected, match=rf"bomb\.eval!{MEMBER}: cannot read this ZIP member \(unpacks to more than 2 MB"):
        import_bytes(store, data, "bomb.eval")
    assert store.list_sessions() == []


def test_deflate_members_count_against_the_same_cap(store, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_MAX_UNPACKED_MB", "2")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, raw in {**real_members(), MEMBER: BOMB}.items():
            z.writestr(name, raw)
    with pytest.raises(ImportRejected, match=r"cannot read this ZIP member \(unpacks to more than 2 MB"):
        import_bytes(store, out.getvalue(), "bomb.eval")
    assert store.list_sessions() == []


@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=4), st.integers(1, 20_000))
def test_gunzip_gives_the_bytes_or_refuses_at_the_cap(parts, cap):
    """Concatenated gzip members, unpacked whole under the cap or refused: never more than `cap` bytes held."""
    data = b"".join(gzip.compress(p) for p in parts)
    whole = b"".join(parts)
    if len(whole) <= cap:
        assert Unpacker(cap).gunzip(data) == whole
    else:
        with pytest.raises(UnpackedTooLarge):
            Unpacker(cap).gunzip(data)
