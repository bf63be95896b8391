"""A ``--samples-per-plugin`` that differs from the store's never stops ``boardd serve``: a
smaller sample is read from the store as it is, a larger one is rebuilt in the background; an
unknown plugin name is refused at start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tensorboardX import SummaryWriter
from tensorboardX.proto import summary_pb2, tensor_pb2, types_pb2

from boardd.cli import ExitCode
from boardd.store import fingerprint
from boardd.store.connection import open_reader
from tests.conftest import as_schema_7, ingest, scalar_rows
from tests.daemon.conftest import ServeFactory, boardd_env, wait_until

STEPS = 40


def write_scalars(logdir: Path, steps: int = STEPS) -> None:
    with SummaryWriter(str(logdir / "train")) as w:
        for step in range(steps):
            w.add_scalar("loss", 1.0 / (step + 1), step)


def stored_steps(db: Path, tag: str = "loss") -> list[int]:
    connection = open_reader(db)
    try:
        return [
            step
            for (series_id,) in connection.execute("SELECT id FROM series WHERE tag = ?", (tag,))
            for step, _, _ in scalar_rows(connection, series_id)
        ]
    finally:
        connection.close()


def stored_sampling(db: Path) -> str:
    connection = open_reader(db)
    try:
        found = fingerprint.stored(connection)
    finally:
        connection.close()
    assert found is not None
    return found["sampling"]


def run_boardd(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boardd", *(str(a) for a in args)],
        env=boardd_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_a_smaller_sample_reads_the_store_as_a_store_built_with_it_holds(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    write_scalars(logdir)
    db = tmp_path / "store.sqlite"
    first = serve(logdir, "--db", db)
    first.wait_for_state("live")
    assert len(first.scalars("train", "loss")) == STEPS
    assert first.stop() == 0
    # What a store built with the smaller sample holds: the same steps must be answered.
    small = tmp_path / "small.sqlite"
    ingest(logdir, small, {"scalars": 7})
    expected = stored_steps(small)
    assert len(expected) == 7

    # README's TensorBoard-style command, on a store built by a plain `boardd serve`.
    second = serve("--logdir", logdir, "--db", db, "--samples_per_plugin", "scalars=7")
    second.wait_for_state("live")
    assert [p["step"] for p in second.scalars("train", "loss")] == expected
    tb = second.client.get("/data/plugin/scalars/scalars", params={"run": "train", "tag": "loss"})
    assert tb.status_code == 200, tb.text
    assert [p[1] for p in tb.json()] == expected
    # The store is used as it is: it keeps the larger sample, and its fingerprint says so.
    assert "in the background" not in second.stderr()
    assert second.status()["resampling"] is None
    assert second.stop() == 0
    assert len(stored_steps(db)) == STEPS
    assert stored_sampling(db) == "defaults"


def test_a_larger_sample_is_rebuilt_in_the_background(serve: ServeFactory, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_scalars(logdir)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, {"scalars": 5})
    daemon = serve(logdir, "--db", db, "--samples-per-plugin", "scalars=all,images=20")
    status = daemon.status()
    assert status["state"] in ("rebuilding", "starting", "catching_up", "live"), status
    wait_until(
        lambda: (
            len(daemon.scalars("train", "loss")) == STEPS and daemon.status()["state"] == "live"
        ),
        timeout=30,
        what="the rebuilt store served",
        alive=daemon.check_alive,
    )
    assert daemon.status()["resampling"] is None
    log = daemon.stderr()
    assert log.count("rebuilt in the background") == 1, log
    # Every scalar is the default: the larger sample names only what differs from it.
    assert "images=20" in log and "serving the new store" in log
    assert not Path(f"{db}.rebuild").exists()
    assert daemon.stop() == 0
    assert len(stored_steps(db)) == STEPS
    assert stored_sampling(db) == "images=20"
    # Asked less again: the store keeps the largest sample asked so far.
    again = serve(logdir, "--db", db, "--samples-per-plugin", "scalars=10")
    again.wait_for_state("live")
    assert len(again.scalars("train", "loss")) == 10
    assert "in the background" not in again.stderr()
    assert again.stop() == 0
    assert stored_sampling(db) == "images=20"


def test_an_unknown_plugin_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_scalars(logdir, 3)
    db = tmp_path / "store.sqlite"
    done = run_boardd("serve", logdir, "--db", db, "--samples-per-plugin", "scalar=500")
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "did you mean scalars?" in done.stderr
    assert "histograms" in done.stderr and "images" in done.stderr
    assert not db.exists()
    done = run_boardd("ingest", logdir, "--db", db, "--samples_per_plugin", "imagez=3")
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "did you mean images?" in done.stderr


def test_a_custom_plugin_the_store_holds_may_be_named(serve: ServeFactory, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "train")) as w:
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="my_plugin")
        )
        for step in range(6):
            value = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.0])
            summary = summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag="custom", metadata=metadata, tensor=value)]
            )
            w._get_file_writer().add_summary(summary, step)
    db = tmp_path / "store.sqlite"
    refused = run_boardd("serve", logdir, "--db", db, "--samples-per-plugin", "my_plugin=3")
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert "'my_plugin' is not a plugin" in refused.stderr
    ingest(logdir, db)
    daemon = serve(logdir, "--db", db, "--samples-per-plugin", "my_plugin=3")
    daemon.wait_for_state("live")
    assert daemon.stop() == 0


def test_ingest_refuses_a_larger_sample_naming_the_command(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_scalars(logdir, 10)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, {"scalars": 5})
    smaller = run_boardd("ingest", logdir, "--db", db, "--samples-per-plugin", "scalars=3")
    assert smaller.returncode == ExitCode.OK, smaller.stderr
    assert len(stored_steps(db)) == 5  # the store keeps its larger sample
    larger = run_boardd("ingest", logdir, "--db", db, "--samples-per-plugin", "scalars=8")
    assert larger.returncode == ExitCode.FINGERPRINT_MISMATCH, larger.stderr
    assert f"--rebuild --samples-per-plugin scalars=8 --db {db}" in larger.stderr
    rebuilt = run_boardd(
        "ingest", logdir, "--db", db, "--rebuild", "--samples-per-plugin", "scalars=8", "--json"
    )
    assert rebuilt.returncode == ExitCode.OK, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["points"]["scalar"] == 8


def test_a_store_of_the_older_sampled_default_is_rebuilt_keeping_every_scalar(
    serve: ServeFactory, tmp_path: Path
) -> None:
    """A store an older boardd made with its defaults kept 10,000 scalars a series: the points
    it left out are only in the logdir. Upgraded, `boardd serve` serves it as it is and
    rebuilds it in the background, then every point is served."""
    logdir = tmp_path / "logs"
    write_scalars(logdir, 12_000)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, {"scalars": 10_000})
    as_schema_7(db, "defaults")
    daemon = serve(logdir, "--db", db)
    wait_until(
        lambda: (
            len(daemon.scalars("train", "loss")) == 12_000 and daemon.status()["state"] == "live"
        ),
        timeout=60,
        what="every point served",
        alive=daemon.check_alive,
    )
    log = daemon.stderr()
    assert "keeps fewer points" in log and "scalars=10000" not in stored_sampling(db), log
    assert daemon.stop() == 0
    assert len(stored_steps(db)) == 12_000
    assert stored_sampling(db) == "defaults"
