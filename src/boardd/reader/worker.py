"""Decode worker processes for parallel catch-up: ``python -m boardd.reader.worker``.

A worker reads length-prefixed pickled :func:`decode_segment` argument tuples on stdin and
writes length-prefixed pickled :class:`Segment` results on stdout, one per task, until stdin
closes. Workers are plain subprocesses started by :class:`WorkerPool`, not multiprocessing's:
they never re-import the caller's ``__main__`` module, whatever program embeds boardd.
Only the parent's own pickles are ever loaded here, over a private pipe.
"""

from __future__ import annotations

import contextlib
import pickle
import selectors
import subprocess
import sys
from typing import IO, Any

from boardd.reader.segment import Segment, decode_segment

_HEADER = 8


class WorkerError(RuntimeError):
    """A worker process died or answered nonsense; the caller falls back to decoding itself."""


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
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


def _read_frame(stream: IO[bytes]) -> bytes:
    size = int.from_bytes(_read_exact(stream, _HEADER), "little")
    return _read_exact(stream, size)


def main() -> int:
    """The worker's loop (runs in the child process)."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            task = pickle.loads(_read_frame(stdin))
        except EOFError:
            return 0
        segment = decode_segment(*task)
        _write_frame(stdout, pickle.dumps(segment, protocol=pickle.HIGHEST_PROTOCOL))


class WorkerPool:
    """A few decode workers; submit a task to an idle one, then wait for any result."""

    def __init__(self, size: int) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._selector = selectors.DefaultSelector()
        self._busy: dict[int, Any] = {}
        try:
            for _ in range(size):
                proc = subprocess.Popen(
                    [sys.executable, "-m", "boardd.reader.worker"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                self._procs.append(proc)
                assert proc.stdout is not None
                self._selector.register(proc.stdout, selectors.EVENT_READ, len(self._procs) - 1)
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        """How many workers there are."""
        return len(self._procs)

    def idle(self) -> list[int]:
        """Workers with no task."""
        return [i for i in range(len(self._procs)) if i not in self._busy]

    def submit(self, worker: int, task: tuple[Any, ...], tag: Any) -> None:
        """Sends ``task`` (decode_segment's arguments) to an idle worker; ``tag`` comes back."""
        stdin = self._procs[worker].stdin
        assert stdin is not None
        try:
            _write_frame(stdin, pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            raise WorkerError(f"decode worker {worker} is gone: {exc}") from exc
        self._busy[worker] = tag

    def wait(self) -> tuple[Any, Segment]:
        """Blocks until a busy worker answers; returns its task's tag and result."""
        if not self._busy:
            raise RuntimeError("no task is running")
        while True:
            for key, _ in self._selector.select():
                worker = int(key.data)
                if worker not in self._busy:
                    continue
                stdout = self._procs[worker].stdout
                assert stdout is not None
                try:
                    result = pickle.loads(_read_frame(stdout))
                except (EOFError, pickle.UnpicklingError) as exc:
                    raise WorkerError(f"decode worker {worker} died") from exc
                if not isinstance(result, Segment):
                    raise WorkerError(f"decode worker {worker} answered {type(result)}")
                return self._busy.pop(worker), result

    def close(self) -> None:
        """Stops every worker (closing stdin ends its loop); safe to call twice."""
        for proc in self._procs:
            if proc.stdin is not None and not proc.stdin.closed:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None and not proc.stdout.closed:
                proc.stdout.close()
        self._selector.close()
        self._procs = []
        self._busy.clear()


if __name__ == "__main__":
    sys.exit(main())
