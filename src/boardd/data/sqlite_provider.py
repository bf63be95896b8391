"""The data provider of one SQLite store file (:class:`boardd.data.provider.DataProvider`).

It owns the store's read connections (one per worker thread: :class:`ReadPool`), reads whole
scalar series through the column cache its application shares between providers, and keeps
what the plugins keep between requests (:meth:`SqliteProvider.plugin_state`). The plugins
whose logic is SQL (the hparams sessions) read through :meth:`SqliteProvider.connection`.
Every read runs on the calling thread's connection; SQLite's word for a damaged file becomes
:class:`Unavailable` (503) and the store's writer is told (:func:`damaged_read`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import apsw

from boardd.data import changes, columns, experiments
from boardd.data import series as data_series
from boardd.data.accel import NumpySwitch
from boardd.data.blobs import BlobStream, last_blob, open_blob
from boardd.data.connections import ReadPool, damaged_read
from boardd.data.kinds import Kind
from boardd.data.series import (
    BlobSequenceSeries,
    Bounds,
    ScalarColumns,
    Selection,
    SeriesInfo,
    TensorDatum,
    TensorSeries,
)
from boardd.reader.decoded import DataClass
from boardd.store.integrity import DAMAGED
from boardd.store.sampling import capacity_for

if TYPE_CHECKING:
    from boardd.data.arrays import ArrayPoint

__all__ = ["SqliteProvider"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def _reading(method: Callable[P, T]) -> Callable[P, T]:
    """A read whose SQLite corruption error becomes :class:`Unavailable`."""

    @functools.wraps(method)
    def read(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except DAMAGED as exc:
            provider = args[0]
            assert isinstance(provider, SqliteProvider)
            raise damaged_read(provider.db, exc) from exc

    return read


class SqliteProvider:
    """The experiment stored in the SQLite file ``db``. ``column_cache``: the whole scalar
    series read, shared with the application's other providers (None: none kept). ``numpy``:
    whether the scalar kernels may use numpy yet (None: they import it when they need it)."""

    def __init__(
        self,
        db: Path,
        column_cache: columns.ColumnCache | None = None,
        numpy: NumpySwitch | None = None,
        sampling: Mapping[str, int | None] | None = None,
    ) -> None:
        self.db = db
        #: ``--samples-per-plugin``: a series the store keeps more of is read as the sample a
        #: store built with it would hold (see SeriesInfo.sample).
        self.sampling = dict(sampling or {})
        self.column_cache = column_cache
        self.numpy = numpy
        self._pool = ReadPool(db)
        self._lock = threading.Lock()
        self._plugins: dict[str, Any] = {}

    # -- the store ----------------------------------------------------------------------------

    @property
    def swaps(self) -> int:
        return self._pool.swaps

    @property
    def stores(self) -> Collection[str]:
        return self._pool.stores

    def file_identity(self) -> tuple[int, int] | None:
        return self._pool.file_identity()

    def refuse_if_damaged(self) -> None:
        self._pool.refuse_if_damaged()

    def connection(self) -> apsw.Connection:
        """This thread's read connection (for the SQLite-specific code of ``boardd.data``;
        the API never sees it)."""
        return self._pool.connection()

    def close(self) -> None:
        self._pool.close()
        with self._lock:
            self._plugins.clear()

    # -- the experiment -----------------------------------------------------------------------

    @_reading
    def experiment(self) -> experiments.ExperimentRow | None:
        return experiments.experiment(self.connection())

    @_reading
    def experiment_id(self, name: str) -> int:
        return experiments.experiment_id(self.connection(), name)

    @_reading
    def store_id(self) -> str:
        return experiments.store_id(self.connection())

    @_reading
    def generation(self) -> int:
        return experiments.generation(self.connection())

    @_reading
    def runs(self, experiment_id: int) -> list[experiments.RunRow]:
        return experiments.runs(self.connection(), experiment_id)

    @_reading
    def plugins(self, experiment_id: int) -> dict[str, list[str]]:
        return experiments.plugins(self.connection(), experiment_id)

    @_reading
    def data_loss_count(self) -> int:
        return experiments.data_loss_count(self.connection())

    @_reading
    def data_loss(
        self, experiment_id: int, runs: tuple[str, ...] = ()
    ) -> list[experiments.DataLossRecord]:
        return experiments.data_loss(self.connection(), experiment_id, runs)

    @_reading
    def changes_since(self, experiment: str, since: int) -> changes.Changes:
        return changes.changes_since(self.connection(), experiment, since)

    # -- series -------------------------------------------------------------------------------

    @_reading
    def list_series(self, experiment_id: int, kind: Kind, selection: Selection) -> list[SeriesInfo]:
        found = data_series.list_series(self.connection(), experiment_id, kind, selection)
        return [self._sampled(s) for s in found]

    def _sampled(self, series: SeriesInfo) -> SeriesInfo:
        try:
            data_class = DataClass(series.data_class)
        except ValueError:
            return series
        asked = capacity_for(series.plugin_name, data_class, self.sampling)
        if asked is None or (series.capacity is not None and asked >= series.capacity):
            return series
        return series._replace(sample=asked)

    @_reading
    def check_size(self, kind: Kind, series: Sequence[SeriesInfo], bounds: Bounds) -> None:
        data_series.check_size(self.connection(), kind, series, bounds)

    @_reading
    def read_scalars(
        self, series: Sequence[SeriesInfo], bounds: Bounds, *, keep: bool = True
    ) -> list[ScalarColumns]:
        return data_series.read_scalars(
            self.connection(), series, bounds, cache=self.column_cache, keep=keep, numpy=self.numpy
        )

    @_reading
    def read_tensors(self, series: Sequence[SeriesInfo], bounds: Bounds) -> list[TensorSeries]:
        return data_series.read_tensors(self.connection(), series, bounds)

    def tensor_points(self, series: SeriesInfo, bounds: Bounds) -> Iterator[TensorDatum]:
        points = self._tensor_points(series, bounds)
        while True:
            try:
                yield next(points)
            except StopIteration:
                return
            except DAMAGED as exc:
                raise damaged_read(self.db, exc) from exc

    @_reading
    def _tensor_points(self, series: SeriesInfo, bounds: Bounds) -> Iterator[TensorDatum]:
        return data_series.tensor_points(self.connection(), series, bounds)

    @_reading
    def read_arrays(self, series: SeriesInfo, downsample: int | None = None) -> list[ArrayPoint]:
        from boardd.data.arrays import read_arrays  # numpy: not on the start path

        return read_arrays(self.connection(), series, downsample)

    @_reading
    def read_blob_sequences(
        self, experiment: str, series: Sequence[SeriesInfo], bounds: Bounds
    ) -> list[BlobSequenceSeries]:
        return data_series.read_blob_sequences(self.connection(), experiment, series, bounds)

    @_reading
    def last_blob(self, series: SeriesInfo) -> bytes | None:
        return last_blob(self.connection(), series)

    def open_blob(self, key: str) -> BlobStream:
        """Opens the blob on a connection of its own: a long read of a blob must not pin the
        snapshot of the pool's connections."""
        return open_blob(self.db, key, self._pool.stores)

    # -- what plugins keep --------------------------------------------------------------------

    def plugin_state(self, name: str, make: Callable[[], T]) -> T:
        with self._lock:
            found = self._plugins.get(name)
            if found is None:
                found = self._plugins[name] = make()
            return found

    # -- the daemon's warm-up -----------------------------------------------------------------

    def preload_columns(self, stop: threading.Event | None = None) -> None:
        """The scalar series into the column cache, as far as it has room, so that the first
        charts after a start do not read the store's rows (on a connection of its own)."""
        if self.column_cache is not None:
            columns.preload_store(self.column_cache, self.db, stop)
