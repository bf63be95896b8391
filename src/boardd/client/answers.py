"""What the Python client gives back: the server's error, and the typed answers of its calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt


class BoarddError(Exception):
    """An error answer of the server (or no answer: status 0, code ``unreachable``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Experiment:
    """One experiment (watched logdir) of the server."""

    id: str
    name: str
    logdir: str
    creation_time: float


@dataclass(frozen=True, slots=True)
class Run:
    """One run: a directory of event files, named relative to the logdir."""

    name: str
    start_time: float | None


@dataclass(frozen=True, slots=True)
class TimeSeries:
    """The metadata of one series, as the ``list`` calls give it."""

    max_step: int | None
    max_wall_time: float | None
    plugin_name: str
    plugin_content: bytes
    display_name: str
    description: str
    #: The longest blob list of any step (blob sequences only; 0 for the other kinds).
    max_length: int = 0


@dataclass(frozen=True, slots=True)
class ScalarSeries:
    """The points of one scalar series, as numpy arrays sorted by step (NaN and ±Inf kept)."""

    steps: npt.NDArray[np.int64]
    wall_times: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass(frozen=True, slots=True)
class ScalarChunk:
    """Consecutive points of one scalar series, as :meth:`Client.iter_scalars` yields them:
    numpy arrays sorted by step (NaN and ±Inf kept); the next chunk of the same series goes on
    from the last step of this one."""

    run: str
    tag: str
    steps: npt.NDArray[np.int64]
    wall_times: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass(frozen=True, slots=True)
class TensorDatum:
    """One point of a tensor series. ``values`` is a numpy array of the tensor's dtype and
    shape; string tensors give an object array of ``str`` (UTF-8) or ``bytes`` (other)."""

    step: int
    wall_time: float
    dtype: str
    shape: tuple[int, ...]
    values: npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class BlobSequenceDatum:
    """One step of a blob sequence: keys for :meth:`Client.blob`, in index order."""

    step: int
    wall_time: float
    blobs: tuple[str, ...]
