"""What a store backend offers the API: the data provider of one experiment.

The HTTP layer (``boardd.api``) reads an experiment only through this interface, modelled on
TensorBoard's ``DataProvider``: list and read scalars, tensors and blob sequences, open blobs,
plus what boardd serves beside them (runs, plugins, data loss, the live stream's changes). One
provider is made per served experiment by the application, which closes it when it stops; the
provider owns what its reads keep between requests (its connections, its share of the column
cache, and what each plugin keeps: :meth:`DataProvider.plugin_state`).

Every method blocks: call it from a worker thread, never on the event loop. A store that
cannot be read raises :class:`boardd.data.errors.Unavailable` (HTTP 503), never a backend's
own exception type, so that callers catch one family of errors
(:class:`boardd.data.errors.DataError`) whatever the backend.

:class:`boardd.data.sqlite_provider.SqliteProvider` implements it over one SQLite store file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from boardd.data.arrays import ArrayPoint
    from boardd.data.blobs import BlobStream
    from boardd.data.changes import Changes
    from boardd.data.experiments import DataLossRecord, ExperimentRow, RunRow
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

__all__ = ["DataProvider"]

T = TypeVar("T")


class DataProvider(Protocol):
    """Read access to one experiment's store (see the module's docstring)."""

    # -- the store ----------------------------------------------------------------------------

    @property
    def swaps(self) -> int:
        """How many times the store was replaced under this provider (``boardd ingest
        --rebuild`` swaps a new one in): whatever was cached about the old one is stale."""
        ...

    @property
    def stores(self) -> Collection[str]:
        """The identities of every store this provider has read, oldest first (blob keys of
        an earlier one are answered as such)."""
        ...

    def file_identity(self) -> Hashable:
        """What identifies the store now (a different value: it was replaced); None while
        there is none. Cheap: no read of the store."""
        ...

    def refuse_if_damaged(self) -> None:
        """:class:`Unavailable` while the store is known damaged (also asked before an answer
        is taken from a cache: it may have been built from a damaged page)."""
        ...

    def close(self) -> None:
        """Releases what the provider holds; safe to call twice. Reads after it are
        :class:`Unavailable`."""
        ...

    # -- the experiment -----------------------------------------------------------------------

    def experiment(self) -> ExperimentRow | None:
        """The store's experiment, None while it has none yet."""
        ...

    def experiment_id(self, name: str) -> int:
        """The id of the store's experiment (served under ``name``); :class:`Unavailable`
        while there is none."""
        ...

    def store_id(self) -> str:
        """The identity of the store read now ("" if it has none)."""
        ...

    def generation(self) -> int:
        """The generation of the store's last commit (every commit increases it)."""
        ...

    def runs(self, experiment_id: int) -> list[RunRow]:
        """The live runs, in TensorBoard's order (start time, then name)."""
        ...

    def plugins(self, experiment_id: int) -> dict[str, list[str]]:
        """Plugin → the data classes (labels) of its series, for live runs."""
        ...

    def data_loss_count(self) -> int:
        """How many byte ranges of event files could not be read."""
        ...

    def data_loss(self, experiment_id: int, runs: tuple[str, ...] = ()) -> list[DataLossRecord]:
        """Those byte ranges (only these runs', if given), in file then offset order."""
        ...

    def changes_since(self, experiment: str, since: int) -> Changes:
        """Runs and series changed by commits after generation ``since``, each once in its
        state now, with the store's generation: one consistent view (the live stream)."""
        ...

    # -- series -------------------------------------------------------------------------------

    def list_series(self, experiment_id: int, kind: Kind, selection: Selection) -> list[SeriesInfo]:
        """The series of one kind that the selection names; :class:`BadRequest` for a plugin
        the store does not know."""
        ...

    def check_size(self, kind: Kind, series: Sequence[SeriesInfo], bounds: Bounds) -> None:
        """:class:`TooLarge` if reading these series within the bounds gives more points than
        one answer may hold."""
        ...

    def read_scalars(
        self, series: Sequence[SeriesInfo], bounds: Bounds, *, keep: bool = True
    ) -> list[ScalarColumns]:
        """The scalar points of each series within the bounds, by step, as columns.
        ``keep`` False: a read of every series once (a streamed export), which must not evict
        what the charts read again and again from what the provider keeps."""
        ...

    def read_tensors(self, series: Sequence[SeriesInfo], bounds: Bounds) -> list[TensorSeries]:
        """The tensor points of each series within the bounds, decoded, by step."""
        ...

    def tensor_points(self, series: SeriesInfo, bounds: Bounds) -> Iterator[TensorDatum]:
        """One series' tensor points within the bounds, decoded one at a time (a long answer
        never holds them all)."""
        ...

    def read_arrays(self, series: SeriesInfo, downsample: int | None = None) -> list[ArrayPoint]:
        """One tensor series' points as arrays, at most ``downsample`` of them (the plugins'
        own decoding: histograms, PR curves, text, meshes)."""
        ...

    def read_blob_sequences(
        self, experiment: str, series: Sequence[SeriesInfo], bounds: Bounds
    ) -> list[BlobSequenceSeries]:
        """The steps of each blob sequence within the bounds, with the keys of their blobs
        (keys name ``experiment``)."""
        ...

    def last_blob(self, series: SeriesInfo) -> bytes | None:
        """The first blob of a blob sequence's last step (a graph), None if it has none."""
        ...

    def open_blob(self, key: str) -> BlobStream:
        """Opens the blob a key names; :class:`NotFound` for a key of no blob (or of a store
        replaced since)."""
        ...

    # -- what plugins keep --------------------------------------------------------------------

    def plugin_state(self, name: str, make: Callable[[], T]) -> T:
        """What the plugin ``name`` keeps about this store between requests (the hparams
        sessions, the projector's last tensors), made by ``make`` on first use; it goes with
        the provider when it closes."""
        ...
