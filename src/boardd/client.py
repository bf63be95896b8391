"""A small Python client of boardd's HTTP API, on the standard library alone (urllib).

    >>> from boardd.client import Client
    >>> c = Client("http://127.0.0.1:6007")
    >>> loss = c.scalars("train", "loss", downsample=1000)
    >>> loss.steps, loss.values          # numpy arrays

Errors of the server come back as :class:`BoarddError` with its status, code and message.
"""

from __future__ import annotations

import base64
import gzip
import importlib
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NUMPY_DTYPES = {
    "DT_FLOAT": np.float32,
    "DT_DOUBLE": np.float64,
    "DT_HALF": np.float16,
    "DT_BFLOAT16": np.float32,
    "DT_INT8": np.int8,
    "DT_INT16": np.int16,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
    "DT_UINT8": np.uint8,
    "DT_UINT16": np.uint16,
    "DT_UINT32": np.uint32,
    "DT_UINT64": np.uint64,
    "DT_BOOL": np.bool_,
    "DT_COMPLEX64": np.complex64,
    "DT_COMPLEX128": np.complex128,
}

Params = Mapping[str, str | int | Sequence[str] | None]


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


class Client:
    """A client of one boardd server.

    ``experiment`` is sent with every call that takes one (the server's first experiment when
    None); ``token`` is sent as ``Authorization: Bearer`` (for ``boardd serve --token-file``);
    ``timeout`` is in seconds per request.
    """

    def __init__(
        self,
        url: str,
        *,
        experiment: str | None = None,
        token: str | None = None,
        timeout: float = 10,
    ) -> None:
        self.url = url.rstrip("/")
        self.experiment = experiment
        self.timeout = timeout
        self._headers = {"Accept-Encoding": "gzip", "User-Agent": "boardd-client"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"

    # -- the server ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """The server's health document (cache counters, per-experiment ingest state)."""
        found = self._json("/api/v1/health")
        assert isinstance(found, dict)
        return found

    def experiments(self) -> list[Experiment]:
        """The experiments the server holds data for."""
        return [Experiment(**e) for e in self._json("/api/v1/experiments")]

    def runs(self) -> list[Run]:
        """The experiment's runs, sorted by name."""
        return [Run(**r) for r in self._json("/api/v1/runs", self._experiment())]

    def plugins(self) -> dict[str, list[str]]:
        """Plugin name → the data classes of its series (scalar, tensor, blob_sequence)."""
        found = self._json("/api/v1/plugins", self._experiment())
        assert isinstance(found, dict)
        return found

    # -- listings --------------------------------------------------------------------------

    def list_scalars(
        self,
        plugin: str = "scalars",
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
    ) -> dict[str, dict[str, TimeSeries]]:
        """run → tag → metadata of the plugin's scalar series (optionally only these
        runs × tags)."""
        return self._list("scalars", plugin, runs, tags)

    def list_tensors(
        self,
        plugin: str,
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
    ) -> dict[str, dict[str, TimeSeries]]:
        """run → tag → metadata of the plugin's tensor series."""
        return self._list("tensors", plugin, runs, tags)

    def list_blob_sequences(
        self,
        plugin: str,
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
    ) -> dict[str, dict[str, TimeSeries]]:
        """run → tag → metadata of the plugin's blob sequence series."""
        return self._list("blob_sequences", plugin, runs, tags)

    # -- values ----------------------------------------------------------------------------

    def scalars(
        self,
        run: str,
        tag: str,
        *,
        plugin: str = "scalars",
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
    ) -> ScalarSeries:
        """The points of one scalar series; BoarddError(404) if there is no such series."""
        found = self.scalars_many(
            plugin,
            runs=[run],
            tags=[tag],
            downsample=downsample,
            latest=latest,
            step_min=step_min,
            step_max=step_max,
        )
        series = found.get(run, {}).get(tag)
        if series is None:
            raise BoarddError(
                404, "not_found", f"no {plugin} scalar series run={run!r} tag={tag!r}"
            )
        return series

    def scalars_many(
        self,
        plugin: str = "scalars",
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
    ) -> dict[str, dict[str, ScalarSeries]]:
        """run → tag → points of every matching scalar series (runs × tags; all if None)."""
        answer = self._json(
            "/api/v1/scalars",
            {
                **self._filters(plugin, runs, tags),
                **_steps(step_min, step_max, latest, downsample),
                "format": "columns",
            },
        )
        return {
            run: {
                tag: ScalarSeries(
                    np.array(c["step"], dtype=np.int64),
                    np.array(c["wall_time"], dtype=np.float64),
                    _floats(c["value"]),
                )
                for tag, c in tags_.items()
            }
            for run, tags_ in answer.items()
        }

    def scalars_frame(
        self,
        plugin: str = "scalars",
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
    ) -> Any:
        """Every matching scalar point as a ``pandas.DataFrame`` with the columns run, tag,
        step, wall_time, value (one row per point). Needs pandas (not a dependency of boardd)."""
        try:
            # Imported by name: pandas is optional, and its type stubs are not installed.
            pandas = importlib.import_module("pandas")
        except ImportError as exc:
            raise ImportError(
                "Client.scalars_frame needs pandas, which is not installed: "
                "pip install pandas (or use Client.scalars, which gives numpy arrays)"
            ) from exc
        found = self.scalars_many(
            plugin,
            runs=runs,
            tags=tags,
            downsample=downsample,
            latest=latest,
            step_min=step_min,
            step_max=step_max,
        )
        pieces = [
            (run, tag, series)
            for run, by_tag in found.items()
            for tag, series in by_tag.items()
            if len(series)
        ]
        return pandas.DataFrame(
            {
                "run": np.concatenate([np.full(len(s), r, dtype=object) for r, _, s in pieces])
                if pieces
                else np.array([], dtype=object),
                "tag": np.concatenate([np.full(len(s), t, dtype=object) for _, t, s in pieces])
                if pieces
                else np.array([], dtype=object),
                "step": _concat([s.steps for _, _, s in pieces], np.int64),
                "wall_time": _concat([s.wall_times for _, _, s in pieces], np.float64),
                "value": _concat([s.values for _, _, s in pieces], np.float64),
            }
        )

    def tensors(
        self,
        plugin: str,
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
    ) -> dict[str, dict[str, list[TensorDatum]]]:
        """run → tag → points of every matching tensor series of the plugin."""
        answer = self._json(
            "/api/v1/tensors",
            {
                **self._filters(plugin, runs, tags),
                **_steps(step_min, step_max, latest, downsample),
            },
        )
        return {
            run: {tag: [_tensor(d) for d in data] for tag, data in by_tag.items()}
            for run, by_tag in answer.items()
        }

    def blob_sequences(
        self,
        plugin: str,
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
        index_min: int | None = None,
        index_max: int | None = None,
    ) -> dict[str, dict[str, list[BlobSequenceDatum]]]:
        """run → tag → steps of every matching blob sequence (blob keys, not bytes)."""
        params: dict[str, Any] = {
            **self._filters(plugin, runs, tags),
            **_steps(step_min, step_max, latest, downsample),
        }
        if index_min is not None:
            params["index_min"] = index_min
        if index_max is not None:
            params["index_max"] = index_max
        answer = self._json("/api/v1/blob_sequences", params)
        return {
            run: {
                tag: [BlobSequenceDatum(d["step"], d["wall_time"], tuple(d["blobs"])) for d in data]
                for tag, data in by_tag.items()
            }
            for run, by_tag in answer.items()
        }

    def blob(self, key: str) -> bytes:
        """The bytes of one blob (a key from :meth:`blob_sequences`)."""
        return self._get("/api/v1/blob/" + urllib.parse.quote(key, safe=""), {})

    # -- plumbing --------------------------------------------------------------------------

    def _experiment(self) -> dict[str, Any]:
        return {} if self.experiment is None else {"experiment": self.experiment}

    def _filters(
        self, plugin: str, runs: Iterable[str] | None, tags: Iterable[str] | None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {**self._experiment(), "plugin": plugin}
        if runs is not None:
            params["run"] = _names(runs, "runs")
        if tags is not None:
            params["tag"] = _names(tags, "tags")
        return params

    def _list(
        self,
        kind: str,
        plugin: str,
        runs: Iterable[str] | None,
        tags: Iterable[str] | None,
    ) -> dict[str, dict[str, TimeSeries]]:
        answer = self._json(f"/api/v1/{kind}/list", self._filters(plugin, runs, tags))
        return {
            run: {
                tag: TimeSeries(
                    max_step=m["max_step"],
                    max_wall_time=m["max_wall_time"],
                    plugin_name=m["plugin_name"],
                    plugin_content=base64.b64decode(m["plugin_content"]),
                    display_name=m["display_name"],
                    description=m["description"],
                    max_length=m.get("max_length", 0),
                )
                for tag, m in by_tag.items()
            }
            for run, by_tag in answer.items()
        }

    def _json(self, path: str, params: Params | None = None) -> Any:
        return json.loads(self._get(path, params or {}))

    def _get(self, path: str, params: Params) -> bytes:
        query = urllib.parse.urlencode(
            [(k, v) for k, v in params.items() if v is not None], doseq=True
        )
        url = self.url + path + (f"?{query}" if query else "")
        request = urllib.request.Request(url, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body: bytes = response.read()
                encoding = response.headers.get("Content-Encoding", "")
        except urllib.error.HTTPError as exc:
            with exc:
                error = _error_of(exc.code, exc.read(), exc.headers.get("Content-Encoding", ""))
            raise error from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BoarddError(
                0, "unreachable", f"cannot reach {self.url} ({reason}): is boardd serve running?"
            ) from exc
        return gzip.decompress(body) if encoding == "gzip" else body


def _names(names: Iterable[str], what: str) -> list[str]:
    if isinstance(names, str):
        # A bare string would be read as one name per character.
        raise TypeError(f"{what}= takes a list of names, not one string: use [{names!r}]")
    return list(names)


def _steps(
    step_min: int | None, step_max: int | None, latest: int | None, downsample: int | None
) -> dict[str, int]:
    given = {
        "step_min": step_min,
        "step_max": step_max,
        "latest": latest,
        "downsample": downsample,
    }
    return {k: int(v) for k, v in given.items() if v is not None}


def _error_of(status: int, body: bytes, encoding: str) -> BoarddError:
    """The server's error envelope as an exception (a stand-in if the body is not one)."""
    try:
        if encoding == "gzip":
            body = gzip.decompress(body)
        error = json.loads(body)["error"]
        return BoarddError(status, str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError, OSError):
        text = body[:200].decode("utf-8", "replace")
        return BoarddError(status, "http_error", f"unexpected answer: {text!r}")


def _floats(values: Sequence[float | str]) -> npt.NDArray[np.float64]:
    return np.array([_NON_FINITE[v] if isinstance(v, str) else v for v in values], dtype=np.float64)


def _concat(arrays: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
    return np.concatenate(arrays) if arrays else np.array([], dtype=dtype)


def _tensor(datum: Mapping[str, Any]) -> TensorDatum:
    dtype = str(datum["dtype"])
    shape = tuple(int(d) for d in datum["shape"])
    return TensorDatum(
        int(datum["step"]), float(datum["wall_time"]), dtype, shape, _values(datum["values"], dtype)
    )


def _values(values: Any, dtype: str) -> npt.NDArray[Any]:
    """The server's JSON tensor values as a numpy array of their dtype."""
    if isinstance(values, dict) and "error" in values:
        raise BoarddError(0, "undecodable", f"the server could not decode a tensor: {values}")
    if dtype == "DT_STRING":
        flat = np.empty(_count(values), dtype=object)
        flat[:] = [_text(v) for v in _flatten(values)]
        return flat.reshape(_shape_of(values))
    numpy_dtype = _NUMPY_DTYPES.get(dtype)
    if numpy_dtype is None:
        return np.array(values, dtype=object)
    if dtype.startswith("DT_COMPLEX"):
        pairs = np.array(_unspell(values), dtype=np.float64)
        return (pairs[..., 0] + 1j * pairs[..., 1]).astype(numpy_dtype)
    return np.array(_unspell(values), dtype=numpy_dtype)


def _unspell(values: Any) -> Any:
    """Nested lists with TensorBoard's non-finite spellings turned back into floats."""
    if isinstance(values, list):
        return [_unspell(v) for v in values]
    if isinstance(values, str):
        return _NON_FINITE[values]
    return values


def _text(value: Any) -> str | bytes:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return str(value)


def _flatten(values: Any) -> list[Any]:
    if isinstance(values, list):
        return [leaf for v in values for leaf in _flatten(v)]
    return [values]


def _count(values: Any) -> int:
    return len(_flatten(values))


def _shape_of(values: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(values, list):
        shape.append(len(values))
        if not values:
            break
        values = values[0]
    return tuple(shape)
