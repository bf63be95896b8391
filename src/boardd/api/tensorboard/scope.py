"""Which experiments a TensorBoard request addresses (all of them under ``/data``, one under
``/experiment/NAME/data``) and how their runs are named (``NAME/RUN`` when several are
served together), and reading them through their data providers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from starlette.requests import Request

from boardd.api.app_state import AppState, ExperimentHandle, state_of
from boardd.api.errors import ApiError
from boardd.data.errors import Damaged, Unavailable
from boardd.data.experiments import RunRow
from boardd.data.kinds import Kind
from boardd.data.provider import DataProvider
from boardd.data.series import Selection, SeriesInfo

#: The experiment path parameter of ``/experiment/{experiment}/data/...``.
EXPERIMENT_PARAM = "experiment"


#: The experiment id TensorBoard's UI puts in its URLs when its page names none
#: (``/experiment/defaultExperimentId/data/...``): every experiment, as under ``/data``.
DEFAULT_EXPERIMENT_ID = "defaultExperimentId"


class Scope(NamedTuple):
    """The experiments one request addresses, and whether their run names carry the
    experiment's name (several logdirs under ``/data``: ``NAME/RUN``, as ``--logdir_spec``)."""

    handles: tuple[ExperimentHandle, ...]
    prefixed: bool

    def outer(self, handle: ExperimentHandle, run: str) -> str:
        """The run's name as TensorBoard's UI sees it (``os.path.join(NAME, RUN)``, as
        TensorBoard names the runs of a named logdir: the root run of ``a`` is ``a/.``)."""
        return os.path.join(handle.spec.name, run) if self.prefixed else run

    def inner(self, outer: str) -> tuple[ExperimentHandle, str] | None:
        """The experiment and stored run name of an outer run name (None: no such experiment)."""
        if not self.prefixed:
            return (self.handles[0], outer) if self.handles else None
        # The longest experiment name that prefixes it (names may contain "/").
        for handle in sorted(self.handles, key=lambda h: -len(h.spec.name)):
            head = handle.spec.name + "/"
            if outer.startswith(head):
                return handle, outer[len(head) :]
        return None


def scope_of(request: Request) -> Scope:
    """The scope of a request: one experiment under ``/experiment/{name}/``, else all
    (:data:`DEFAULT_EXPERIMENT_ID` too, unless an experiment has that name)."""
    state = state_of(request)
    name = request.path_params.get(EXPERIMENT_PARAM)
    found = _scope(state, name)
    if found is None:
        known = ", ".join(sorted(state.experiments)) or "(none)"
        raise ApiError(404, f"no experiment {name!r}; known: {known}")
    return found


def _scope(state: AppState, name: str | None) -> Scope | None:
    """:func:`scope_of` for an experiment name from the path (None: none named); None for an
    unknown experiment."""
    if name is not None and (name != DEFAULT_EXPERIMENT_ID or name in state.experiments):
        handle = state.experiments.get(name)
        return None if handle is None else Scope((handle,), prefixed=False)
    handles = tuple(state.experiments.values())
    return Scope(handles, prefixed=len(handles) > 1)


class Series(NamedTuple):
    """One time series as a route sees it: its outer run name, the store it is in."""

    run: str
    handle: ExperimentHandle
    info: SeriesInfo


class Reader:
    """Read access to the stores of a scope, from one worker thread (each experiment through
    its data provider)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def experiments(self) -> Iterator[tuple[ExperimentHandle, DataProvider, int]]:
        """Each addressed experiment whose store has data: handle, provider, experiment id.
        A store not yet created or still empty is skipped (TensorBoard shows no runs yet)."""
        for handle in self.scope.handles:
            provider = handle.provider
            try:
                row = provider.experiment()
            except Damaged:
                raise  # met just now: 503, never an answer without this store's runs
            except Unavailable:
                continue
            if row is not None:
                yield handle, provider, row.id

    def runs(self) -> list[tuple[str, RunRow]]:
        """The live runs (outer name, row), experiment by experiment in TensorBoard's order."""
        out: list[tuple[str, RunRow]] = []
        for handle, provider, exp_id in self.experiments():
            out.extend((self.scope.outer(handle, r.name), r) for r in provider.runs(exp_id))
        return out

    def series(
        self,
        kind: Kind,
        plugin: str,
        runs: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
    ) -> list[Series]:
        """The series of ``plugin`` (of this kind), only these outer runs and tags if given."""
        out: list[Series] = []
        for handle, provider, exp_id in self.experiments():
            inner_runs: tuple[str, ...] = ()
            if runs:
                inner_runs = tuple(
                    r for h, r in filter(None, map(self.scope.inner, runs)) if h is handle
                )
                if not inner_runs:
                    continue
            found = provider.list_series(exp_id, kind, Selection(plugin, inner_runs, tags))
            out.extend(Series(self.scope.outer(handle, s.run), handle, s) for s in found)
        return out

    def one(self, kind: Kind, plugin: str, run: str, tag: str) -> Series | None:
        """The series of one outer run and tag, or None."""
        found = self.series(kind, plugin, (run,), (tag,))
        return found[0] if found else None
