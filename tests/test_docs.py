"""The documentation site stays true: every command and flag of the CLI is documented, the
generated parts render, every page is on the site, and the benchmark figures it shows are
well-formed results of benchmarks that exist.

The site itself is built by CI (``mkdocs build --strict``: broken links and anchors fail);
these tests need no MkDocs."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from boardd.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def docs_gen() -> ModuleType:
    """tools/docs_gen.py (the documentation's generated parts and MkDocs hook), by path."""
    spec = importlib.util.spec_from_file_location("docs_gen", REPO / "tools" / "docs_gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(name: str) -> str:
    """A page as its author wrote it (generated parts not filled in)."""
    return (DOCS / name).read_text(encoding="utf-8")


def rendered(name: str) -> str:
    """A page as the site shows it: its generated parts filled in, as the hook does."""
    return str(docs_gen().render(page(name)))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _documented_flags() -> list[tuple[str, argparse.Action, str]]:
    """(command, action, flag) of every flag ``--help`` shows (hidden test flags left out)."""
    out = []
    for name, sub in _subcommands().items():
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                out.append((name, action, flag))
    return out


def test_every_command_and_flag_is_in_the_docs() -> None:
    """The Configuration page lists every command, each flag with its help text."""
    assert "<!-- generated: cli -->" in page("configuration.md")
    text = rendered("configuration.md")
    missing = [f"boardd {name}" for name in _subcommands() if f"`boardd {name}`" not in text]
    for name, _, flag in _documented_flags():
        section = text[text.index(f"## `boardd {name}`") :]
        end = section.find("\n## ", 1)
        if f"`{flag}" not in (section if end < 0 else section[:end]):
            missing.append(f"boardd {name} {flag}")
    assert missing == [], f"document these in docs/configuration.md: {missing}"


def test_every_flag_says_what_it_does() -> None:
    """A flag without a help text would be a bare name in the reference."""
    bare = [
        f"boardd {name} {flag}"
        for name, action, flag in _documented_flags()
        if not (action.help or "").strip()
    ]
    assert bare == [], f"give these flags a help text: {bare}"


def test_every_command_is_explained_in_the_pages() -> None:
    """Beyond the reference, each command is explained where a user reads about its job."""
    written = " ".join(page(p.name) for p in DOCS.glob("*.md") if p.name != "configuration.md")
    unexplained = [name for name in _subcommands() if f"boardd {name}" not in written]
    assert unexplained == [], f"explain these commands in docs/: {unexplained}"


def test_every_page_is_on_the_site() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in DOCS.glob("*.md") if f": {p.name}" not in nav]
    assert missing == [], f"add these pages to mkdocs.yml's nav: {missing}"
    listed = re.findall(r":\s+([\w-]+\.md)$", nav, re.M)
    assert [name for name in listed if not (DOCS / name).exists()] == []


def test_every_generated_part_renders() -> None:
    gen = docs_gen()
    used = {
        marker
        for p in DOCS.glob("*.md")
        for marker in re.findall(r"^<!-- generated: ([a-z-]+) -->$", page(p.name), re.M)
    }
    assert used <= set(gen.GENERATORS), used - set(gen.GENERATORS)
    for name in sorted(used):
        assert gen.GENERATORS[name]().strip(), name
    with pytest.raises(ValueError, match="unknown generated part"):
        gen.render("<!-- generated: nope -->")


def test_the_oldest_releases_are_pyprojects_lower_bounds() -> None:
    """The Development page lists the releases CI's oldest lane pins: pyproject.toml's lower
    bounds, as tools/oldest_constraints.py reads them for that lane."""
    assert "<!-- generated: oldest-releases -->" in page("development.md")
    spec = importlib.util.spec_from_file_location(
        "oldest_constraints", REPO / "tools" / "oldest_constraints.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pins = module.oldest_pins(REPO / "pyproject.toml", module.DEFAULT_EXTRAS)
    text = " ".join(rendered("development.md").split())
    assert ", ".join(f"{name} {version}" for name, version, _ in pins) in text


def test_the_test_command_shown_is_readmes() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"<!-- test-command -->\n```sh\n([^\n]+)\n```", readme)
    assert command is not None
    assert command.group(1) in rendered("development.md")


def test_every_benchmark_shown_exists_and_its_results_are_well_formed() -> None:
    gen = docs_gen()
    names = [name for name, _, _ in gen.BENCHMARKS]
    scripts = {command.split()[1] for _, _, command in gen.BENCHMARKS}
    assert [s for s in scripts if not (REPO / s).exists()] == []
    for path in sorted((REPO / "bench" / "results").glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["format"] == 1, path
        assert document["benchmark"] == path.stem and path.stem in names, path
        for key in ("title", "date", "machine", "command", "figures"):
            assert document[key], (path, key)
        for figure in document["figures"]:
            mine, theirs, ratio = figure["boardd"], figure["anchor"], figure["ratio"]
            if mine and theirs:
                expected = mine / theirs if figure["better"] == "higher" else theirs / mine
                assert ratio == pytest.approx(expected, rel=1e-3), (path, figure["name"])
            else:
                assert ratio is None, (path, figure["name"])
            assert figure["met"] is None or figure["target"], (path, figure["name"])


def test_a_benchmark_not_run_says_so() -> None:
    text = docs_gen().performance({})
    assert text.count("Not run yet.") == len(docs_gen().BENCHMARKS)
    assert "| figure |" not in text
