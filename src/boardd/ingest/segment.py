"""Decoding a segment of one event file, in a worker process or here (parallel catch-up)."""

from __future__ import annotations

from dataclasses import dataclass, field

from boardd.ingest.sources import SourceFile
from boardd.reader.decoded import DecodedBatch, TagMetadata
from boardd.reader.errors import ReaderError
from boardd.reader.events import EventDecoder
from boardd.reader.modes import CrcMode
from boardd.reader.pipeline import EventFileReader


@dataclass(slots=True)
class Segment:
    """The batches decoded from one file between two offsets; picklable."""

    batches: list[DecodedBatch] = field(default_factory=list)
    end_offset: int = 0
    at_end: bool = False
    error: str | None = None


def decode_segment(
    file: SourceFile,
    offset: int,
    tags: dict[str, TagMetadata],
    crc_mode: CrcMode,
    max_bytes: int,
    batch_bytes: int,
) -> Segment:
    """Decodes about ``max_bytes`` of ``file`` from ``offset``, given the run's tags so far.

    ``at_end`` tells whether the segment reached the end of what the file now holds. A file
    that cannot be read gives a segment with ``error`` set and no batches past the failure.
    """
    decoder = EventDecoder()
    decoder.tags.update(tags)
    segment = Segment(end_offset=offset)
    try:
        with EventFileReader(
            file.open(), offset, decoder=decoder, crc_mode=crc_mode, max_batch_bytes=batch_bytes
        ) as reader:
            while segment.end_offset - offset < max_bytes:
                batch = reader.read_batch()
                if batch.end_offset == segment.end_offset and not batch.data_loss:
                    segment.at_end = True
                    break
                segment.batches.append(batch)
                segment.end_offset = batch.end_offset
    except (OSError, ReaderError) as exc:
        segment.error = str(exc)
    return segment
