"""What the plugin routes read of plugin content: format versions, audio encodings, image
types."""

from __future__ import annotations

from tensorboard.plugins.audio import metadata as audio_metadata
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.pr_curve import plugin_data_pb2

from boardd.data.plugin_metadata import (
    audio_media_type,
    image_media_type,
    readable,
    varint_field,
    version,
)


def test_versions_as_tensorboard_writes_them() -> None:
    content = histogram_metadata.create_summary_metadata("d", "x").plugin_data.content
    assert readable(content)
    newer = plugin_data_pb2.PrCurvePluginData(version=1, num_thresholds=7).SerializeToString()
    assert varint_field(newer, 1) == 1 and varint_field(newer, 2) == 7
    assert not readable(newer)
    assert readable(b"") and readable(b"\xff")  # unreadable content: version 0


def test_audio_encoding() -> None:
    wav = audio_metadata.create_summary_metadata(
        "d", "x", encoding=audio_metadata.Encoding.Value("WAV")
    )
    assert audio_media_type(wav.plugin_data.content) == "audio/wav"
    assert audio_media_type(b"") == "application/octet-stream"


def test_image_types() -> None:
    assert image_media_type(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert image_media_type(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert image_media_type(b"GIF89a") == "image/gif"
    assert image_media_type(b"BM\x00\x00") == "image/bmp"
    assert image_media_type(b"RIFF\x00\x00\x00\x00WEBP") == "application/octet-stream"


def test_versions_as_protobuf_reads_them() -> None:
    assert version(b"") == 0
    assert version(b"\x08\x01") == 1
    assert version(b"\x08\x00\x08\x02") == 2  # the last occurrence wins
    assert version(b"\x12\x02ab\x08\x01") == 1  # other fields skipped
    assert version(b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01") == -1  # an int32
    assert readable(b"") and readable(b"\x08\x00") and readable(b"\x08")
    assert readable(b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
    assert not readable(b"\x08\x01")
