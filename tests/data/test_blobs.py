"""Blob keys, media sniffing and blob reads against a real store."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from boardd.data import series
from boardd.data.blobs import blob_key, open_blob, parse_blob_key, sniff
from boardd.data.errors import NotFound, Unavailable
from boardd.data.experiments import store_id
from boardd.data.kinds import BLOB_SEQUENCES
from boardd.data.series import Bounds, Selection


def test_keys_round_trip_and_reject_what_is_not_ours() -> None:
    key = blob_key("my~exp", "0123456789abcdef", 42)
    assert key == "my~exp~0123456789ab.42"
    parsed = parse_blob_key(key)
    assert parsed is not None
    assert (parsed.experiment, parsed.store, parsed.blob_id) == ("my~exp", "0123456789ab", 42)
    for bad in ("", "exp", "exp~1", "exp~ab.-1", "exp~ab.²", "exp~a b.1", "exp~ab." + "9" * 19):
        assert parse_blob_key(bad) is None, bad


def test_sniff() -> None:
    assert sniff(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert sniff(b"RIFF\x00\x00\x00\x00WAVEfmt ") == "audio/wav"
    assert sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff(b"\x00\x01") == "application/octet-stream"


def keys(connection: apsw.Connection, exp_id: int, plugin: str) -> list[str]:
    """Keys of train's last image (index 2: after width and height) or audio clip (index 0:
    before its label)."""
    found = series.list_series(connection, exp_id, BLOB_SEQUENCES, Selection(plugin, ("train",)))
    index = Bounds(latest=1, index_min=2) if plugin == "images" else Bounds(latest=1, index_max=0)
    read = series.read_blob_sequences(connection, "exp", found, index)
    return [k for s in read for step in s.steps for k in step.keys]


def test_open_blob(data_store: Path, connection: apsw.Connection, exp_id: int) -> None:
    for plugin, media in (("images", "image/png"), ("audio", "audio/wav")):
        for key in keys(connection, exp_id, plugin):
            blob = open_blob(data_store, key)
            body = b"".join(blob.chunks())
            assert blob.media_type == media and len(body) == blob.size > 0


def test_unknown_and_replaced_keys(
    data_store: Path, connection: apsw.Connection, exp_id: int, tmp_path: Path
) -> None:
    real = keys(connection, exp_id, "images")[0]
    current = store_id(connection)
    for bogus in ("nope", "exp~0123abcd4567.1", f"exp~{current[:12]}.99999999"):
        with pytest.raises(NotFound, match="unknown blob key") as raised:
            open_blob(data_store, bogus)
        assert "rebuilt" not in raised.value.message
    # A key of a store file this experiment had before: it was rebuilt since.
    older = "f" * 32
    with pytest.raises(NotFound, match="rebuilt"):
        open_blob(data_store, f"exp~{older[:12]}.1", previous_stores=(older,))
    with pytest.raises(Unavailable, match="boardd ingest"):
        open_blob(tmp_path / "none.sqlite", real)
