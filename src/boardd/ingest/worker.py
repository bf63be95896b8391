"""A decode worker process: segment tasks in, decoded segments out, over two pipes.

A worker reads length-prefixed pickled :func:`~boardd.ingest.segment.decode_segment` argument
tuples from one pipe and writes length-prefixed pickled
:class:`~boardd.ingest.segment.Segment` results to another, one per task, until its task pipe
closes. Only the parent's own pickles are ever loaded, over a private pipe. Spawned workers run
this module (``python -m boardd.ingest.worker``); forked ones call :func:`serve`.
"""

from __future__ import annotations

import pickle
import sys
from typing import IO

from boardd.ingest.segment import decode_segment

_HEADER = 8


def write_frame(stream: IO[bytes], payload: bytes) -> None:
    """Writes one length-prefixed payload and flushes."""
    stream.write(len(payload).to_bytes(_HEADER, "little"))
    stream.write(payload)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("stream closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: IO[bytes]) -> bytes:
    """Reads one length-prefixed payload; :class:`EOFError` when the stream closes."""
    size = int.from_bytes(_read_exact(stream, _HEADER), "little")
    return _read_exact(stream, size)


def serve(tasks: IO[bytes], results: IO[bytes]) -> None:
    """The worker's loop: decode each task, answer, until the task pipe closes."""
    while True:
        try:
            task = pickle.loads(read_frame(tasks))
        except EOFError:
            return
        # A task is one segment's arguments, or a list of them (small files: one answer each).
        decoded = (
            [decode_segment(*t) for t in task] if isinstance(task, list) else decode_segment(*task)
        )
        answer = pickle.dumps(decoded, protocol=pickle.HIGHEST_PROTOCOL)
        write_frame(results, answer)
        # Freed before the next task is decoded, not when the next answer replaces it.
        del answer, decoded, task


def main() -> int:
    """A spawned worker: tasks on stdin, results on stdout."""
    serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
