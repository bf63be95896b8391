"""What TensorBoard's time-series ("metrics") dashboard needs of stored data, in its terms:
the combined Markdown description of a tag described differently in several runs, a stored
histogram as bins, the blob of one image sample of a step, an image's content type."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from boardd.data.values import finite_or_text

#: The blobs of an image step before its samples: width, then height.
IMAGE_HEADER_BLOBS = 2
#: The newest metadata version of the scalars, histograms and images plugins TensorBoard
#: knows; it leaves out of its time series' tags a series of a newer one.
LATEST_KNOWN_VERSION = 0


def metadata_version(content: bytes) -> int | None:
    """The ``version`` (field 1, an int32) of a scalars, histograms or images plugin's
    content (0 when absent, as protobuf reads it); None if the content is no such message."""
    version = 0
    pos = 0
    try:
        while pos < len(content):
            key, pos = _varint(content, pos)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint(content, pos)
                if field == 1:
                    version = value - (1 << 64) if value >= 1 << 63 else value
            elif wire == 1:
                pos += 8
            elif wire == 2:
                length, pos = _varint(content, pos)
                pos += length
            elif wire == 5:
                pos += 4
            else:
                return None
    except IndexError:
        return None
    return version if pos == len(content) else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise IndexError("varint too long")


def shown_version(content: bytes) -> bool:
    """Whether TensorBoard's time series lists a series of this plugin content: not one of a
    metadata version newer than it knows (content it cannot parse is listed: TensorBoard
    fails on it)."""
    version = metadata_version(content)
    return version is None or version <= LATEST_KNOWN_VERSION


def tag_descriptions(described: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Each tag's description as Markdown, from ``(run, tag, description)`` triples (empty
    descriptions ignored). A tag with one distinct description has it; one with several gets
    a document headed "Multiple descriptions" with a section per description (sorted), each
    naming the runs (sorted) that carry it, as TensorBoard combines them."""
    by_tag: dict[str, set[str]] = {}
    runs_of: dict[str, set[str]] = {}
    for run, tag, description in described:
        if not description:
            continue
        by_tag.setdefault(tag, set()).add(description)
        runs_of.setdefault(description, set()).add(run)
    out: dict[str, str] = {}
    for tag, descriptions in by_tag.items():
        ordered = sorted(descriptions)
        if len(ordered) == 1:
            out[tag] = ordered[0]
            continue
        sections = []
        for description in ordered:
            runs = sorted(runs_of[description])
            noun = "runs" if len(runs) > 1 else "run"
            sections.append(f"## For {noun}: {', '.join(runs)}\n{description}")
        out[tag] = "# Multiple descriptions\n" + "\n".join(sections)
    return out


def histogram_bins(value: Any) -> list[dict[str, Any]]:
    """A stored histogram (a ``[k, 3]`` tensor of left edge, right edge, count, as
    :func:`boardd.data.values.tensor_value` decodes it) as bins ``{min, max, count}``;
    non-finite numbers spelled as TensorBoard spells them. A value of another shape has no
    bins (TensorBoard's histograms are always ``[k, 3]``)."""
    if not isinstance(value, list):
        return []
    bins = []
    for row in value:
        if not isinstance(row, list) or len(row) < 3:
            return []
        left, right, count = (_number(x) for x in row[:3])
        bins.append({"min": left, "max": right, "count": count})
    return bins


def _number(x: Any) -> Any:
    return finite_or_text(x) if isinstance(x, float) else x


def image_sample(keys: Sequence[str], sample: int) -> str | None:
    """The blob key of image ``sample`` of a step (its blobs: width, height, then the
    images), or None if the step has no such sample. A negative sample counts as Python
    indexes (TensorBoard indexes so: -1 is the height, -3 the last image)."""
    index = sample + IMAGE_HEADER_BLOBS
    if index >= len(keys) or index < -len(keys):
        return None
    return keys[index]


#: Image formats TensorBoard names by their first bytes; anything else is
#: ``application/octet-stream`` (WebP included: TensorBoard does not name it).
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def image_media_type(head: bytes) -> str:
    """The content type TensorBoard's time series sends an image with, from its first bytes."""
    for magic, media in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media
    return "application/octet-stream"
