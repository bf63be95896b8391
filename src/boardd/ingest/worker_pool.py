"""A pool of decode worker processes for parallel catch-up (see :mod:`boardd.ingest.worker`).

Workers are started one of two ways, never with multiprocessing (which may re-import the
caller's ``__main__`` module, whatever program embeds boardd):

- **forked** from the calling process, when it has a single thread (``boardd ingest``): a
  worker then starts at once with everything already imported, and shares the
  parent's memory pages until it writes to them;
- **spawned** as ``python -m boardd.ingest.worker`` otherwise (the daemon, whose threads make
  ``fork`` unsafe): a fresh interpreter that imports the decoder first (time and memory of
  its own; bench/bench_ingest.py).
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import gc
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, NoReturn

from boardd.ingest.segment import Segment
from boardd.ingest.worker import read_frame, serve, write_frame


class WorkerError(RuntimeError):
    """A worker process died or answered nonsense; the caller falls back to decoding itself."""


class _Forked:
    """A forked worker, with the part of :class:`subprocess.Popen` that the pool uses."""

    def __init__(self, inherited: list[int]) -> None:
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        _widen(result_read)
        # Objects that exist now are never collected in the worker: its collector then leaves
        # them alone instead of writing to every page of the shared heap (copy on write).
        gc.freeze()
        try:
            self.pid = os.fork()
        except OSError:
            gc.unfreeze()
            for fd in (task_read, task_write, result_read, result_write):
                os.close(fd)
            raise
        if self.pid != 0:
            gc.unfreeze()
        if self.pid == 0:  # pragma: no cover - the child; its work is checked by its results
            _forked_child(task_read, result_write, [task_write, result_read, *inherited])
        os.close(task_read)
        os.close(result_write)
        self.stdin: IO[bytes] | None = os.fdopen(task_write, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(result_read, "rb")
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, 0 if deadline is None else os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            else:
                time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


#: Answers are megabytes: a wider pipe takes one in a few reads (each needs the GIL of the
#: process reading it, which is busy committing) instead of a read per 64 KiB.
_PIPE_BYTES = 2**20


def _widen(fd: int) -> None:
    """Grows a pipe's buffer to :data:`_PIPE_BYTES` where the system allows (Linux)."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _forked_child(tasks: int, results: int, close: list[int]) -> NoReturn:  # pragma: no cover
    """Runs a forked worker; never returns to the caller's code (no atexit, no finalizers:
    the parent's open store and buffers are not this process's to close or flush)."""
    code = 1
    try:
        # Ctrl-C reaches the whole process group: the parent decides what happens. SIGTERM
        # (systemd stops the whole unit) just ends the worker, not the parent's handler.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        # Our copies of the parent's pipe ends (this worker's and earlier workers') must go,
        # or a worker would never see its task pipe close.
        for fd in close:
            os.close(fd)
        with os.fdopen(tasks, "rb") as task_pipe, os.fdopen(results, "wb") as result_pipe:
            serve(task_pipe, result_pipe)
        code = 0
    except BaseException:  # the parent sees the pipe close, and recovers
        pass
    finally:
        os._exit(code)


class WorkerPool:
    """A few decode workers; submit tasks to workers with room, then wait for any result.

    ``fork`` forks the workers from this process instead of spawning fresh interpreters; only
    while the process has a single thread (a fork copies no other thread, so a lock one of them
    held would stay held forever in the worker).

    Each worker takes up to ``depth`` tasks at a time (the next one waits in its pipe), and a
    thread per worker reads its answers as they come: a worker never waits for this process,
    which meanwhile commits what was decoded, and never stops reading its tasks, so a
    :meth:`submit` never blocks for long. Answers not yet taken are at most ``depth`` per
    worker: the memory bound.
    """

    def __init__(self, size: int, *, fork: bool = False, depth: int = 3) -> None:
        self._procs: list[subprocess.Popen[bytes] | _Forked] = []
        self._tasks: list[collections.deque[Any]] = []
        self._results: queue.SimpleQueue[tuple[int, bytes | None]] = queue.SimpleQueue()
        self._closing = False
        self._readers: list[threading.Thread] = []
        self.depth = max(1, depth)
        try:
            for _ in range(size):
                proc: subprocess.Popen[bytes] | _Forked
                if fork:
                    proc = _Forked(self._pipe_fds())
                else:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "boardd.ingest.worker"],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                    )
                self._procs.append(proc)
                self._tasks.append(collections.deque())
                if not fork and proc.stdout is not None:
                    _widen(proc.stdout.fileno())
            # Threads only once every worker is forked.
            for worker, proc in enumerate(self._procs):
                assert proc.stdout is not None
                reader = threading.Thread(
                    target=self._drain,
                    args=(worker, proc.stdout),
                    name=f"boardd-worker-{worker}",
                    daemon=True,
                )
                reader.start()
                self._readers.append(reader)
        except BaseException:
            self.close()
            raise

    def _pipe_fds(self) -> list[int]:
        return [
            pipe.fileno()
            for proc in self._procs
            for pipe in (proc.stdin, proc.stdout)
            if pipe is not None and not pipe.closed
        ]

    def _drain(self, worker: int, stream: IO[bytes]) -> None:
        try:
            while True:
                payload = read_frame(stream)
                if not self._closing:
                    self._results.put((worker, payload))
        except (EOFError, OSError, ValueError):
            self._results.put((worker, None))  # the worker is gone (or the pool closed)

    def pid(self, worker: int) -> int:
        """The process id of a worker."""
        return self._procs[worker].pid

    @property
    def size(self) -> int:
        """How many workers there are."""
        return len(self._procs)

    @property
    def pending(self) -> int:
        """Tasks submitted and not yet answered."""
        return sum(len(tasks) for tasks in self._tasks)

    def vacant(self) -> int | None:
        """The worker with the fewest tasks, if it has room for one more."""
        if not self._tasks:
            return None
        worker = min(range(len(self._tasks)), key=lambda i: len(self._tasks[i]))
        return worker if len(self._tasks[worker]) < self.depth else None

    def submit(self, worker: int, task: tuple[Any, ...] | list[Any], tag: Any) -> None:
        """Sends ``task`` (decode_segment's arguments, or a list of them: the answer is then a
        list of segments) to a worker; ``tag`` comes back."""
        stdin = self._procs[worker].stdin
        assert stdin is not None
        try:
            write_frame(stdin, pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            raise WorkerError(f"decode worker {worker} is gone: {exc}") from exc
        self._tasks[worker].append(tag)

    def wait(self) -> tuple[Any, Segment | list[Segment]]:
        """Blocks until a worker answers; returns its task's tag and result. A worker answers
        its tasks in the order they were submitted."""
        if not self.pending:
            raise RuntimeError("no task is running")
        while True:
            answer = self._answer(*self._results.get())
            if answer is not None:
                return answer

    def poll(self) -> tuple[Any, Segment | list[Segment]] | None:
        """An answer that is already in, if any (see :meth:`wait`)."""
        while self.pending:
            try:
                item = self._results.get_nowait()
            except queue.Empty:
                return None
            answer = self._answer(*item)
            if answer is not None:
                return answer
        return None

    def _answer(
        self, worker: int, payload: bytes | None
    ) -> tuple[Any, Segment | list[Segment]] | None:
        if payload is None:
            if self._tasks[worker]:
                raise WorkerError(f"decode worker {worker} died")
            return None
        try:
            result = pickle.loads(payload)
        except (pickle.UnpicklingError, EOFError) as exc:
            raise WorkerError(f"decode worker {worker} answered nonsense") from exc
        whole = isinstance(result, Segment) or (
            isinstance(result, list) and all(isinstance(r, Segment) for r in result)
        )
        if not whole or not self._tasks[worker]:
            raise WorkerError(f"decode worker {worker} answered {type(result)}")
        return self._tasks[worker].popleft(), result

    def close(self) -> None:
        """Stops every worker (closing its task pipe ends its loop); safe to call twice.

        Answers still to come are not waited for: workers with tasks left are killed.
        """
        self._closing = True
        for proc in self._procs:
            if proc.stdin is not None and not proc.stdin.closed:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for worker, proc in enumerate(self._procs):
            if self._tasks[worker]:
                proc.kill()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        for proc in self._procs:
            if proc.stdout is not None and not proc.stdout.closed:
                proc.stdout.close()
        self._procs = []
        self._tasks = []
        self._readers = []
