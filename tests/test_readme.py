"""README stays true and short: its prerequisites are the build's, its test command is what CI
runs, its links resolve, and its comparison with TensorBoard is the latest benchmark results."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from boardd.config import DEFAULT_PORT
from tests.test_docs import docs_gen

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def test_readme_fits_on_a_few_screens() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move reference to docs/"


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    assert re.search(r"<!-- test-command -->\n```sh\n[^\n]+\n```", text), (
        "README.md lost its test command: the line after <!-- test-command --> and a fence"
    )
    assert "test-command" in ci
    assert "mkdocs build --strict" in ci


def test_readme_names_the_versions_the_build_needs() -> None:
    """The Node.js and Python versions README asks for are the ones the build checks."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    engines = json.loads((REPO / "web" / "package.json").read_text(encoding="utf-8"))["engines"]
    node = engines["node"].removeprefix(">=")
    assert f"Node.js {node} or newer and npm" in text
    assert f"(>= {node})" in (REPO / "hatch_build.py").read_text(encoding="utf-8")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    python = project["requires-python"].removeprefix(">=")
    assert f"Python {python} or newer" in text
    assert "git clone" in text and "&& cd boardd" in text


def test_readme_tells_the_default_port_and_where_each_ui_is() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"port {DEFAULT_PORT}" in text
    assert f"http://127.0.0.1:{DEFAULT_PORT}/tensorboard/" in text
    assert "drop-in" not in text


def test_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "README.md links to no page of the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    assert missing == [], f"README.md links to files that do not exist: {missing}"


def test_readme_comparison_is_the_latest_results() -> None:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- comparison -->\n(.*?)<!-- /comparison -->", text, re.S)
    assert found is not None, "README.md lost its <!-- comparison --> block"
    assert found.group(1) == docs_gen().readme_block(), (
        "README's comparison is not the latest results: run python tools/docs_gen.py readme"
    )
