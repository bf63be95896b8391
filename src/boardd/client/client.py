"""The boardd client: one ``httpx.Client`` per :class:`Client` (connections kept alive and
reused, gzip), the data API's answers as numpy, and the live stream with resume."""

from __future__ import annotations

import base64
import importlib
import json
import time
import urllib.parse
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
from google.protobuf import json_format

from boardd import __version__
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
from boardd.client.decode import CutOff, concat, csv_chunks, floats, tensor_datum
from boardd.client.hparams import (
    Columns,
    Filter,
    build_request,
    parse_session_groups,
    session_rows,
)
from boardd.client.sse import Block, SseParser, StreamEvent, event_of
from boardd.proto import hparams_api_pb2

Params = Mapping[str, str | int | Sequence[str] | None]

#: Seconds without a byte (the server pings every 15 s) after which a stream counts as dropped.
STREAM_IDLE_SECONDS = 45.0
#: The longest wait between two reconnection attempts of a stream.
MAX_BACKOFF_SECONDS = 10.0
#: The most points of a chunk of :meth:`Client.iter_scalars` (unless told otherwise).
CHUNK_POINTS = 65_536
#: Bytes of a streamed answer decoded at once.
_PIECE_BYTES = 65_536
#: Answers a stream retries after (the server is restarting or overloaded), not errors.
_RETRY_STATUSES = frozenset({502, 503, 504})


class Client:
    """A client of one boardd server.

    ``experiment`` is sent with every call that takes one (the server's first experiment when
    None); ``token`` is sent as ``Authorization: Bearer`` (for ``boardd serve --token-file``;
    surrounding whitespace is dropped, as the server drops it from the file, so the file's
    content may be given as read); ``timeout`` is in seconds per request.

    The client holds connections open between calls: close it when done (:meth:`close`, or
    ``with Client(url) as c:``). It may be used from several threads at once.
    """

    def __init__(
        self,
        url: str,
        *,
        experiment: str | None = None,
        token: str | None = None,
        timeout: float = 10,
    ) -> None:
        if token is not None:
            if not isinstance(token, str):
                raise TypeError(f"token must be a string, not {type(token).__name__}")
            token = token.strip()
            if not token:
                raise ValueError("token is empty (give the content of the --token-file)")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a number of seconds above 0, not {timeout!r}")
        self.url = url.rstrip("/")
        self.experiment = experiment
        self.timeout = timeout
        headers = {"User-Agent": f"boardd-client/{__version__}", "Accept-Encoding": "gzip"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        # One connection pool for every call of this client: HTTP/1.1 keep-alive, so a script
        # making many calls pays for one TCP connection, not one per call.
        self._http = httpx.Client(
            base_url=self.url + "/", headers=headers, timeout=timeout, follow_redirects=False
        )
        # A client dropped without close() (``Client(url).runs()``) still closes its sockets.
        self._finalizer = weakref.finalize(self, self._http.close)

    def close(self) -> None:
        """Closes the client's connections; safe to call twice. Later calls raise
        RuntimeError."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._http.is_closed

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

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
                404,
                "not_found",
                f"no scalar series for run {run!r}, tag {tag!r} (plugin {plugin}): "
                "list_scalars() lists the runs and tags there are",
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
                    floats(c["value"]),
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
        chunks = self.iter_scalars(
            plugin,
            runs=runs,
            tags=tags,
            downsample=downsample,
            latest=latest,
            step_min=step_min,
            step_max=step_max,
        )
        # The chunks are the only copy of the points until the columns are made, each column
        # from its chunks, which are let go as it is made; the run and tag columns come last,
        # once the chunks are gone. pandas takes the columns as they are (copy=False).
        series: list[tuple[str, str, int]] = []  # (run, tag, points) as they came, in order
        parts: dict[str, list[npt.NDArray[Any]]] = {"step": [], "wall_time": [], "value": []}
        for chunk in chunks:
            if series and series[-1][:2] == (chunk.run, chunk.tag):
                series[-1] = (chunk.run, chunk.tag, series[-1][2] + len(chunk))
            else:
                series.append((chunk.run, chunk.tag, len(chunk)))
            parts["step"].append(chunk.steps)
            parts["wall_time"].append(chunk.wall_times)
            parts["value"].append(chunk.values)
        frame: dict[str, Any] = {}
        for name, dtype in (("step", np.int64), ("wall_time", np.float64), ("value", np.float64)):
            frame[name] = concat(parts[name], dtype)
            parts[name].clear()
        total = sum(n for _, _, n in series)
        # A column of strings in the dtype pandas gives one (``str`` from pandas 3), made
        # directly: pandas' own inference from an object array takes many times its size.
        text = pandas.Series(np.array([""], dtype=object)).dtype
        names: dict[str, Any] = {}
        for name, index in (("run", 0), ("tag", 1)):
            column = np.empty(total, dtype=object)
            start = 0
            for found in series:
                column[start : start + found[2]] = found[index]
                start += found[2]
            made = total and text != np.dtype(object)  # pandas keeps an empty one as object
            names[name] = pandas.array(column, dtype=text) if made else column
            del column
        frame = {**names, **frame}  # the columns' order: run, tag, step, wall_time, value
        return pandas.DataFrame(frame, copy=False)

    def iter_scalars(
        self,
        plugin: str = "scalars",
        *,
        runs: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        downsample: int | None = None,
        latest: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
        chunk_points: int = CHUNK_POINTS,
    ) -> Generator[ScalarChunk, None, None]:
        """Every matching scalar point, streamed: :class:`ScalarChunk` s (run, tag, and numpy
        steps, wall_times, values) of at most ``chunk_points`` points of one series each, in
        the order of :meth:`scalars_frame`'s rows (by run, tag, then step), decoded as the
        answer arrives, so that neither the answer's text nor the whole series is ever held.
        The filters are :meth:`scalars_many`'s.

        Reads ``format=csv``. A selection larger than one answer may carry (the server's 413)
        is read a series at a time, each in step ranges small enough (with ``latest`` or
        ``downsample``, the 413 is raised instead). A dropped connection or an answer cut
        short raises :class:`BoarddError` (``unreachable``, or ``undecodable``) after the
        chunks already yielded, never a shorter series; error answers raise it at the first
        chunk. Stop early by closing the generator (``break`` out of a ``for`` loop over
        it)."""
        if isinstance(chunk_points, bool) or not isinstance(chunk_points, int) or chunk_points < 1:
            raise ValueError(f"chunk_points must be a whole number from 1, not {chunk_points!r}")
        filters = self._filters(plugin, runs, tags)
        bounds = _steps(step_min, step_max, latest, downsample)
        return self._scalar_chunks(filters, bounds, chunk_points)

    def _scalar_chunks(
        self, filters: dict[str, Any], bounds: dict[str, int], chunk_points: int
    ) -> Generator[ScalarChunk, None, None]:
        try:
            yield from self._csv_answer({**filters, **bounds}, chunk_points)
            return
        except _TooLarge as refused:  # raised at the status line, before any chunk
            if "latest" in bounds or "downsample" in bounds:
                raise refused.error from None
        listed = self._json("/api/v1/scalars/list", filters)
        for run, by_tag in listed.items():
            for tag, found in by_tag.items():
                last = found["max_step"]
                if last is None:
                    continue  # no points
                top = last if "step_max" not in bounds else min(last, bounds["step_max"])
                yield from self._series_chunks(
                    {**filters, "run": [run], "tag": [tag]},
                    bounds.get("step_min"),
                    top,
                    chunk_points,
                )

    def _series_chunks(
        self, params: dict[str, Any], low: int | None, high: int, chunk_points: int
    ) -> Generator[ScalarChunk, None, None]:
        """The points of one series from step ``low`` (None: the first) to ``high``, a step
        range at a time: a range the server refuses as too large is read as its two halves."""
        ranges: list[tuple[int | None, int]] = [(low, high)]
        while ranges:
            low, high = ranges.pop()
            if low is not None and low > high:
                continue
            bounds = {"step_max": high} if low is None else {"step_min": low, "step_max": high}
            try:
                yield from self._csv_answer({**params, **bounds}, chunk_points)
            except _TooLarge as refused:
                halves = _halves(low, high)
                if halves is None:
                    raise refused.error from None
                ranges.extend(reversed(halves))

    def _csv_answer(
        self, params: dict[str, Any], chunk_points: int
    ) -> Generator[ScalarChunk, None, None]:
        """The chunks of one ``format=csv`` answer, read as it arrives; :class:`_TooLarge` for
        the server's 413."""
        query = {k: v for k, v in params.items() if v is not None}
        query["format"] = "csv"
        points = 0
        try:
            with self._http.stream("GET", "api/v1/scalars", params=query) as response:
                if response.status_code != 200:
                    error = _error_of(response.status_code, response.read())
                    if error.code == "too_large":
                        raise _TooLarge(error)
                    raise error
                pieces = response.iter_bytes(_PIECE_BYTES)
                for chunk in csv_chunks(pieces, chunk_points):
                    points += len(chunk)
                    yield chunk
        except (httpx.TransportError, CutOff) as exc:
            reason = str(exc) or type(exc).__name__
            raise BoarddError(
                0,
                "unreachable",
                f"the answer from {self.url} broke off after {points} points ({reason}): "
                "its points are incomplete; ask again",
            ) from exc
        except httpx.DecodingError as exc:
            raise BoarddError(0, "undecodable", f"undecodable answer: {exc}") from exc

    def hparams(
        self,
        *,
        experiment: str | None = None,
        sort: str | Sequence[str] | None = None,
        filters: Mapping[str, Filter] | None = None,
        statuses: Iterable[str] | None = None,
    ) -> Any:
        """The experiment's hyperparameter table as a ``pandas.DataFrame``: a row per session
        with the columns ``session_group``, ``session``, each hparam, each metric (its tag, or
        ``group/tag``), ``status`` (``success``, ``failure``, ``running``, ``unknown``),
        ``hparams_run``; a missing value is NaN in a numeric column, else None. Needs pandas.
        A session is named by the run the user named: ``add_hparams`` (tensorboardX, PyTorch)
        writes it in a timestamped sub-run of the writer's run (``lr0.01/1796660406.19``),
        which ``hparams_run`` keeps, while ``session`` is that run (``lr0.01``).

        ``sort``: a column or a list of them, ``-`` before a name for descending (``"-accuracy"``);
        session groups are ordered by it (a group's metric is the average over its sessions),
        missing values last, the sessions of a group together. ``filters``: column → a regular
        expression (partial match, string hparams), ``(min, max)`` (numbers; None for an open
        end) or a list of the values kept. ``statuses``: the statuses kept (default all).
        ``experiment``: this one instead of the client's.
        Asks ``/api/v1/hparams/experiment`` for the columns, then
        ``/api/v1/hparams/session_groups`` (page by page). An unknown column or status raises
        ValueError; the server's errors raise :class:`BoarddError`."""
        try:
            pandas = importlib.import_module("pandas")
        except ImportError as exc:
            raise ImportError(
                "Client.hparams needs pandas, which is not installed: pip install pandas"
            ) from exc
        name = experiment if experiment is not None else self.experiment
        found = hparams_api_pb2.Experiment()
        json_format.Parse(self._post("/api/v1/hparams/experiment", {}, name), found)
        columns = Columns.of(found)
        request = build_request(columns, sort=sort, filters=filters, statuses=statuses)
        groups: list[hparams_api_pb2.SessionGroup] = []
        runs: dict[str, str] = {}
        shown: dict[str, str] = {}
        while True:
            body = json_format.MessageToDict(request)
            text = self._post("/api/v1/hparams/session_groups", body, name)
            answer, page_runs, page_shown = parse_session_groups(text)
            runs.update(page_runs)
            shown.update(page_shown)
            groups.extend(answer.session_groups)
            if not answer.session_groups or len(groups) >= answer.total_size:
                break
            request.start_index = len(groups)
        rows = session_rows(columns, groups, runs, shown)
        return pandas.DataFrame(rows, columns=columns.names)

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
            run: {tag: [tensor_datum(d) for d in data] for tag, data in by_tag.items()}
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
        return self._get("api/v1/blob/" + urllib.parse.quote(key, safe=""), {})

    # -- live updates ----------------------------------------------------------------------

    def stream(
        self,
        experiments: Iterable[str] | None = None,
        *,
        since: str | None = None,
        timeout: float | None = None,
        retries: int = 5,
        backoff: float = 0.5,
        idle_timeout: float = STREAM_IDLE_SECONDS,
    ) -> Generator[StreamEvent, None, None]:
        """The live events of ``GET /api/v1/stream``, as they come (a commit's changes after
        each commit: :class:`~boardd.client.SeriesEvent`, :class:`~boardd.client.RunEvent`,
        :class:`~boardd.client.ResetEvent`).

        ``experiments``: the experiments to follow (default: the client's ``experiment``, or
        every experiment of the server when that is None). ``since``: the ``id`` of an event
        received before (e.g. by an earlier stream): start right after it, missing nothing;
        without it the stream starts now. A dropped connection is reopened with the id of the
        last event yielded, and the stream goes on without losing or repeating an event; after
        ``retries`` failed attempts in a row (waits of ``backoff`` seconds, doubling, at most
        10 s) it raises :class:`BoarddError` (``unreachable``). ``idle_timeout``: seconds
        without a byte (the server pings every 15 s) after which a connection counts as
        dropped. ``timeout``: the generator ends after that many seconds in all (None: never).
        Stop early by closing the generator (``break`` out of a ``for`` loop over it, or
        ``.close()``). Error answers (an unknown experiment, a malformed ``since``) raise
        :class:`BoarddError` at once.
        """
        if retries < 0 or backoff < 0 or idle_timeout <= 0:
            raise ValueError("retries and backoff must be >= 0, idle_timeout > 0")
        if experiments is None:
            names = [] if self.experiment is None else [self.experiment]
        else:
            names = _names(experiments, "experiments")
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._stream(names, since, deadline, retries, backoff, idle_timeout)

    def _stream(
        self,
        names: list[str],
        since: str | None,
        deadline: float | None,
        retries: int,
        backoff: float,
        idle_timeout: float,
    ) -> Generator[StreamEvent, None, None]:
        cursor = since
        # Within a commit every message but the last carries the previous cursor, so resuming
        # from it sends the whole commit again: what was yielded of it is remembered (as
        # event type and data text, which includes the commit's generation) and skipped.
        yielded: set[tuple[str, str]] = set()
        failures = 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            read = idle_timeout if left is None else min(idle_timeout, left)
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            if cursor is not None:
                headers["Last-Event-ID"] = cursor
            problem: Exception
            try:
                with self._http.stream(
                    "GET",
                    "api/v1/stream",
                    params={"experiment": names},
                    headers=headers,
                    timeout=httpx.Timeout(self.timeout, read=read),
                ) as response:
                    if response.status_code != 200:
                        error = _error_of(response.status_code, response.read())
                        if response.status_code not in _RETRY_STATUSES:
                            raise error
                        raise _Retry(error)
                    failures = 0
                    parser = SseParser()
                    for line in response.iter_lines():
                        block = parser.feed(line)
                        if block is not None:
                            event = self._event_of(block, cursor)
                            key = None if event is None else (event.event, block.data or "")
                            repeat = key in yielded
                            if block.id is not None and block.id != cursor:
                                cursor = block.id  # a commit ended: none of it comes again
                                yielded.clear()
                            elif key is not None:
                                yielded.add(key)
                            if event is not None and not repeat:
                                yield event
                        if deadline is not None and time.monotonic() >= deadline:
                            return
                # The server ended the stream (it is shutting down): reconnect.
                problem = BoarddError(0, "unreachable", "the server ended the stream")
            except _Retry as retry:
                problem = retry.error
                failures += 1
            except httpx.TransportError as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    return
                problem = self._unreachable(exc)
                failures += 1
            if failures > retries:
                raise problem
            pause = backoff * 2 ** max(0, failures - 1) if failures else backoff
            pause = min(pause, MAX_BACKOFF_SECONDS)
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)

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

    def _post(self, path: str, body: Mapping[str, Any], experiment: str | None) -> bytes:
        """POSTs ``body`` as JSON (for ``experiment``: None, the server's first); the answer's
        bytes."""
        params = {} if experiment is None else {"experiment": experiment}
        return self._send(
            lambda: self._http.post(path.lstrip("/"), params=params, content=json.dumps(body))
        )

    def _json(self, path: str, params: Params | None = None) -> Any:
        return json.loads(self._get(path, params or {}))

    def _get(self, path: str, params: Params) -> bytes:
        query = {k: v for k, v in params.items() if v is not None}
        # httpx undoes the gzip the server applied (it sends Accept-Encoding for it).
        return self._send(lambda: self._http.get(path.lstrip("/"), params=query))

    def _send(self, call: Callable[[], httpx.Response]) -> bytes:
        """The answer's bytes of one request; a BoarddError unless it is a 200."""
        try:
            response = call()
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        except httpx.DecodingError as exc:
            raise BoarddError(0, "http_error", f"undecodable answer: {exc}") from exc
        if response.status_code != 200:
            raise _error_of(response.status_code, response.content)
        return response.content

    @staticmethod
    def _event_of(block: Block, cursor: str | None) -> StreamEvent | None:
        try:
            return event_of(block, cursor or "")
        except ValueError as exc:
            raise BoarddError(0, "http_error", f"undecodable stream event: {exc}") from exc

    def _unreachable(self, exc: Exception) -> BoarddError:
        reason = str(exc) or type(exc).__name__
        return BoarddError(
            0, "unreachable", f"cannot reach {self.url} ({reason}): is boardd serve running?"
        )


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


def _error_of(status: int, body: bytes) -> BoarddError:
    """The server's error envelope as an exception (a stand-in if the body is not one)."""
    try:
        error = json.loads(body)["error"]
        return BoarddError(status, str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        text = body[:200].decode("utf-8", "replace")
        return BoarddError(status, "http_error", f"unexpected answer: {text!r}")


def _halves(low: int | None, high: int) -> list[tuple[int | None, int]] | None:
    """A step range as two halves (None: from the first step); None for a single step."""
    if low is None:
        if high >= 0:  # steps are rarely negative: those on their own, then 0 up
            return [(None, -1), (0, high)]
        low = -(2**63)
    if low >= high:
        return None
    middle = low + (high - low) // 2
    return [(low, middle), (middle + 1, high)]


class _TooLarge(Exception):
    """The server's 413 for an answer (kept to raise if it cannot be read in parts)."""

    def __init__(self, error: BoarddError) -> None:
        super().__init__(str(error))
        self.error = error


class _Retry(Exception):
    """An answer a stream retries after (kept to raise once the retries run out)."""

    def __init__(self, error: BoarddError) -> None:
        super().__init__(str(error))
        self.error = error
