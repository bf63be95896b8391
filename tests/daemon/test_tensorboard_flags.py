"""TensorBoard's command line on ``boardd serve``: ``tensorboard ARGS`` → ``boardd serve ARGS``.

The real TensorBoard, started with the same flags, is the oracle: the same runs, window title
and points; ``--logdir_spec`` is read as TensorBoard's own parser reads it.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from tensorboard.backend.event_processing.data_ingester import _parse_event_files_spec
from tensorboardX import SummaryWriter

from boardd.cli import ExitCode, main
from boardd.cli.serve import logdir_spec_entries
from boardd.config import SettingsError, parse_experiments
from tests.daemon.conftest import ServeFactory
from tests.tensorboard.conftest import tensorboard

pytestmark = pytest.mark.allow_leaks("TensorBoard subprocess")


def write(logdir: Path) -> None:
    for run in ("a", "b/c"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(30):
                w.add_scalar("loss", 1.0 / (step + 1), step, walltime=1_700_000_000 + step)


def test_tensorboards_command_line_serves_what_tensorboard_serves(
    tmp_path: Path, serve: ServeFactory
) -> None:
    logdir = tmp_path / "logs"
    write(logdir)
    flags = ["--window_title", "My runs", "--samples_per_plugin", "scalars=5000"]
    # The helper gives TensorBoard --load_fast=false and --reload_interval 1 too.
    daemon = serve("--logdir", logdir, *flags, "--load_fast=false", "--reload_interval", "1")
    with tensorboard(logdir, None, {"a", "b/c"}, tmp_path / "tb.log", extra=flags) as tb:
        assert tb.get("/data/window_properties").json() == {"window_title": "My runs"}
        ours = httpx.Client(base_url=f"http://127.0.0.1:{daemon.port}", trust_env=False)
        for path in ("/data/window_properties", "/data/runs"):
            assert ours.get(path).json() == tb.get(path).json(), path
        env_tb, env_ours = tb.get("/data/environment").json(), ours.get("/data/environment").json()
        for key in ("window_title", "data_location"):
            assert env_ours[key] == env_tb[key], key
        query = {"run": "b/c", "tag": "loss"}
        scalars = "/data/plugin/scalars/scalars"
        assert ours.get(scalars, params=query).json() == tb.get(scalars, params=query).json()
        ours.close()
    log = daemon.stderr()
    assert "--load_fast, --reload_interval: TensorBoard's loading flags change nothing" in log


def test_logdir_spec_names_runs_as_tensorboard_does(tmp_path: Path, serve: ServeFactory) -> None:
    """Two named groups: the runs are ``NAME/run`` on both."""
    first, second = tmp_path / "one", tmp_path / "two"
    write(first)
    write(second)
    spec = f"x:{first},y:{second}"
    runs = {"x/a", "x/b/c", "y/a", "y/b/c"}
    daemon = serve("--logdir_spec", spec)
    with tensorboard(spec, None, runs, tmp_path / "tb.log", flag="--logdir_spec") as tb:
        ours = httpx.get(f"http://127.0.0.1:{daemon.port}/data/runs", trust_env=False).json()
        assert ours == tb.get("/data/runs").json()
        assert set(ours) == runs


@pytest.mark.parametrize(
    "spec",
    [
        "a:/x/y,b:/z",
        "/x:y/z",  # a path with a colon: it starts with '/'
        "run:/a:b",  # split at the first colon
        "s3://bucket/prefix",
        "g:s3://bucket/other",
        "rel/lr=0.1",  # a relative path, with '='
        "g:rel/dir,~/abs",
        "grp:~/home-relative",
    ],
)
def test_logdir_spec_is_read_as_tensorboard_reads_it(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path.resolve())
    monkeypatch.setenv("HOME", str(tmp_path.resolve()))
    theirs = _parse_event_files_spec(spec)
    ours = parse_experiments(logdir_spec_entries(spec), None, {"STATE_DIRECTORY": str(tmp_path)})
    assert {str(e.logdir): e.name for e in ours}.keys() == theirs.keys()
    for experiment in ours:
        named = theirs[str(experiment.logdir)]
        if named is not None:  # an unnamed group: boardd names it after its directory
            assert experiment.name == named


@pytest.mark.parametrize("spec", ["a:/x,,b:/y", "a:", "", "a=b:/x"])
def test_a_bad_logdir_spec_is_named(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SettingsError, match="--logdir_spec"):
        logdir_spec_entries(spec)
    assert main(["serve", "--logdir_spec", spec]) == ExitCode.USAGE
    assert capsys.readouterr().err.startswith("boardd serve: --logdir_spec")


def test_tensorboards_flags_before_the_command_are_pointed_after_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--logdir", "runs", "--port", "6006"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "boardd serve --logdir runs --port 6006" in err


def test_logdir_is_a_path_even_with_an_equals_sign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--logdir runs/lr=0.1`` is that directory (a LOGDIR argument would read NAME=PATH)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "lr=0.1").mkdir(parents=True)
    store = tmp_path / "s.sqlite"
    args = ["serve", "--logdir", "runs/lr=0.1", "--db", str(store)]
    # A bad port stops serve after the logdir and the store were accepted.
    assert main([*args, "--port", "70000"]) == ExitCode.USAGE
    assert "--port 70000" in capsys.readouterr().err


def test_no_logdir_at_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve"]) == ExitCode.USAGE
    assert "--logdir PATH" in capsys.readouterr().err


def test_bind_all_needs_a_token_as_a_host_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["serve", "--logdir", str(tmp_path), "--db", str(tmp_path / "s.sqlite")]
    assert main([*args, "--bind_all"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("boardd serve: --bind_all exposes your metrics"), err
    assert "--token-file" in err
    assert main([*args, "--bind_all", "--host", "10.0.0.1"]) == ExitCode.USAGE
    assert "--host or --bind_all, not both" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "s.sqlite")
