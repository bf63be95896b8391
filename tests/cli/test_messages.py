"""What every command says about a logdir it cannot use: one wording, the same exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardd.cli import ExitCode, main


@pytest.mark.parametrize("command", ["inspect", "ingest", "serve"])
def test_a_missing_logdir_is_worded_once(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    args = [command, str(missing)]
    if command != "inspect":
        args += ["--db", str(tmp_path / "store.sqlite")]
    assert main(args) == ExitCode.BAD_LOGDIR
    assert capsys.readouterr().err == f"boardd {command}: {missing}: does not exist\n"
    assert not (tmp_path / "store.sqlite").exists()


@pytest.mark.parametrize("command", ["ingest", "serve"])
def test_a_file_is_not_a_logdir(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main([command, str(a_file), "--db", str(tmp_path / "s.sqlite")]) == ExitCode.BAD_LOGDIR
    assert capsys.readouterr().err == f"boardd {command}: {a_file}: not a directory\n"


@pytest.mark.parametrize("command", ["ingest", "serve"])
def test_samples_per_plugin_is_named_once(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [command, str(tmp_path), "--db", str(tmp_path / "s.sqlite")]
    assert main([*args, "--samples-per-plugin", "scalars=lots"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"boardd {command}: --samples-per-plugin: 'lots'"), err
    assert err.count("--samples") == 1, err


def test_crc_choices_come_from_the_reader_modes(capsys: pytest.CaptureFixture[str]) -> None:
    from boardd.reader.modes import CrcMode

    with pytest.raises(SystemExit):
        main(["inspect", ".", "--crc", "sometimes"])
    err = capsys.readouterr().err
    assert all(repr(mode.value) in err for mode in CrcMode), err
