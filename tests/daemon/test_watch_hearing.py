"""A watcher that proves it hears: what inotify does not announce is found by the safety rescan,
and the experiment then polls, saying why; a filesystem whose inotify cannot hear other writers
(FUSE here, as NFS written from another host) is polled from the start. Also the watches'
own bookkeeping: directories created, moved in and moved out while watched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardd.daemon.watcher import LogdirWatcher, deaf_filesystem, filesystem_of
from tests.daemon.conftest import ServeFactory, wait_until
from tests.daemon.test_serve import SyncWriter

#: ``python -c DEAF python -m boardd serve ...``: boardd's own daemon whose watcher hears
#: nothing. Every change the watches report is dropped at the one place they all go through
#: (LogdirWatcher.deliver), as a kernel or a filesystem that loses events would.
DEAF = """
import runpy, sys
from boardd.daemon.watcher import LogdirWatcher
LogdirWatcher.deliver = lambda self, path, structural: None
sys.argv = ["boardd", *sys.argv[4:]]
runpy.run_module("boardd", run_name="__main__", alter_sys=True)
"""


def test_a_watcher_that_hears_nothing_is_found_out_and_polls(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    train = SyncWriter(logdir / "train")
    train.write("loss", range(2))
    daemon = serve(
        logdir,
        "--db", tmp_path / "s.sqlite",
        "--rescan-interval", "1",
        "--poll-interval", "0.2",
        prefix=(sys.executable, "-c", DEAF),
    )  # fmt: skip
    status = daemon.wait_for_state("live")
    assert status["watch_mode"] == "inotify"
    assert status["watch_misses"] == 0 and status["watch_problem"] is None
    daemon.wait_for_steps("train", "loss", range(2))
    # Nothing announces this write: a safety rescan reads it, then finds no event for it.
    train.write("loss", range(2, 4))
    daemon.wait_for_steps("train", "loss", range(4))
    status = wait_until(
        lambda: (s := daemon.status())["watch_mode"] == "polling" and s,
        what="polling after the miss",
        alive=daemon.check_alive,
    )
    assert status["watch_misses"] >= 1
    assert "no inotify event announced" in status["watch_problem"], status
    assert "train" in status["watch_problem"]
    log = daemon.stderr()
    assert "changed with no inotify event" in log and "polling it as well" in log
    # Polled from now on: the next write is read without any event.
    train.write("loss", range(4, 6))
    daemon.wait_for_steps("train", "loss", range(6))
    train.close()


def test_a_watcher_that_hears_everything_reports_no_miss(
    serve: ServeFactory, tmp_path: Path
) -> None:
    # The other side of the same check: a rescan every 0.3 s while a writer appends all along
    # (new runs too, one of them linked in from outside the logdir, as discovery follows
    # links) finds only changes that events announced, even those written while it ran or
    # just before.
    logdir, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    writers = [SyncWriter(logdir / "a")]
    try:
        writers[0].write("loss", range(1))
        daemon = serve(logdir, "--db", tmp_path / "s.sqlite", "--rescan-interval", "0.3")
        daemon.wait_for_state("live")
        deadline = time.monotonic() + 4.0
        step = 1
        while time.monotonic() < deadline:
            for writer in writers:
                writer.write("loss", range(step, step + 1))
            step += 1
            if step % 10 == 0:
                writers.append(SyncWriter(logdir / f"run{step}"))
                writers[-1].write("loss", range(step))
            if step == 25:
                writers.append(SyncWriter(elsewhere / "linked"))
                writers[-1].write("loss", range(step))
                (logdir / "linked").symlink_to(elsewhere / "linked", target_is_directory=True)
            time.sleep(0.01)
        daemon.wait_for_steps("a", "loss", range(step))
        daemon.wait_for_steps("linked", "loss", range(step))
        time.sleep(1.5)  # past the last rescan's grace
        status = daemon.status()
        assert status["watch_mode"] == "inotify", status
        assert status["watch_misses"] == 0 and status["watch_problem"] is None, status
    finally:
        for writer in writers:
            writer.close()


# -- a filesystem inotify cannot hear through ------------------------------------------------


@pytest.fixture
def fuse_mount(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(source, mount): a bindfs FUSE mount of ``source``. Files written in ``source`` show in
    ``mount`` with no inotify event there, as NFS files written from another host do."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this machine: a FUSE filesystem cannot be mounted")
    bindfs = shutil.which("bindfs")
    assert bindfs is not None, "bindfs is not installed (Debian's bindfs; .ci/run installs it)"
    source, mount = tmp_path / "source", tmp_path / "mount"
    source.mkdir()
    mount.mkdir()
    subprocess.run([bindfs, "--no-allow-other", str(source), str(mount)], check=True)
    try:
        assert filesystem_of(mount) is not None
        yield source, mount
    finally:
        unmount = shutil.which("fusermount3") or shutil.which("fusermount") or "umount"
        subprocess.run([unmount, "-u", str(mount)], check=False)
        if os.path.ismount(mount):
            subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_logdir_on_fuse_is_polled_from_the_start(
    serve: ServeFactory, tmp_path: Path, fuse_mount: tuple[Path, Path]
) -> None:
    source, mount = fuse_mount
    fstype = filesystem_of(mount)
    assert fstype is not None and fstype.startswith("fuse"), fstype
    train = SyncWriter(source / "train")
    train.write("loss", range(2))
    daemon = serve(mount, "--db", tmp_path / "s.sqlite", "--poll-interval", "0.2")
    status = daemon.wait_for_state("live")
    assert status["watch_mode"] == "polling"
    assert fstype in status["watch_problem"] and "other hosts" in status["watch_problem"]
    assert "polling it as well" in daemon.stderr()
    daemon.wait_for_steps("train", "loss", range(2))
    # Written beneath the mount: no event reaches the daemon, polling reads it.
    train.write("loss", range(2, 5))
    daemon.wait_for_steps("train", "loss", range(5))
    evaluation = SyncWriter(source / "eval")
    evaluation.write("acc", range(3))
    daemon.wait_for_steps("eval", "acc", range(3))
    train.close()
    evaluation.close()


def test_the_filesystem_is_read_from_mountinfo() -> None:
    mountinfo = (
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:35 / /mnt/nfs rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2\n"
        "41 40 0:36 / /mnt/nfs/local rw shared:21 - tmpfs tmpfs rw\n"
        "42 22 0:37 / /mnt/with\\040space rw shared:22 - fuse.sshfs host:/ rw\n"
        "43 22 0:38 / /mnt/nfsish rw shared:23 - ext4 /dev/sdb1 rw\n"
    )
    assert filesystem_of(Path("/home/me/logs"), mountinfo) == "ext4"
    assert filesystem_of(Path("/mnt/nfs/logs/run1"), mountinfo) == "nfs4"
    assert filesystem_of(Path("/mnt/nfs"), mountinfo) == "nfs4"
    assert filesystem_of(Path("/mnt/nfs/local/logs"), mountinfo) == "tmpfs"
    assert filesystem_of(Path("/mnt/nfsish/logs"), mountinfo) == "ext4"
    assert filesystem_of(Path("/mnt/with space/logs"), mountinfo) == "fuse.sshfs"
    # A mount over an earlier one at the same point wins.
    over = mountinfo + "44 40 0:39 / /mnt/nfs rw shared:24 - ext4 /dev/sdc1 rw\n"
    assert filesystem_of(Path("/mnt/nfs/logs"), over) == "ext4"
    assert [deaf_filesystem(t) for t in ("ext4", "nfs4", "fuse.sshfs", "fuse", "9p", None)] == [
        False,
        True,
        True,
        True,
        True,
        False,
    ]
    # This machine's own table answers for a real path.
    assert filesystem_of(Path.cwd()) is not None


# -- the watches' bookkeeping -----------------------------------------------------------------


def test_directories_created_moved_in_and_moved_out_are_followed(tmp_path: Path) -> None:
    logdir, outside = tmp_path / "logs", tmp_path / "outside"
    logdir.mkdir()
    outside.mkdir()
    heard: list[tuple[Path, bool]] = []
    lock = threading.Lock()

    def on_change(path: Path, structural: bool) -> None:
        with lock:
            heard.append((path, structural))

    def saw(path: Path) -> bool:
        with lock:
            return any(p == path for p, _ in heard)

    watcher = LogdirWatcher(logdir, on_change)
    assert watcher.start() == "inotify"
    try:
        # A nested directory made at once, then a file in it: watched as soon as it appears.
        deep = logdir / "a" / "b" / "c"
        deep.mkdir(parents=True)
        wait_until(lambda: saw(logdir / "a"), what="the new directory")
        time.sleep(0.1)
        (deep / "events.out.tfevents.1.h").write_bytes(b"x")
        wait_until(lambda: saw(deep / "events.out.tfevents.1.h"), what="a file in a new subtree")
        # A subtree moved in from outside: its directories are watched too.
        (outside / "x" / "y").mkdir(parents=True)
        (outside / "x").rename(logdir / "x")
        wait_until(lambda: saw(logdir / "x"), what="the moved-in directory")
        time.sleep(0.1)
        (logdir / "x" / "y" / "events.out.tfevents.2.h").write_bytes(b"x")
        wait_until(
            lambda: saw(logdir / "x" / "y" / "events.out.tfevents.2.h"), what="moved-in file"
        )
        # A subtree moved out: its writes are no longer the logdir's, and are not reported.
        (logdir / "a").rename(outside / "a")
        wait_until(lambda: saw(logdir / "a") and heard[-1] == (logdir / "a", True), what="move")
        with lock:
            heard.clear()
        (outside / "a" / "b" / "c" / "events.out.tfevents.3.h").write_bytes(b"x")
        (logdir / "events.out.tfevents.4.h").write_bytes(b"x")
        wait_until(lambda: saw(logdir / "events.out.tfevents.4.h"), what="a file at the top")
        with lock:
            assert all("outside" not in str(p) for p, _ in heard), heard
        # Other files than event files are not reported; deleting an event file is structural.
        (logdir / "notes.txt").write_text("x")
        (logdir / "events.out.tfevents.4.h").unlink()
        wait_until(lambda: (logdir / "events.out.tfevents.4.h", True) in heard, what="the deletion")
        with lock:
            assert all(p.name != "notes.txt" for p, _ in heard)
        assert watcher.unwatched == 0 and watcher.problem() is None
    finally:
        watcher.stop()
