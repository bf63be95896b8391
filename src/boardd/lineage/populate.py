"""Keeps boardd's own records in the lineage store in step with what the logdirs hold.

Per experiment: a context ``Experiment``; per run an execution ``TrainingRun`` (state from its
hparams session's end, else from inactivity; its hparams as custom properties) associated with
the experiment; per event file an artifact ``EventFile`` and per checkpoint-like file an
artifact ``Checkpoint``, each an OUTPUT of its run and attributed to the experiment. Records
are found by their external ids (:mod:`boardd.lineage.vocabulary`), never by a logdir store's row
ids, so a rebuilt logdir store maps onto the same records. A file that disappears is marked
DELETED (MLMD has no deletion). Records without boardd's key prefix are never written.

Runs on the lineage service's one writer thread, with the read-write store.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boardd.data.experiments import RunSummary
from boardd.lineage import vocabulary
from boardd.lineage.graph import found
from boardd.lineage.scan import LogdirView
from boardd.metadata import errors
from boardd.metadata.metadata_store import MetadataStore
from boardd.metadata.proto import metadata_store_pb2 as pb
from boardd.reader.errors import ReaderError
from boardd.reader.modes import CrcMode
from boardd.reader.tfrecord import RecordReader
from boardd.store.names import escape, unescape

log = logging.getLogger(__name__)

#: hparams' Status numbers (tensorboard/plugins/hparams/api.proto) → MLMD's execution state.
_SESSION_STATES = {1: pb.Execution.COMPLETE, 2: pb.Execution.FAILED, 3: pb.Execution.RUNNING}
_STATUS_NAMES = {0: "STATUS_UNKNOWN", 1: "STATUS_SUCCESS", 2: "STATUS_FAILURE", 3: "STATUS_RUNNING"}


class Interrupted(Exception):
    """The service is closing: a refresh stops between two writes (what it wrote stays, and
    the next refresh goes on from there)."""


@dataclass(frozen=True, slots=True)
class TypeIds:
    """The ids of boardd's four types in one lineage store."""

    experiment: int
    training_run: int
    event_file: int
    checkpoint: int


def register_types(store: MetadataStore) -> TypeIds:
    """Registers boardd's types (idempotent). A type a user registered first under the same
    name keeps its properties and gains boardd's (``can_add_fields``, ``can_omit_fields``)."""
    ids = {}
    for name in (
        vocabulary.EXPERIMENT,
        vocabulary.TRAINING_RUN,
        vocabulary.EVENT_FILE,
        vocabulary.CHECKPOINT,
    ):
        message = vocabulary.type_message(name, pb)
        put = {
            "context": store.put_context_type,
            "execution": store.put_execution_type,
            "artifact": store.put_artifact_type,
        }[vocabulary.KINDS[name]]
        ids[name] = put(message, can_add_fields=True, can_omit_fields=True)
    return TypeIds(
        ids[vocabulary.EXPERIMENT],
        ids[vocabulary.TRAINING_RUN],
        ids[vocabulary.EVENT_FILE],
        ids[vocabulary.CHECKPOINT],
    )


def _fingerprint(message: Any) -> bytes:
    copy = type(message)()
    copy.CopyFrom(message)
    # What the store fills in itself (ids, times, the type's name) is not what boardd writes.
    for name in ("id", "type", "create_time_since_epoch", "last_update_time_since_epoch"):
        if copy.DESCRIPTOR.fields_by_name.get(name) is not None:
            copy.ClearField(name)
    return bytes(copy.SerializeToString(deterministic=True))


def _set(value: Any, python: object) -> None:
    """Sets an MLMD Value from a Python value (bool before int: bool is an int)."""
    if isinstance(python, bool):
        value.bool_value = python
    elif isinstance(python, int):
        value.int_value = python
    elif isinstance(python, float):
        value.double_value = python
    else:
        value.string_value = str(python)


def _ms(seconds: float | None) -> int | None:
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        return None
    return round(seconds * 1000)


@dataclass(slots=True)
class _Counted:
    """An event file's records counted so far (resumed as it grows)."""

    offset: int
    records: int


class Populator:
    """Brings boardd's records of each experiment up to date; one per lineage service, used
    from its writer thread only."""

    def __init__(
        self,
        store: MetadataStore,
        idle_seconds: float,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store = store
        self._should_stop = should_stop
        self._idle = idle_seconds
        self._types = register_types(store)
        #: external id → (record id, fingerprint of what was last written).
        self._known: dict[str, tuple[int, bytes]] = {}
        #: (execution id, artifact id) OUTPUT events known to exist.
        self._events: set[tuple[int, int]] = set()
        self._loaded: set[str] = set()
        self._counted: dict[str, _Counted] = {}
        self._conflicts: set[str] = set()

    @property
    def type_ids(self) -> TypeIds:
        """The ids of boardd's types."""
        return self._types

    # -- one experiment ----------------------------------------------------------------------

    def refresh(self, view: LogdirView, now: float | None = None) -> int:
        """Writes what changed in ``view`` since the last refresh; returns how many records
        were written."""
        now = time.time() if now is None else now
        context_id = self._context(view)
        if context_id is None:
            return 0
        if view.experiment not in self._loaded:
            self._load(context_id)
            self._loaded.add(view.experiment)
        written = 0
        run_ids: dict[str, int] = {}
        executions = [self._execution(view, name, run, now) for name, run in view.runs.items()]
        new_runs, n = self._put("execution", executions)
        written += n
        if self._should_stop():
            raise Interrupted
        for message in executions:
            known = self._known.get(message.external_id)
            if known is not None:
                run_ids[str(message.properties["run"].string_value)] = known[0]
        artifacts = self._artifacts(view, run_ids)
        new_artifacts, n = self._put("artifact", [a for a, _ in artifacts])
        written += n
        written += self._link(context_id, artifacts, new_runs, new_artifacts, run_ids)
        return written

    def _context(self, view: LogdirView) -> int | None:
        context = pb.Context()
        context.type_id = self._types.experiment
        context.name = view.experiment
        context.external_id = vocabulary.experiment_key(view.experiment)
        context.properties["logdir"].string_value = escape(str(view.logdir))
        _, _ = self._put("context", [context])
        known = self._known.get(context.external_id)
        return None if known is None else known[0]

    def _load(self, context_id: int) -> None:
        """Learns boardd's records of an experiment already in the store (a restart)."""
        store = self._store
        executions = [
            e
            for e in found(store.get_executions_by_context, context_id)
            if vocabulary.is_ours(e.external_id)
        ]
        artifacts = [
            a
            for a in found(store.get_artifacts_by_context, context_id)
            if vocabulary.is_ours(a.external_id)
        ]
        for record in [*executions, *artifacts]:
            self._known[record.external_id] = (record.id, _fingerprint(record))
        for artifact in artifacts:
            if artifact.type_id == self._types.event_file:
                self._counted[artifact.uri] = _Counted(
                    int(artifact.properties["counted_bytes"].int_value),
                    int(artifact.properties["records"].int_value),
                )
        if executions:
            for event in found(store.get_events_by_execution_ids, [e.id for e in executions]):
                if event.type == pb.Event.OUTPUT:
                    self._events.add((event.execution_id, event.artifact_id))

    def _execution(self, view: LogdirView, name: str, run: RunSummary, now: float) -> Any:
        execution = pb.Execution()
        execution.type_id = self._types.training_run
        execution.name = f"{view.experiment}/{name}"
        execution.external_id = vocabulary.run_key(view.experiment, name)
        props = execution.properties
        props["experiment"].string_value = view.experiment
        props["run"].string_value = name
        session = run.session_start
        end = run.session_end
        if session is None or end is None:
            inherited = _session_below(view.runs, name)
            if inherited is not None:
                session = session or inherited.session_start
                end = end or inherited.session_end
        status = None if end is None else int(str(end.get("status", 0)))
        state = _SESSION_STATES.get(status) if status is not None else None
        if state is None:
            active = run.last_wall_time is not None and now - run.last_wall_time < self._idle
            state = pb.Execution.RUNNING if active else pb.Execution.COMPLETE
            props["status"].string_value = "active" if active else "inactive"
        else:
            assert status is not None
            props["status"].string_value = _STATUS_NAMES.get(status, str(status))
        execution.last_known_state = state
        # The earliest of the session's start and the run's first event (tensorboardX stamps
        # its session when add_hparams is called, at the end of training).
        starts = [_ms(run.start_time)]
        if session:
            starts.append(_ms(float(str(session["startTimeSecs"]))))
        start = min((t for t in starts if t is not None), default=None)
        if start is not None:
            props["start_time"].int_value = start
        end_ms = _ms(float(str(end["endTimeSecs"]))) if end is not None else None
        if end_ms is None and state != pb.Execution.RUNNING:
            end_ms = _ms(run.last_wall_time)
        if end_ms is not None:
            props["end_time"].int_value = end_ms
        if run.last_step is not None:
            props["last_step"].int_value = run.last_step
        if session is not None:
            hparams = session.get("hparams")
            if isinstance(hparams, dict):
                for key, value in sorted(hparams.items()):
                    _set(execution.custom_properties[str(key)], value)
        return execution

    def _artifacts(self, view: LogdirView, run_ids: dict[str, int]) -> list[tuple[Any, str]]:
        out: list[tuple[Any, str]] = []
        seen: set[str] = set()
        for row in view.event_files:
            remote = not isinstance(view.logdir, Path)
            if remote or os.path.isabs(row.path):
                path = row.path
            else:
                path = os.path.join(escape(str(view.logdir)), row.path)
            artifact = self._file_artifact(view, path, row.run, self._types.event_file)
            # A remote object's records are not counted (that would fetch it a second time).
            counted = _Counted(0, 0) if remote else self._count(path, row.consumed)
            artifact.properties["size"].int_value = row.size
            artifact.properties["records"].int_value = counted.records
            artifact.properties["counted_bytes"].int_value = counted.offset
            out.append((artifact, row.run))
            seen.add(artifact.external_id)
        for ckpt in view.checkpoints:
            artifact = self._file_artifact(view, ckpt.path, ckpt.run, self._types.checkpoint)
            artifact.properties["size"].int_value = ckpt.size
            artifact.properties["mtime"].int_value = _ms(ckpt.mtime) or 0
            out.append((artifact, ckpt.run))
            seen.add(artifact.external_id)
        out.extend(self._vanished(view, seen))
        return out

    def _file_artifact(self, view: LogdirView, path: str, run: str, type_id: int) -> Any:
        artifact = pb.Artifact()
        artifact.type_id = type_id
        artifact.uri = path
        artifact.external_id = vocabulary.file_key(path)
        if isinstance(view.logdir, Path):
            try:
                relative = os.path.relpath(path, escape(str(view.logdir)))
            except ValueError:
                relative = path
            live = os.path.exists(unescape(path))
        else:  # a remote logdir: its listing (the logdir store) says which objects exist
            base = view.logdir.rstrip("/") + "/"
            relative = path[len(base) :] if path.startswith(base) else path
            live = True
        artifact.name = f"{view.experiment}/{relative}"
        artifact.state = pb.Artifact.LIVE if live else pb.Artifact.DELETED
        artifact.properties["run"].string_value = run
        return artifact

    def _vanished(self, view: LogdirView, seen: set[str]) -> Iterable[tuple[Any, str]]:
        """boardd's artifacts of this experiment no longer in the view: marked DELETED."""
        # With the separator: /runs must not claim the files of /runs2.
        prefix = vocabulary.file_key(os.path.join(escape(str(view.logdir)), ""))
        gone = [k for k in self._known if k.startswith(prefix) and k not in seen]
        if not gone:
            return []
        out = []
        for artifact in found(self._store.get_artifacts_by_external_ids, gone):
            if artifact.state != pb.Artifact.DELETED:
                updated = pb.Artifact()
                updated.CopyFrom(artifact)
                updated.state = pb.Artifact.DELETED
                for name in ("type", "create_time_since_epoch", "last_update_time_since_epoch"):
                    updated.ClearField(name)
                out.append((updated, artifact.properties["run"].string_value))
        return out

    def _count(self, path: str, consumed: int) -> _Counted:
        """Counts the records of an event file up to what boardd has read of it (``consumed``
        bytes: still in the page cache, and what the store holds), resuming where the last
        count stopped."""
        counted = self._counted.setdefault(path, _Counted(0, 0))
        if consumed < counted.offset:  # replaced or truncated: count again
            counted.offset = counted.records = 0
        if consumed == counted.offset:
            return counted
        try:
            with RecordReader(unescape(path), counted.offset, crc_mode=CrcMode.ON_ERROR) as reader:
                while counted.offset < consumed:
                    if self._should_stop():
                        raise Interrupted
                    batch = reader.read_batch()
                    counted.records += len(batch)
                    if batch.end_offset == counted.offset:
                        break
                    counted.offset = batch.end_offset
        except (OSError, ReaderError) as exc:
            # Unreadable for now (permissions, gone): the ingest reports it; counted later.
            log.debug("lineage: counting %s: %s", path, exc)
        return counted

    # -- writing -------------------------------------------------------------------------------

    def _put(self, kind: str, messages: Sequence[Any]) -> tuple[set[int], int]:
        """Writes the messages that changed since last written (updating by id when the key is
        known); returns the ids of those created, and how many were written."""
        unmet = [
            m
            for m in messages
            if m.external_id not in self._known and m.external_id not in self._conflicts
        ]
        if unmet:
            self._adopt(kind, unmet)
        due = []
        for message in messages:
            if message.external_id in self._conflicts:
                continue
            known = self._known.get(message.external_id)
            fingerprint = _fingerprint(message)
            if known is not None:
                if known[1] == fingerprint:
                    continue
                message.id = known[0]
            due.append((message, fingerprint))
        if not due:
            return set(), 0
        put: Callable[[list[Any]], list[int]] = getattr(self._store, f"put_{kind}s")
        created: set[int] = set()
        try:
            ids = put([m for m, _ in due])
            pairs = list(zip(due, ids, strict=True))
        except errors.AlreadyExistsError:
            # A user's record holds one of these names: write one by one, skipping those.
            pairs = []
            taken = []
            for message, fingerprint in due:
                try:
                    [new_id] = put([message])
                except errors.AlreadyExistsError as exc:
                    self._conflicts.add(message.external_id)
                    taken.append(message.name)
                    # The store's message quotes the whole record: for a debug log only.
                    log.debug("lineage: %s %r not recorded: %s", kind, message.name, exc)
                    continue
                pairs.append(((message, fingerprint), new_id))
            if taken:
                # One line for the batch: a store shared with another writer can conflict on
                # every file of a logdir at once.
                log.warning(
                    "lineage: %d %s name(s) are taken by records this daemon did not write "
                    "(another process or store); not recording them: %s",
                    len(taken),
                    kind,
                    ", ".join(repr(n) for n in taken[:3]) + (", …" if len(taken) > 3 else ""),
                )
        for (message, fingerprint), new_id in pairs:
            if not message.HasField("id"):
                created.add(int(new_id))
            self._known[message.external_id] = (int(new_id), fingerprint)
        return created, len(pairs)

    def _adopt(self, kind: str, messages: list[Any]) -> None:
        """Records of ours the store already has but this populator has not met (written by
        an earlier process): learnt as if written here, so they are updated only if they
        differ."""
        get: Callable[[list[str]], list[Any]] = getattr(self._store, f"get_{kind}s_by_external_ids")
        by_key = {m.external_id: m for m in messages}
        for stored in found(get, list(by_key)):
            message = by_key.get(stored.external_id)
            if message is not None:
                self._known[stored.external_id] = (stored.id, _fingerprint(stored))
                if kind == "artifact" and stored.type_id == self._types.event_file:
                    self._counted.setdefault(
                        stored.uri,
                        _Counted(
                            int(stored.properties["counted_bytes"].int_value),
                            int(stored.properties["records"].int_value),
                        ),
                    )

    def _link(
        self,
        context_id: int,
        artifacts: list[tuple[Any, str]],
        new_runs: set[int],
        new_artifacts: set[int],
        run_ids: dict[str, int],
    ) -> int:
        """OUTPUT events (run → file), attributions and associations of new records."""
        events = []
        attributions = []
        for artifact, run in artifacts:
            known = self._known.get(artifact.external_id)
            run_id = run_ids.get(run)
            if known is None or run_id is None:
                continue
            if (run_id, known[0]) not in self._events:
                event = pb.Event()
                event.artifact_id = known[0]
                event.execution_id = run_id
                event.type = pb.Event.OUTPUT
                events.append(event)
            if known[0] in new_artifacts:
                attribution = pb.Attribution()
                attribution.artifact_id = known[0]
                attribution.context_id = context_id
                attributions.append(attribution)
        associations = []
        for run_id in sorted(new_runs):
            association = pb.Association()
            association.execution_id = run_id
            association.context_id = context_id
            associations.append(association)
        if events:
            self._store.put_events(events)
            self._events.update((e.execution_id, e.artifact_id) for e in events)
        if attributions or associations:
            self._store.put_attributions_and_associations(attributions, associations)
        return len(events) + len(attributions) + len(associations)


def _session_below(runs: dict[str, RunSummary], name: str) -> RunSummary | None:
    """The one hparams session in a run's sub-runs (tensorboardX's ``add_hparams`` writes its
    session into a directory below the run), or None if there is none or several."""
    prefix = "" if name == "." else name + "/"
    found = [r for n, r in runs.items() if n != name and n.startswith(prefix) and r.session_start]
    return found[0] if len(found) == 1 else None
