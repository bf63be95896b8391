"""What TensorBoard's time-series ("metrics") dashboard needs of stored data, in its terms:
the combined Markdown description of a tag described differently in several runs, a stored
histogram as bins, the blob of one image sample of a step."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from boardd.data.values import finite_or_text

#: The blobs of an image step before its samples: width, then height.
IMAGE_HEADER_BLOBS = 2


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
