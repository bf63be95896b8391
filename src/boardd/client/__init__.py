"""A Python client of boardd's HTTP API (on httpx): data as numpy, live updates as events.

    >>> from boardd.client import Client
    >>> with Client("http://127.0.0.1:6007") as c:
    ...     loss = c.scalars("train", "loss", downsample=1000)
    ...     loss.steps, loss.values          # numpy arrays
    ...     for event in c.stream(timeout=60):
    ...         print(event.event, event.data)

Errors of the server come back as :class:`BoarddError` with its status, code and message.
"""

from boardd.client.answers import (
    BlobSequenceDatum,
    BoarddError,
    Experiment,
    Run,
    ScalarChunk,
    ScalarSeries,
    TensorDatum,
    TimeSeries,
)
from boardd.client.client import Client
from boardd.client.sse import ResetEvent, RunEvent, SeriesEvent, StreamEvent

__all__ = [
    "BlobSequenceDatum",
    "BoarddError",
    "Client",
    "Experiment",
    "ResetEvent",
    "Run",
    "RunEvent",
    "ScalarChunk",
    "ScalarSeries",
    "SeriesEvent",
    "StreamEvent",
    "TensorDatum",
    "TimeSeries",
]
