"""README stays true: every command and flag of the CLI is documented there."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

from boardd.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_command_and_flag_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = []
    for name, sub in _subcommands(build_parser()).items():
        if f"boardd {name}" not in text:
            missing.append(f"boardd {name}")
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:
                continue  # hidden test-only flags
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help" and flag not in text:
                    missing.append(f"boardd {name} {flag}")
    assert missing == [], f"document these in README.md: {missing}"


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in README.read_text(encoding="utf-8")
    assert "test-command" in ci


def test_readme_lists_the_oldest_releases_ci_tests() -> None:
    """README's list of the oldest releases tested is pyproject.toml's lower bounds, as
    tools/oldest_constraints.py reads them for CI's oldest-releases lane."""
    tool = README.parent / "tools" / "oldest_constraints.py"
    spec = importlib.util.spec_from_file_location("oldest_constraints", tool)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pins = module.oldest_pins(README.parent / "pyproject.toml", module.DEFAULT_EXTRAS)
    expected = ", ".join(f"{name} {version}" for name, version, _ in pins)
    found = re.search(
        r"<!-- oldest-releases -->(.*?)<!-- /oldest-releases -->",
        README.read_text(encoding="utf-8"),
        re.DOTALL,
    )
    assert found is not None, "README.md lost its <!-- oldest-releases --> list"
    assert " ".join(found[1].split()) == expected, (
        f"README.md's oldest releases should read: {expected}"
    )
