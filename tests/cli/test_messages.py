"""What the commands say: one wording per problem, the flags as typed, help that explains."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from boardd.cli import ExitCode, build_parser, main


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


def test_export_names_the_force_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    db, out = tmp_path / "store.sqlite", tmp_path / "copy.sqlite"
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.OK
    out.write_bytes(b"")
    capsys.readouterr()
    assert main(["export", "--db", str(db), "--out", str(out)]) == ExitCode.BAD_STORE
    err = capsys.readouterr().err
    assert "--force" in err and "overwrite=True" not in err, err
    assert main(["export", "--db", str(db), "--out", str(out), "--force"]) == ExitCode.OK


def test_every_command_explains_itself() -> None:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands = action.choices
    for name, parser in commands.items():
        assert parser.description and len(parser.description) > 60, name
        for flag in parser._actions:
            if flag.option_strings and flag.help != argparse.SUPPRESS:
                assert flag.help and flag.help != "as for ingest", (name, flag.dest)
    serve_help = commands["serve"].format_help()
    assert "--rebuild" in serve_help and "exit 5" in " ".join(serve_help.split())
    # Every command's help lists its exit codes (scripts and systemd tell failures apart).
    for name, parser in commands.items():
        text = " ".join(parser.format_help().split())
        assert "Exit codes: 0 " in text, name
    for name, code in (("export", ExitCode.BAD_STORE), ("inspect", ExitCode.BAD_LOGDIR)):
        epilog = commands[name].epilog or ""
        assert f"; {code.value} " in epilog, (name, code)


@pytest.mark.parametrize("prefix", ["/a b", "/a/../b", "/a?x"])
def test_a_bad_path_prefix_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    args = ["serve", str(logdir), "--db", str(tmp_path / "s.sqlite"), "--path-prefix", prefix]
    assert main(args) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"--path-prefix {prefix!r}" in err
    assert "/tensorboard" in err  # an example of what to give


def test_a_bad_flag_gets_its_commands_usage_and_the_flag_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TensorBoard's --reload_interval with a dash: serve's usage, and the flag meant.
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--reload-interval", "5", str(tmp_path)])
    assert exited.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: boardd serve "), err
    assert (
        "boardd serve: error: unrecognized arguments: --reload-interval; did you mean "
        "--reload_interval?"
    ) in err
    # A near miss, and a command of another shape.
    with pytest.raises(SystemExit):
        main(["serve", str(tmp_path), "--rescan-intreval", "5"])
    assert "did you mean --rescan-interval?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["hparams", str(tmp_path), "--csvv"])
    err = capsys.readouterr().err
    assert err.startswith("usage: boardd hparams ") and "did you mean --csv?" in err
    # Nothing like any flag: the command's usage still, and where its flags are listed.
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path), "--out", str(tmp_path / "x"), "--zzz"])
    err = capsys.readouterr().err
    assert err.startswith("usage: boardd export ") and "did you mean" not in err
    assert "(boardd export --help lists its flags)" in err
    # Without a command: the serve command line that was meant.
    assert main(["--reload-interval", "5", str(tmp_path)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"did you mean: boardd serve --reload_interval 5 {tmp_path}" in err
    # A flag of no command: boardd's own usage.
    with pytest.raises(SystemExit):
        main(["--bogus"])
    err = capsys.readouterr().err
    assert err.startswith("usage: boardd [-h]") and "unrecognized arguments: --bogus" in err
