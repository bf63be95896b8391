"""Remote logdirs end to end: ``boardd serve s3://bucket/prefix`` (a real subprocess) against a
real S3-compatible server on loopback (moto's, behind our counting proxy), side by side with
the same files on local disk in the same daemon: the API answers the same for both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.config import SettingsError, parse_size, serve_settings
from boardd.exitcodes import ExitCode
from boardd.ingest.remote import parse_storage_options
from boardd.lineage import vocabulary
from boardd.store.location import default_store_path, is_url
from tests.conftest import EventRun
from tests.daemon.conftest import Daemon, ServeFactory, boardd_env, wait_until
from tests.remote.s3server import FAKE_ENV, S3

#: Passes every 0.3 s: the tests wait for answers, not for the default interval.
POLL = ("--poll-interval", "0.3")


def write_logdir(root: Path, runs: tuple[str, ...] = ("train", "eval/a")) -> None:
    """A logdir with scalars, histograms, images and text in nested runs (tensorboardX)."""
    rng = np.random.default_rng(7)
    for i, run in enumerate(runs):
        with SummaryWriter(str(root / run), filename_suffix=f".{i}") as writer:
            for step in range(0, 60, 3):
                writer.add_scalar("loss", 1.0 / (step + 1 + i), step)
                writer.add_scalar("acc/top1", step / 100.0, step)
                if step % 12 == 0:
                    writer.add_histogram("weights", rng.normal(size=200), step)
                    writer.add_image("sample", rng.random((3, 4, 5)), step)
                    writer.add_text("note", f"step {step} of {run}", step)


def serve_remote(serve: ServeFactory, s3: S3, *logdirs: str, extra: tuple[str, ...] = ()) -> Daemon:
    """``boardd serve`` over these logdirs, pointed at the proxy, with fake credentials."""
    options = [a for o in s3.options() for a in ("--storage-option", o)]
    return serve(*logdirs, *options, *POLL, *extra, env=dict(FAKE_ENV))


def answers(daemon: Daemon, experiment: str) -> dict[str, Any]:
    """What the API says of one experiment: runs, series lists, scalar and histogram points,
    image lists, text, data loss (file names relative to the logdir)."""
    out: dict[str, Any] = {"runs": daemon.runs(experiment)}
    for kind, plugin in (
        ("scalars", "scalars"),
        ("tensors", "histograms"),
        ("tensors", "text"),
        ("blob_sequences", "images"),
    ):
        listed = daemon.get(f"{kind}/list", experiment=experiment, plugin=plugin)
        out[f"{kind}/list {plugin}"] = listed
        if kind != "blob_sequences":
            out[f"{kind} {plugin}"] = daemon.get(kind, experiment=experiment, plugin=plugin)
    out["data_loss"] = [
        {k: v for k, v in r.items() if k != "time"}
        for r in daemon.get("data_loss", experiment=experiment)
    ]
    return out


def steps(daemon: Daemon, experiment: str, run: str, tag: str = "loss") -> list[int]:
    """The steps of one scalar series."""
    return [p["step"] for p in daemon.scalars(run, tag, experiment=experiment)]


def test_an_uploaded_logdir_reads_as_the_same_files_on_local_disk(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    local = tmp_path / "logs"
    write_logdir(local)
    s3.upload(local, "exp1")
    daemon = serve_remote(serve, s3, f"remote={s3.url('exp1')}", f"local={local}")
    daemon.wait_for_state("live", "remote")
    daemon.wait_for_state("live", "local")
    daemon.wait_for_steps("train", "loss", range(0, 60, 3), experiment="remote")
    remote, here = answers(daemon, "remote"), answers(daemon, "local")
    assert remote["runs"] == ["eval/a", "train"]
    assert remote["scalars scalars"]["eval/a"]["acc/top1"]
    assert remote == here

    health = daemon.status("remote")
    assert health["logdir"] == s3.url("exp1")
    assert health["watch_mode"] == "polling"
    bill = health["remote_requests"]
    assert bill["listings"] >= 1 and bill["gets"] >= 2 and bill["bytes_fetched"] > 0
    assert daemon.status("local")["remote_requests"] is None

    # A pass with nothing new: one listing request, no GET (counted at the server).
    s3.proxy.reset()
    before = daemon.status("remote")["remote_requests"]["listings"]
    wait_until(
        lambda: daemon.status("remote")["remote_requests"]["listings"] >= before + 3,
        what="three more passes",
    )
    counts = s3.proxy.reset()
    assert counts.lists >= 2
    assert (counts.gets, counts.heads, counts.other) == (0, 0, 0), counts.requests

    # The lineage store records the remote run's event files by their URLs (their records are
    # not counted: that would fetch them twice).
    assert daemon.client is not None
    client = daemon.client

    def remote_files() -> list[dict[str, Any]]:
        response = client.post(
            "/api/v1/metadata/get_artifacts_by_type", json={"type_name": vocabulary.EVENT_FILE}
        )
        assert response.status_code == 200, response.text
        found = response.json()["result"]
        return [a for a in found if a.get("uri", "").startswith(s3.url("exp1") + "/")]

    files = wait_until(lambda: len(remote_files()) == 2 and remote_files(), what="2 artifacts")
    assert {a["state"] for a in files} == {"LIVE"}

    # Credentials are never logged, nor shown by the API.
    daemon.stop()
    log = daemon.stderr()
    assert "Traceback" not in log
    assert "s3://" in log
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_ACCESS_KEY_ID"]):
        assert secret not in log


def _last_whole_record_end(data: bytes) -> int:
    """Where the last complete TFRecord of ``data`` ends (length, its CRC, payload, CRC)."""
    offset = 0
    while offset + 12 <= len(data):
        end = offset + 12 + int.from_bytes(data[offset : offset + 8], "little") + 4
        if end > len(data):
            break
        offset = end
    return offset


def test_a_growing_object_reuploaded_longer_costs_only_its_new_bytes(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    local = tmp_path / "logs" / "run"
    writer = EventRun(local)
    writer.scalars("loss", {s: float(s) for s in range(100)})
    (path,) = local.iterdir()
    key = f"grow/run/{path.name}"
    first = path.read_bytes()
    s3.put(key, first)
    daemon = serve_remote(serve, s3, f"g={s3.url('grow')}")
    daemon.wait_for_steps("run", "loss", range(100), experiment="g")

    # Re-uploaded longer, its last record torn (as a writer mid-flush leaves it): only the
    # complete records are taken; the torn one is read again once complete, never twice.
    writer.scalars("loss", {s: float(s) for s in range(100, 200)})
    second = path.read_bytes()
    s3.put(key, second[:-7])
    daemon.wait_for_steps("run", "loss", range(199), experiment="g")
    s3.proxy.reset()
    writer.scalars("loss", {s: float(s) for s in range(200, 300)})
    writer.close()
    third = path.read_bytes()
    s3.put(key, third)
    daemon.wait_for_steps("run", "loss", range(300), experiment="g")
    counts = s3.proxy.reset()
    # The head and the bytes before the offset (to tell growth from a rewrite), then the new
    # bytes from the offset (the end of the last whole record: the torn one is fetched again):
    # O(new bytes), not the object again.
    offset = _last_whole_record_end(second[:-7])
    new = len(third) - offset
    assert counts.bytes_sent <= new + 2 * 64, (counts.bytes_sent, new, counts.requests)
    assert counts.gets <= 3, counts.requests
    assert daemon.status("g")["data_loss"] == 0


def test_a_replaced_object_is_read_again_and_a_deleted_one_keeps_its_data(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    old = EventRun(tmp_path / "old" / "run", suffix=".x")
    old.scalars("loss", {s: 1.0 for s in range(50)})
    old.close()
    (old_file,) = (tmp_path / "old" / "run").iterdir()
    kept_files = []
    for suffix in (".1", ".2"):
        kept = EventRun(tmp_path / "old" / "other", suffix=suffix)
        kept.scalars(f"loss{suffix}", {s: 2.0 for s in range(10)})
        kept.close()
    kept_files = sorted((tmp_path / "old" / "other").iterdir())
    key = f"rep/run/{old_file.name}"
    s3.put(key, old_file.read_bytes())
    for kept_file in kept_files:
        s3.put(f"rep/other/{kept_file.name}", kept_file.read_bytes())
    daemon = serve_remote(serve, s3, f"r={s3.url('rep')}")
    daemon.wait_for_steps("run", "loss", range(50), experiment="r")

    # Replaced by other content under the same key (shorter: it shrank too).
    new = EventRun(tmp_path / "new" / "run", suffix=".x")
    new.scalars("loss", {s: 5.0 for s in range(0, 20)})
    new.close()
    (new_file,) = (tmp_path / "new" / "run").iterdir()
    s3.put(key, new_file.read_bytes())
    points = daemon.wait_for_steps("run", "loss", range(20), experiment="r")
    assert {p["value"] for p in points} == {5.0}

    # A deleted object: its points stay, the daemon goes on.
    s3.delete(f"rep/other/{kept_files[0].name}")
    before = daemon.status("r")["remote_requests"]["listings"]
    wait_until(
        lambda: daemon.status("r")["remote_requests"]["listings"] >= before + 2,
        what="two more passes",
    )
    assert steps(daemon, "r", "other", "loss.1") == list(range(10))
    assert steps(daemon, "r", "other", "loss.2") == list(range(10))
    assert daemon.status("r")["state"] == "live"
    # Its run's last object deleted: the run is gone, as a local run whose directory is
    # removed (an object store has no empty directories).
    s3.delete(f"rep/other/{kept_files[1].name}")
    wait_until(lambda: daemon.runs("r") == ["run"], what="the run gone")


def test_a_corrupt_range_is_data_loss_as_for_the_same_local_file(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    local = tmp_path / "logs"
    run = EventRun(local / "run")
    run.scalars("loss", {s: float(s) for s in range(200)})
    run.close()
    (path,) = (local / "run").iterdir()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 40] = b"\xff" * 40
    path.write_bytes(bytes(data))
    s3.upload(local, "bad")
    daemon = serve_remote(
        serve,
        s3,
        f"remote={s3.url('bad')}",
        f"local={local}",
        extra=("--remote-block-size", "4KiB"),
    )
    daemon.wait_for_state("live", "remote")
    daemon.wait_for_state("live", "local")
    wait_until(lambda: daemon.status("remote")["data_loss"], what="the data-loss record")
    remote, here = answers(daemon, "remote"), answers(daemon, "local")
    assert remote["data_loss"] and remote["data_loss"][0]["file"] == f"run/{path.name}"
    assert remote == here
    kept = steps(daemon, "remote", "run")
    assert kept[0] == 0 and kept[-1] == 199 and len(kept) < 200


def test_a_server_lost_mid_pass_is_retried_and_nothing_is_lost_or_doubled(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    local = tmp_path / "logs"
    for i in range(3):
        run = EventRun(local / f"run{i}")
        run.scalars("loss", {s: float(s) for s in range(2000)})
        run.close()
    s3.upload(local, "lost")
    # The server goes down after a few GETs of the catch-up (4 KiB a GET: many of them).
    s3.proxy.down_after_gets = 6
    daemon = serve_remote(serve, s3, f"l={s3.url('lost')}", extra=("--remote-block-size", "4KiB"))
    status = daemon.wait_for_state("retrying", "l", timeout=60)
    assert "cannot" in status["error"] and s3.url("lost") in status["error"]
    assert s3.proxy.down
    partial = sum(len(steps(daemon, "l", f"run{i}")) for i in range(3))
    assert partial < 6000

    s3.proxy.start()  # back, on the same port
    for i in range(3):
        daemon.wait_for_steps(f"run{i}", "loss", range(2000), experiment="l", timeout=60)
    wait_until(lambda: daemon.status("l")["state"] == "live", what="live again", timeout=60)
    assert daemon.status("l")["data_loss"] == 0
    daemon.stop()
    log = daemon.stderr()
    assert "ingest paused" in log and "ingest resumed" in log


def test_an_unreachable_server_at_start_keeps_the_daemon_up_until_it_answers(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    local = tmp_path / "logs"
    write_logdir(local, runs=("train",))
    s3.upload(local, "late")
    s3.proxy.stop()
    daemon = serve_remote(serve, s3, f"late={s3.url('late')}")
    status = daemon.wait_for_state("retrying", "late", timeout=60)
    assert status["error"].startswith("SourceUnavailableError") and "cannot list" in status["error"]
    s3.proxy.start()
    daemon.wait_for_steps("train", "loss", range(0, 60, 3), experiment="late", timeout=60)


def test_a_url_logdir_is_checked_without_contacting_anything(tmp_path: Path) -> None:
    unknown = subprocess.run(
        [sys.executable, "-m", "boardd", "serve", "nosuchscheme://bucket/x", "--port", "0"],
        env=boardd_env(STATE_DIRECTORY=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unknown.returncode == ExitCode.BAD_LOGDIR, unknown.stderr
    assert "nosuchscheme://bucket/x: unknown URL scheme" in unknown.stderr

    settings = serve_settings(
        ["s3://bucket/runs/exp1/", f"here={tmp_path}"],
        storage_options=["endpoint_url=http://127.0.0.1:1", "anon=true", "max_concurrency=4"],
        remote_block_size="16MiB",
        environ={"STATE_DIRECTORY": str(tmp_path)},
    )
    remote, here = settings.experiments
    assert (remote.name, remote.logdir, remote.remote) == ("exp1", "s3://bucket/runs/exp1", True)
    assert not here.remote
    assert remote.db == default_store_path(
        "s3://bucket/runs/exp1", {"STATE_DIRECTORY": str(tmp_path)}
    )
    assert remote.db.name.startswith("exp1-")
    assert settings.storage_options == {
        "endpoint_url": "http://127.0.0.1:1",
        "anon": True,
        "max_concurrency": 4,
    }
    assert "endpoint_url" not in repr(settings)
    assert settings.remote_block_size == 16 * 2**20
    assert settings.remote_poll_interval == 5.0 and settings.poll_interval == 1.0


@pytest.mark.parametrize("bad", ["", "8XB", "12", "-1"])
def test_bad_block_sizes_are_refused_with_what_to_give(bad: str) -> None:
    with pytest.raises(SettingsError, match="--remote-block-size"):
        parse_size(bad)


def test_storage_options_and_urls() -> None:
    assert parse_storage_options(["a=1", "b=x=y", "c=False"]) == {"a": 1, "b": "x=y", "c": False}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_storage_options(["novalue"])
    assert is_url("s3://b/p") and is_url("gs://b") and is_url("file:///tmp/x")
    assert not is_url("C://x") and not is_url("/tmp/s3://x") and not is_url("runs")


def test_a_pass_costs_one_list_request_per_1000_objects_and_no_get(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    run = EventRun(tmp_path / "one")
    run.scalars("loss", {0: 1.0})
    run.close()
    (path,) = (tmp_path / "one").iterdir()
    s3.put(f"many/run/{path.name}", path.read_bytes())
    # Beside it, 1,000 other objects (checkpoints, configs): listed, never read.
    for i in range(1000):
        s3.put(f"many/run/ckpt/step-{i:04d}.pt", b"x")
    daemon = serve_remote(serve, s3, f"m={s3.url('many')}")
    daemon.wait_for_steps("run", "loss", [0], experiment="m", timeout=60)
    assert daemon.runs("m") == ["run"]
    s3.proxy.reset()
    before = daemon.status("m")["remote_requests"]["listings"]
    wait_until(
        lambda: daemon.status("m")["remote_requests"]["listings"] >= before + 3,
        what="three more passes",
        timeout=60,
    )
    counts = s3.proxy.reset()
    # 1,001 objects: two pages of list_objects_v2 a pass (1,000 a page: the second one goes
    # on from the first's continuation token), no GET, no HEAD.
    firsts = [r for r in counts.requests if "continuation-token" not in r]
    seconds = [r for r in counts.requests if "continuation-token" in r]
    assert len(firsts) >= 2 and abs(len(firsts) - len(seconds)) <= 1, counts.requests
    assert all("list-type=2" in r and "delimiter=&" in r for r in counts.requests)
    assert (counts.gets, counts.heads, counts.other) == (0, 0, 0)
