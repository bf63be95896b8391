"""Server-Sent Events as ``GET /api/v1/stream`` sends them: a line parser (no I/O) and the typed
events the client yields.

The parser follows the HTML standard's event-stream rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream):
``field: value`` lines, one leading space of the value dropped, ``data`` lines joined by
newlines, comments (``: ping``) ignored, a blank line ends a block.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of the live stream.

    ``id``: the stream's cursor after this event (give it as ``since=`` to resume after it);
    ``event``: its type (``series``, ``run``, ``reset``); ``data``: its JSON, decoded (read-only).
    Events of an unknown type come as this class; the known ones as its subclasses.
    """

    id: str
    event: str
    data: Any

    @property
    def experiment(self) -> str:
        """The experiment (server-side name) the event is about."""
        return str(self.data["experiment"])

    @property
    def generation(self) -> int:
        """The store generation of the commit the event comes from."""
        return int(self.data["generation"])


@dataclass(frozen=True, slots=True)
class SeriesEvent(StreamEvent):
    """A series changed: its last point now (``value`` for scalars only)."""

    @property
    def run(self) -> str:
        """The run of the series."""
        return str(self.data["run"])

    @property
    def tag(self) -> str:
        """The tag of the series."""
        return str(self.data["tag"])

    @property
    def plugin(self) -> str:
        """The plugin of the series (``scalars``, ``histograms``, ...)."""
        return str(self.data["plugin"])

    @property
    def data_class(self) -> str:
        """``scalar``, ``tensor`` or ``blob_sequence``."""
        return str(self.data["data_class"])

    @property
    def step(self) -> int | None:
        """The step of the series' last point."""
        step = self.data.get("step")
        return None if step is None else int(step)

    @property
    def wall_time(self) -> float | None:
        """The wall time of the series' last point."""
        wall_time = self.data.get("wall_time")
        return None if wall_time is None else float(wall_time)

    @property
    def value(self) -> float | None:
        """The last value of a scalar series (NaN and ±Inf as floats); None for other kinds."""
        value = self.data.get("value")
        if value is None:
            return None
        return _NON_FINITE[value] if isinstance(value, str) else float(value)


@dataclass(frozen=True, slots=True)
class RunEvent(StreamEvent):
    """A run was created (or came back) or deleted."""

    @property
    def run(self) -> str:
        """The run's name."""
        return str(self.data["run"])

    @property
    def change(self) -> str:
        """``created`` or ``deleted``."""
        return str(self.data["change"])


@dataclass(frozen=True, slots=True)
class ResetEvent(StreamEvent):
    """The store went back in time (it was rebuilt): state fetched before is of another store;
    fetch it again."""


_TYPES: dict[str, type[StreamEvent]] = {
    "series": SeriesEvent,
    "run": RunEvent,
    "reset": ResetEvent,
}


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the stream (the lines up to a blank line); each field None if absent."""

    id: str | None
    event: str | None
    data: str | None
    retry: int | None


class SseParser:
    """Turns the lines of an event stream (without their line ends) into blocks."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._event: str | None = None
        self._data: list[str] = []
        self._retry: int | None = None
        self._any = False

    def feed(self, line: str) -> Block | None:
        """The block that ``line`` ends (a blank line after at least one field), else None."""
        if not line:
            if not self._any:
                return None
            block = Block(
                self._id, self._event, "\n".join(self._data) if self._data else None, self._retry
            )
            self._id, self._event, self._data, self._retry, self._any = None, None, [], None, False
            return block
        if line.startswith(":"):
            return None  # a comment: ": connected", ": ping"
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        else:
            return None  # unknown fields are ignored
        self._any = True
        return None


def event_of(block: Block, last_id: str) -> StreamEvent | None:
    """The event a block carries (None for a block without data, e.g. the opening ``id:``);
    ``last_id``: the stream's cursor, if the block names none. ValueError if its data is not
    JSON."""
    if block.data is None:
        return None
    data = json.loads(block.data, object_hook=MappingProxyType)
    kind = block.event or "message"
    return _TYPES.get(kind, StreamEvent)(block.id if block.id is not None else last_id, kind, data)
