"""The reader's errors: everything that can go wrong turning event-file bytes into points."""

from __future__ import annotations


class ReaderError(Exception):
    """Base of every error raised by ``boardd.reader``."""


class EventDecodeError(ReaderError):
    """A framed record's payload is not a parseable ``Event`` proto.

    ``offset`` is the record's start in its file. The caller records the record as data loss
    and carries on with the next one.
    """

    def __init__(self, offset: int, detail: str) -> None:
        super().__init__(
            f"the record at byte offset {offset} is not a valid Event proto ({detail}); "
            "the file is corrupt or was not written by a TensorBoard summary writer"
        )
        self.offset = offset
        self.detail = detail
