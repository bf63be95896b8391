"""What TensorBoard's plugins read of a series' plugin content (a small protobuf message per
plugin): its format ``version`` (field 1 in the histogram, image, audio, text and PR-curve
plugins' messages) and the audio plugin's ``encoding`` (field 2)."""

from __future__ import annotations

#: The field numbers read here.
VERSION_FIELD = 1
AUDIO_ENCODING_FIELD = 2
#: The audio plugin's encoding of WAV clips (its ``Encoding`` enum).
AUDIO_ENCODING_WAV = 11
#: The newest format version of each plugin's data that TensorBoard 2.21 reads; a series
#: written in a newer one is left out of the plugin's tags, as TensorBoard leaves it out.
LATEST_VERSION = 0


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def varint_field(content: bytes, field: int) -> int:
    """The last value of a varint field of a serialized message (0, protobuf's default, when
    absent or when the message cannot be read)."""
    found = 0
    pos = 0
    try:
        while pos < len(content):
            key, pos = _varint(content, pos)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint(content, pos)
                if number == field:
                    found = value
            elif wire == 1:
                pos += 8
            elif wire == 2:
                length, pos = _varint(content, pos)
                pos += length
            elif wire == 5:
                pos += 4
            else:
                return found
    except ValueError:
        return found
    return found


def version(content: bytes) -> int:
    """The format ``version`` of a plugin's content (an int32: a negative one is written as a
    ten-byte varint; 0 when absent or unreadable, as protobuf's default)."""
    value = varint_field(content, VERSION_FIELD) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def readable(content: bytes) -> bool:
    """Whether TensorBoard's plugins (and its time series) read data of this format version:
    a newer one is left out of their tags."""
    return version(content) <= LATEST_VERSION


def audio_media_type(content: bytes) -> str:
    """The media type of an audio series' clips, as TensorBoard's audio plugin names it."""
    if varint_field(content, AUDIO_ENCODING_FIELD) == AUDIO_ENCODING_WAV:
        return "audio/wav"
    return "application/octet-stream"


#: The media types the audio plugin serves clips as (any other is refused).
AUDIO_MEDIA_TYPES = frozenset({"audio/wav", "application/octet-stream"})


def image_media_type(head: bytes) -> str:
    """The media type of an image from its first bytes, as TensorBoard's image plugin names
    it: PNG, JPEG, GIF and BMP, anything else application/octet-stream."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"BM"):
        return "image/bmp"
    return "application/octet-stream"
