"""The real ml-metadata as an oracle: its own venv, a runner subprocess, and the bridge.

ml-metadata 1.17.1 pins protobuf<5 and boardd needs protobuf>=7, so the two cannot share a
venv: ``oracle_python()`` creates ``<repo>/.venv-mlmd`` once (``python3 -m venv`` and pip
install -r requirements.txt, under a file lock so pytest-xdist's workers build it once) and
reuses it while its stamp matches requirements.txt. If it cannot be built the calling test
FAILS with pip's output and the command to run by hand: the oracle is never skipped.

``MlmdOracle`` runs runner.py in that venv and turns each call into one JSON line. Our
messages go over as proto3 JSON and come back as OUR message classes, MLMD's exceptions as
boardd.metadata.errors' classes of the same name, so a test compares ``ours == theirs``.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from boardd.metadata import errors, metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
VENV = REPO / ".venv-mlmd"
REQUIREMENTS = HERE / "requirements.txt"
RUNNER = HERE / "runner.py"
_STAMP = VENV / "boardd-oracle-stamp"
#: Building the venv downloads ml-metadata (~10 MB) and its dependencies.
_PIP_TIMEOUT = 900


class OracleUnavailable(RuntimeError):
    """The oracle venv could not be built (the message has pip's output and the fix)."""


def _wanted_stamp() -> str:
    return f"python {sys.version_info[0]}.{sys.version_info[1]}\n" + REQUIREMENTS.read_text()


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_oracle_venv() -> Path:
    """The oracle venv's python, building the venv first if it is missing or stale."""
    python = _venv_python()
    if python.exists() and _STAMP.exists() and _STAMP.read_text() == _wanted_stamp():
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    lock_path = REPO / ".venv-mlmd.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if python.exists() and _STAMP.exists() and _STAMP.read_text() == _wanted_stamp():
                return python  # another worker built it while this one waited
            # The base interpreter, not this venv's python (a venv made from a venv's python
            # works too, but its pip and site-packages would follow this one).
            base_python = getattr(sys, "_base_executable", sys.executable)
            commands = [
                [base_python, "-m", "venv", str(VENV)],
                [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
            ]
            for command in commands:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=_PIP_TIMEOUT, check=False
                )
                if done.returncode != 0:
                    raise OracleUnavailable(
                        f"building the ml-metadata oracle venv failed: {' '.join(command)} "
                        f"exited {done.returncode}\n{done.stdout}\n{done.stderr}\n"
                        "Run by hand from the repository root:\n"
                        f"  python3 -m venv .venv-mlmd && .venv-mlmd/bin/pip install -r "
                        f"{REQUIREMENTS.relative_to(REPO)}"
                    )
            _STAMP.write_text(_wanted_stamp())
            return python
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def oracle_python() -> Path:
    """ensure_oracle_venv() for tests: a failure to build fails the test (never a skip)."""
    try:
        return ensure_oracle_venv()
    except (OracleUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        pytest.fail(str(exc), pytrace=False)


# -- the bridge -------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """A call argument as the runner reads it."""
    if isinstance(value, Message):
        full = value.DESCRIPTOR.full_name
        prefix = pb.DESCRIPTOR.package + "."
        return {
            "$msg": full[len(prefix) :],
            "json": json_format.MessageToDict(value, preserving_proto_field_name=True),
        }
    if isinstance(value, metadata_store.ListOptions):
        return {
            "$list_options": {
                "limit": value.limit,
                "order_by": value.order_by.name if value.order_by else None,
                "is_asc": value.is_asc,
                "filter_query": value.filter_query,
            }
        }
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(value: Any) -> Any:
    """A runner result with OUR message classes."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "$msg" in value:
            cls: Any = pb
            for part in value["$msg"].split("."):
                cls = getattr(cls, part)
            return json_format.ParseDict(value["json"], cls())
        if "$tuple" in value:
            return tuple(decode(v) for v in value["$tuple"])
        return {k: decode(v) for k, v in value.items()}
    return value


class OracleCallError(Exception):
    """A Python-level error in the oracle (not an MLMD status error), by class name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


class MlmdOracle:
    """ml-metadata's MetadataStore in a subprocess: ``.call(name, *args, **kwargs)``.

    ``MlmdOracle()`` is an in-memory store (fake_database); ``MlmdOracle(path)`` a SQLite
    file. Use it as a context manager (or close() it).
    """

    def __init__(self, sqlite_path: Path | str | None = None) -> None:
        python = oracle_python()
        where = ["--sqlite", str(sqlite_path)] if sqlite_path is not None else ["--fake"]
        # MLMD logs to stderr: a file, read back only if the runner dies (a pipe could fill).
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self._process = subprocess.Popen(
            [str(python), str(RUNNER), *where],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        #: Seconds MLMD spent in the last call (measured inside the runner).
        self.last_seconds = 0.0
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._stderr.seek(0)
            tail = self._stderr.read().decode(errors="replace")[-4000:]
            raise RuntimeError(f"the ml-metadata runner ended:\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call_raw(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The runner's answer as is: {"ok": …} or {"error": class name, "message": …}."""
        assert self._process.stdin is not None
        request = {"call": name, "args": encode(list(args)), "kwargs": encode(kwargs)}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = self._read()
        self.last_seconds = float(answer.get("seconds", 0.0))
        return answer

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """MLMD's result with our classes; MLMD's errors raised as ours (same class name)."""
        answer = self.call_raw(name, *args, **kwargs)
        if "error" in answer:
            cls = getattr(errors, answer["error"], None)
            if isinstance(cls, type) and issubclass(cls, errors.StatusError):
                if cls is errors.UnknownError or cls is errors.StatusError:
                    raise errors.UnknownError(answer["message"])
                raise cls(answer["message"])  # type: ignore[call-arg]
            raise OracleCallError(answer["error"], answer["message"])
        return decode(answer["ok"])

    def reset(self) -> None:
        """Replaces the runner's store with a fresh in-memory one (cheaper than a new runner)."""
        answer = self.call_raw("$reset")
        if "error" in answer:
            raise RuntimeError(f"the runner could not reset: {answer}")

    def close(self) -> None:
        """Ends the runner and closes its pipes."""
        process = self._process
        if process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.write(json.dumps({"call": "$exit"}) + "\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()

    def __enter__(self) -> MlmdOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def mlmd_oracle(sqlite_path: Path | str | None = None) -> Iterator[MlmdOracle]:
    """MlmdOracle as a with-block."""
    oracle = MlmdOracle(sqlite_path)
    try:
        yield oracle
    finally:
        oracle.close()


_TIME_FIELDS = (
    "create_time_since_epoch",
    "last_update_time_since_epoch",
    "milliseconds_since_epoch",
)


def without_times(value: Any) -> Any:
    """A copy with every timestamp cleared (messages, lists, tuples, LineageGraphs)."""
    if isinstance(value, list):
        return [without_times(v) for v in value]
    if isinstance(value, tuple):
        return tuple(without_times(v) for v in value)
    if isinstance(value, Message):
        copy = type(value)()
        copy.CopyFrom(value)
        _clear_times(copy)
        return copy
    return value


def _clear_times(message: Message) -> None:
    for name in _TIME_FIELDS:
        if name in message.DESCRIPTOR.fields_by_name:
            message.ClearField(name)
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        if field.is_repeated:
            for item in value:
                _clear_times(item)
        else:
            _clear_times(value)
