"""Object-store layouts that local disk cannot have, and a replacement only an object's version
tells: ``boardd serve s3://...`` (a real subprocess) against a real S3-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

from tensorboardX import SummaryWriter

from tests.conftest import EventRun
from tests.daemon.conftest import ServeFactory, wait_until
from tests.remote.s3server import S3
from tests.remote.test_remote import serve_remote, steps


def _event_file(directory: Path, value: float, steps_: range = range(20)) -> bytes:
    run = EventRun(directory, suffix=".same")
    run.scalars("loss", dict.fromkeys(steps_, value))
    run.close()
    (path,) = directory.iterdir()
    return path.read_bytes()


def test_an_object_replaced_by_one_of_the_same_size_is_read_again(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    """Same key, same size, other bytes (a run written again and synced): its new ETag says
    "look", and its first bytes tell it is another file; also across a restart."""
    first = _event_file(tmp_path / "a", 1.0)
    second = _event_file(tmp_path / "b", 2.0)
    assert len(first) == len(second) and first != second
    key = "same/run/events.out.tfevents.1.host"
    s3.put(key, first)
    daemon = serve_remote(serve, s3, f"s={s3.url('same')}")
    points = daemon.wait_for_steps("run", "loss", range(20), experiment="s")
    assert {p["value"] for p in points} == {1.0}

    s3.put(key, second)
    wait_until(
        lambda: {p["value"] for p in daemon.scalars("run", "loss", experiment="s")} == {2.0},
        what="the new values",
    )
    # Re-uploaded as it is (a new version, the same bytes): looked at, nothing read again.
    s3.put(key, second)
    before = daemon.status("s")["remote_requests"]["listings"]
    wait_until(
        lambda: daemon.status("s")["remote_requests"]["listings"] >= before + 2,
        what="two more passes",
    )
    assert [p["value"] for p in daemon.scalars("run", "loss", experiment="s")] == [2.0] * 20
    daemon.stop()

    # Replaced while no daemon ran: the next start sees the new version.
    s3.put(key, first)
    again = serve_remote(serve, s3, f"s={s3.url('same')}")
    wait_until(
        lambda: {p["value"] for p in again.scalars("run", "loss", experiment="s")} == {1.0},
        what="the values written while stopped",
    )
    assert again.status("s")["data_loss"] == 0


def test_folder_markers_are_directories_not_files(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    """Keys ending in "/" (the S3 console's "Create folder"): a marker named like an event file
    is no run, and a run whose objects are deleted but whose marker stays keeps its data, as
    a local run directory emptied of its files does."""
    for run in ("keep", "run"):
        s3.put(f"mk/{run}/", b"")
        s3.put(f"mk/{run}/events.out.tfevents.1.{run}", _event_file(tmp_path / run, 3.0))
    s3.put("mk/ckpt.tfevents.d/", b"")
    daemon = serve_remote(serve, s3, f"m={s3.url('mk')}")
    daemon.wait_for_steps("run", "loss", range(20), experiment="m")
    daemon.wait_for_steps("keep", "loss", range(20), experiment="m")
    assert daemon.runs("m") == ["keep", "run"]
    assert daemon.get("data_loss", experiment="m") == []

    s3.delete("mk/run/events.out.tfevents.1.run")
    before = daemon.status("m")["remote_requests"]["listings"]
    wait_until(
        lambda: daemon.status("m")["remote_requests"]["listings"] >= before + 2,
        what="two more passes",
    )
    assert daemon.runs("m") == ["keep", "run"]
    assert steps(daemon, "m", "run") == list(range(20))


def test_a_key_with_a_double_slash_is_a_run_and_hparams_answer(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    """``prefix//run/...`` (a writer joining a prefix that ends in "/") is the run "/run",
    whose parent is the top: the hparams routes used to loop for ever looking for its
    session (and held the lock the TensorBoard routes need)."""
    with SummaryWriter(str(tmp_path / "logs" / "run")) as writer:
        for step in range(5):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_hparams({"lr": 0.1}, {"hp/loss": 0.2}, name="trial")
    for path in sorted(p for p in (tmp_path / "logs").rglob("*") if p.is_file()):
        s3.put(f"dbl//{path.relative_to(tmp_path / 'logs').as_posix()}", path.read_bytes())
    daemon = serve_remote(serve, s3, f"d={s3.url('dbl')}")
    daemon.wait_for_steps("/run", "loss", range(5), experiment="d")
    assert daemon.client is not None
    experiment = daemon.client.get(
        "/api/v1/hparams/experiment", params={"request": "{}"}, timeout=20
    )
    assert experiment.status_code == 200, experiment.text
    assert [h["name"] for h in experiment.json()["hparamInfos"]] == ["lr"]
    groups = daemon.client.post(
        "/data/plugin/hparams/session_groups",
        content=json.dumps(
            {
                "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS"],
                "startIndex": 0,
                "sliceSize": 10,
            }
        ),
        headers={"X-XSRF-Protected": "1"},
        timeout=20,
    )
    assert groups.status_code == 200, groups.text
    assert [g["name"] for g in groups.json()["sessionGroups"]] == ["/run/trial"]
    assert daemon.client.get("/data/runs", timeout=20).json() == ["/run", "/run/trial"]


def test_a_prefix_with_no_object_is_said_to_be_empty(
    s3: S3, serve: ServeFactory, tmp_path: Path
) -> None:
    """A typo in the prefix lists as an empty logdir: the daemon says there is nothing there,
    stays up and follows it (the first event file that appears is read)."""
    daemon = serve_remote(serve, s3, f"e={s3.url('no-such-prefix')}")
    daemon.wait_for_state("live", experiment="e")
    wait_until(lambda: "nothing under s3://" in daemon.stderr(), what="the warning")
    s3.put("no-such-prefix/run/events.out.tfevents.1.x", _event_file(tmp_path / "w", 4.0))
    daemon.wait_for_steps("run", "loss", range(20), experiment="e")
