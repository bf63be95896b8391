"""The ``hparams`` table: filled by the writer in the commit that ingests an hparams summary,
right after a restart and a ``--rebuild``, and backfilled by the migration that adds it; and
the hparams engine's in-memory state, brought up to date commit by commit, answering as one
read from scratch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from boardd.data import experiments
from boardd.data.connections import open_store
from boardd.data.sqlite_provider import SqliteProvider
from boardd.plugins.hparams import data as H
from boardd.proto import hparams_api_pb2 as api
from boardd.store.connection import open_reader, open_writer
from boardd.store.schema import migrate
from tests.conftest import LiveStore, ingest
from tests.hparams_logdirs import (
    WALL,
    RunWriter,
    session_end_pb,
    start_pb,
    write_rules,
    write_rules_tensorboardx,
)


def table(db: Path) -> dict[tuple[str, str], Any]:
    """(run, kind) → decoded row, as the store has them."""
    connection = open_reader(db)
    try:
        return {
            (str(run), str(kind)): json.loads(str(data))
            for run, kind, data in connection.execute(
                "SELECT r.name, h.kind, h.data FROM hparams h JOIN runs r ON r.id = h.run_id"
            )
        }
    finally:
        connection.close()


def test_ingest_files_each_summary_once(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    ingest(write_rules(tmp_path), db)
    rows = table(db)
    assert rows[(".", "experiment")]["hparamInfos"][0]["name"] == "lr"
    assert rows[("t0", "session_start")]["hparams"] == {
        "lr": 0.1,
        "opt": "adam",
        "layers": 2.0,
        "dropout": True,
    }
    assert rows[("t0", "session_start")]["groupName"] == "g-a"
    assert rows[("t2", "session_end")] == {"status": 2, "endTimeSecs": WALL + 102}
    assert ("t3", "session_end") not in rows
    assert len(rows) == 1 + 5 + 4


def test_tensorboardx_sub_runs_each_have_their_rows(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    ingest(write_rules_tensorboardx(tmp_path), db)
    kinds = {kind for (run, kind) in table(db) if run == "exp/1700000002.5"}
    assert kinds == {"experiment", "session_start", "session_end"}


def test_restart_and_rebuild_keep_the_table(tmp_path: Path) -> None:
    logdir = write_rules(tmp_path)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    before = table(db)
    # A restart that finds more: a new trial; the known rows stay as they were, once each.
    w = RunWriter(logdir, "t9")
    w.summary(start_pb({"lr": 0.3, "opt": "sgd"}, "g-z"))
    w.close()
    ingest(logdir, db)
    after = table(db)
    assert after == {**before, ("t9", "session_start"): after[("t9", "session_start")]}
    # A rebuild makes the same table from the files.
    ingest(logdir, db, rebuild=True)
    assert table(db) == after


def test_migration_backfills_a_store_from_before_the_table(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    ingest(write_rules(tmp_path), db)
    expected = table(db)
    connection = open_writer(db)
    before_table = 4  # the schema before migration 5 made the table
    with connection:
        connection.execute("DROP TABLE hparams")
        connection.execute("ALTER TABLE files DROP COLUMN version")  # migration 6's
        connection.execute("ALTER TABLE series DROP COLUMN rewritten")  # migration 7's
        connection.pragma("user_version", before_table)
    assert migrate(connection) == before_table
    connection.close()
    assert table(db) == expected


def test_a_run_read_again_from_the_start_has_its_rows_again(tmp_path: Path) -> None:
    live = LiveStore("exp", tmp_path / "logs", tmp_path / "store.sqlite")
    try:
        w = RunWriter(live.logdir, "t0")
        w.summary(start_pb({"lr": 0.1}, "g"))
        w.close()
        live.commit()
        assert table(live.db)[("t0", "session_start")]["hparams"] == {"lr": 0.1}
        # The file is replaced by another (same name, other bytes): the run is read again.
        first = next((live.logdir / "t0").iterdir())
        w = RunWriter(tmp_path / "elsewhere")
        w.summary(start_pb({"lr": 0.2}, "g"))
        w.close()
        next((tmp_path / "elsewhere").iterdir()).replace(first)
        live.commit()
        live.commit()
        assert table(live.db)[("t0", "session_start")]["hparams"] == {"lr": 0.2}
    finally:
        live.close()


# -- the engine's state, commit by commit ------------------------------------------------------

REQUEST = {
    "allowedStatuses": ["STATUS_FAILURE", "STATUS_RUNNING", "STATUS_SUCCESS", "STATUS_UNKNOWN"],
    "colParams": [{"metric": {"group": "", "tag": "acc"}, "order": "ORDER_DESC"}],
    "sliceSize": 100,
}


#: The groups whose encoded JSON the last answers() found kept from the generation before.
KEPT_FRAGMENTS: list[str] = []

#: Whether the last answers() patched the columns of the generation before (one per state).
PATCHED: list[bool] = []

#: The sessions kept across commits, as a store's data provider keeps them.
HELD: list[H.HparamsCache] = []


def _held_states() -> list[Any]:
    return [held._state[1] for held in HELD if held._state is not None]


def answers(db: Path) -> tuple[Any, Any]:
    """(the answer of the state kept across commits, the answer of a state read from scratch)."""
    connection = open_store(db)
    try:
        row = experiments.experiment(connection)
        assert row is not None
        message = H.parse_request(json.dumps(REQUEST), api.ListSessionGroupsRequest)
        source = H.Source(connection, row.id, held=HELD[0])
        kept = (
            H.experiment_json_of([source]),
            H.session_groups_json_of([source], message, now=WALL),
        )
        PATCHED[:] = [bool(state.previous) for state in _held_states()]
        KEPT_FRAGMENTS[:] = [g for state in _held_states() for g, f in state.fragments.items() if f]
        # The encoded answer, with the groups' JSON kept from before where still right.
        encoded = H.session_groups_bytes_of([source], message, now=WALL)
        fresh = (
            H.experiment_json(connection, row.id),
            H.session_groups_json(connection, row.id, message, now=WALL),
        )
        assert encoded == json.dumps(fresh[1], separators=(",", ":")).encode()
        return kept, fresh
    finally:
        connection.close()


def keep_state(db: Path) -> None:
    """Reads once so that the next answers() starts from this generation's state and its
    derived columns (a commit of points only patches them)."""
    connection = open_store(db)
    try:
        row = experiments.experiment(connection)
        assert row is not None
        source = H.Source(connection, row.id, held=HELD[0])
        H.experiment_json_of([source])
        message = H.parse_request(json.dumps(REQUEST), api.ListSessionGroupsRequest)
        H.session_groups_json_of([source], message, now=WALL)
        H.session_groups_bytes_of([source], message, now=WALL)
    finally:
        connection.close()


def groups_of(answer: Any) -> list[tuple[str, list[Any]]]:
    return [
        (g["name"], [m["value"] for m in g["metricValues"]]) for g in answer[1]["sessionGroups"]
    ]


def test_state_kept_across_commits_answers_as_one_read_afresh(tmp_path: Path) -> None:
    live = LiveStore("exp", tmp_path / "logs", tmp_path / "store.sqlite")
    writers: list[RunWriter] = []

    def writer(run: str) -> RunWriter:
        w = RunWriter(live.logdir, run)
        writers.append(w)
        return w

    def step() -> tuple[Any, Any]:
        for w in writers:
            w.flush()
        live.commit()
        kept, fresh = answers(live.db)
        assert kept == fresh
        keep_state(live.db)
        return kept

    try:
        a = writer("a")
        a.summary(start_pb({"lr": 0.1, "opt": "adam"}, "a"))
        a.scalars("acc", {0: 0.5})
        b = writer("b")
        b.summary(start_pb({"lr": 0.2, "opt": "sgd"}, "b"))
        b.scalars("acc", {0: 0.7})
        first = step()
        assert [n for n, _ in groups_of(first)] == ["b", "a"]
        # Values only: a new point (the kept metric column is patched, not recomputed).
        a.scalars("acc", {1: 0.9})
        assert [n for n, _ in groups_of(step())] == ["a", "b"]
        assert PATCHED == [True]
        assert KEPT_FRAGMENTS == ["b"]  # a's JSON is encoded again, b's kept
        b.scalars("acc", {1: 0.95})
        assert [n for n, _ in groups_of(step())] == ["b", "a"]
        assert PATCHED == [True]
        assert KEPT_FRAGMENTS == ["a"]
        # A new session, and a new run under a session (a metric sub-run): new tags.
        c = writer("c")
        c.summary(start_pb({"lr": 0.3, "opt": "rmsprop", "bn": True}, "c"))
        c.scalars("acc", {0: 0.8})
        writer("a/eval").scalars("loss", {0: 0.4})
        third = step()
        assert PATCHED == [False]  # new sessions and runs: computed afresh
        assert KEPT_FRAGMENTS == []
        assert [n for n, _ in groups_of(third)] == ["b", "a", "c"]
        inferred = [m["name"] for m in third[0]["metricInfos"]]
        assert inferred == [{"group": "", "tag": "acc"}, {"group": "eval", "tag": "loss"}]
        assert [h["name"] for h in third[0]["hparamInfos"]] == ["lr", "opt", "bn"]
        # An end: the status changes.
        b.summary(session_end_pb(api.STATUS_FAILURE, WALL + 5), 5)
        fourth = step()
        b_group = next(g for g in fourth[1]["sessionGroups"] if g["name"] == "b")
        assert b_group["sessions"][0]["status"] == "STATUS_FAILURE"
        # A run goes: rebuilt.
        c.close()
        writers.remove(c)
        for path in (live.logdir / "c").iterdir():
            path.unlink()
        (live.logdir / "c").rmdir()
        assert [n for n, _ in groups_of(step())] == ["b", "a"]
    finally:
        for w in writers:
            w.close()
        live.close()


@pytest.fixture(autouse=True)
def _held() -> Any:
    HELD[:] = [H.HparamsCache()]
    yield
    HELD.clear()


def test_preload_reads_a_store_with_hparams_data_only(tmp_path: Path) -> None:
    official = tmp_path / "official.sqlite"
    ingest(write_rules(tmp_path / "a"), official, experiment="a")
    plain = tmp_path / "plain.sqlite"
    (tmp_path / "b" / "run").mkdir(parents=True)
    w = RunWriter(tmp_path / "b", "run")
    w.scalars("acc", {0: 0.5})
    w.close()
    ingest(tmp_path / "b", plain, experiment="b")
    providers = [SqliteProvider(db) for db in (plain, tmp_path / "absent.sqlite", official)]
    try:
        for provider in providers:
            H.preload_provider(provider)
        for provider in providers[:2]:
            held = provider.plugin_state("hparams", H.HparamsCache)
            assert held._state is None  # nothing read: nothing to hold
        held = providers[2].plugin_state("hparams", H.HparamsCache)
        assert held._state is not None
        state = held._state[1]
        assert state.structure is not None and len(state.structure.sessions) == 5
        # The request after it finds the state current: nothing is read again.
        generation = state.generation
        row = providers[2].experiment()
        assert row is not None
        source = H.source_of(providers[2], row.id)
        assert H.experiment_json_of([source])["hparamInfos"]
        assert held._state[1] is state and state.generation == generation
    finally:
        for provider in providers:
            provider.close()
