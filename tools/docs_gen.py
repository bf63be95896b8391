"""The generated parts of the documentation, and the MkDocs hook that puts them in the pages.

A page asks for a generated part with a marker line, ``<!-- generated: NAME -->``; at build
time (``mkdocs build``, ``mkdocs serve``) :func:`on_page_markdown` replaces it with:

- ``cli``: every command and flag of ``boardd``, from the argparse parsers of ``boardd.cli``;
- ``exit-codes``: the exit codes, from ``boardd.exitcodes``;
- ``test-command``: the contributors' test command, from README.md (which CI reads it from);
- ``oldest-releases``: the releases CI's oldest-releases lane pins, from pyproject.toml;
- ``http-api``: every route, parameter, answer and schema, from boardd's OpenAPI document
  (``boardd.api.openapi.SPEC``, what ``/api/v1/openapi.json`` serves);
- ``performance``: the latest results of every benchmark (``bench/results/*.json``);
- ``comparison``: the few rows of that comparison that README shows.

Nothing is restated by hand, so the pages cannot drift from the code. README.md cannot be
rendered at build time (it is read on GitHub and PyPI as it is): its comparison block, between
``<!-- comparison -->`` and ``<!-- /comparison -->``, is rewritten from the results by
``python tools/docs_gen.py readme``, and tests/test_readme.py fails while it is stale.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
README = REPO / "README.md"

MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
README_BLOCK = re.compile(r"(<!-- comparison -->\n)(.*?)(<!-- /comparison -->)", re.DOTALL)

#: The benchmarks the Performance page shows, in its order: (name, what it measures, the
#: command that runs it with its own defaults). A results file's own title wins.
BENCHMARKS: tuple[tuple[str, str, str], ...] = (
    ("bench_freshness", "Freshness: a flushed point until it is visible over HTTP",
     "python bench/bench_freshness.py"),
    ("bench_tensorboard", "TensorBoard's routes, start-up and UI",
     "python bench/bench_tensorboard.py"),
    ("bench_http", "HTTP: scalar reads, requests/s and latency", "python bench/bench_http.py"),
    ("bench_dashboard", "Dashboard: first paint, write → pixel",
     "python bench/bench_dashboard.py"),
    ("bench_dashboard_big", "Dashboard: 64 charts × 16 runs × 10,000 points",
     "python bench/bench_dashboard.py --big"),
    ("bench_stream", "Live stream: commit → Server-Sent Event", "python bench/bench_stream.py"),
    ("bench_reader", "Reading event files", "python bench/bench_reader.py"),
    ("bench_ingest", "Ingest: cold, restart, memory", "python bench/bench_ingest.py"),
    ("bench_long_series", "One series of ten million scalar points, every point kept",
     "python bench/bench_long_series.py"),
    ("bench_commit", "Ingest: commit and batch sizes", "python bench/bench_commit.py"),
    ("bench_scale", "Many runs: catch-up, restart, idle, append", "python bench/bench_scale.py"),
    ("bench_memory", "Memory under heavy requests", "python bench/bench_memory.py"),
    ("bench_soak", "Memory soak: a live writer and polling clients",
     "python bench/bench_soak.py --minutes 60"),
    ("bench_readers", "Readers never slow the writer: freshness under many readers",
     "python bench/bench_readers.py"),
    ("bench_hparams", "hparams: ListSessionGroups on a large experiment",
     "python bench/bench_hparams.py"),
    ("bench_remote", "Remote logdirs: watching an S3 bucket", "python bench/bench_remote.py"),
    ("bench_lineage", "Lineage store: writes, filter queries, lineage subgraphs",
     "python bench/bench_lineage.py"),
    ("bench_lineage_filter", "Lineage store: get_artifacts with a filter_query",
     "python bench/bench_lineage_filter.py"),
)  # fmt: skip

#: README's comparison with TensorBoard: (what, benchmark, the figure's name starts with).
COMPARISON: tuple[tuple[str, str, str], ...] = (
    (
        "A point flushed to its file, until an HTTP client sees it (p50)",
        "bench_freshness",
        "write → visible over HTTP, p50: boardd serve (inotify)",
    ),
    (
        "Start to the first complete scalars answer (boardd restarting on its store)",
        "bench_tensorboard",
        "start → first complete scalars answer",
    ),
    (
        "TensorBoard's own scalars route, 8 clients, requests/s",
        "bench_tensorboard",
        "TensorBoard's scalars route",
    ),
    (
        "Dashboard against TensorBoard's UI: every chart in view drawn",
        "bench_dashboard",
        "navigation → every chart in view drawn",
    ),
    (
        "Cold ingest with TensorBoard's sampling (against its Rust data server, in memory)",
        "bench_ingest",
        "(a) rustboard's sampling: cold",
    ),
    (
        "Cold ingest keeping every scalar (against its Rust data server with its sampling)",
        "bench_ingest",
        "(b) boardd's defaults: cold",
    ),
    (
        "TensorBoard's scalars route on one series of 10 million points, an answer not cached",
        "bench_long_series",
        "TensorBoard's scalars route",
    ),
    ("Requests to S3 over the same watch of a bucket", "bench_remote", "requests over the"),
)


# -- small Markdown helpers -------------------------------------------------------------------


_CODE_SPAN = re.compile(r"(`+[^`]*`+)")


def _text(text: str) -> str:
    """Plain text (a help string, a description) as Markdown on one line: ``<``, ``>`` and
    ``*`` outside code spans escaped, so ``<token>`` or ``*.localhost`` show as written."""
    parts = _CODE_SPAN.split(" ".join(text.split()))
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")
    return "".join(parts)


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes outside code spans escaped (the table
    extension does not split cells at a pipe inside a code span)."""
    parts = _CODE_SPAN.split(" ".join(text.split()))
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("|", "\\|")
    return "".join(parts)


def _code(text: str) -> str:
    """An inline code span holding ``text`` (backticks inside get a longer fence)."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _anchor(text: str) -> str:
    """A stable HTML id for ``text``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _number(value: float | None, unit: str = "") -> str:
    """A figure as people read it: a few significant digits, thousands separated."""
    if value is None:
        return "–"
    magnitude = abs(value)
    if magnitude >= 100 or value == int(value):
        text = f"{value:,.0f}"
    elif magnitude >= 10:
        text = f"{value:,.1f}"
    elif magnitude >= 1:
        text = f"{value:,.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip() if unit and unit != "×" else text + (unit if unit else "")


def _ratio(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}×" if value >= 100 else f"{value:.1f}×" if value >= 10 else f"{value:.2f}×"


# -- the command line -------------------------------------------------------------------------


def _subcommands(
    parser: argparse.ArgumentParser,
) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each command, in ``boardd --help``'s order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An action's help with argparse's ``%(default)s``-style fields filled in."""
    return parser._get_formatter()._expand_help(action)


def _flag_term(action: argparse.Action) -> str:
    """How a flag is written: every spelling, each with its value (``--db PATH``)."""
    if not action.option_strings:
        metavar = action.metavar or action.dest.upper()
        text = metavar if isinstance(metavar, str) else " ".join(metavar)
        return _code(text + (" ..." if action.nargs in ("*", "+") else ""))
    if action.nargs == 0:
        value = ""
    elif action.choices is not None and action.metavar is None:
        value = " {" + ",".join(str(c) for c in action.choices) + "}"
    else:
        metavar = action.metavar or action.dest.upper()
        value = " " + (metavar if isinstance(metavar, str) else " ".join(metavar))
    return ", ".join(_code(flag + value) for flag in action.option_strings)


def _usage(parser: argparse.ArgumentParser) -> str:
    """A command's usage line, wrapped at a fixed width (not the terminal's)."""
    formatter = argparse.HelpFormatter(parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, "")
    return formatter.format_help().strip()


def documented_actions(
    parser: argparse.ArgumentParser,
) -> list[tuple[str | None, str | None, list[argparse.Action]]]:
    """A command's arguments as its ``--help`` groups them: (title, description, actions),
    leaving out ``--help`` and the flags ``--help`` hides."""
    groups = []
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
        ]
        if actions or group.description:
            groups.append((group.title, group.description, actions))
    return groups


def cli_reference() -> str:
    """Markdown for every command of ``boardd``, each flag with its help and default."""
    from boardd.cli import build_parser

    parser = build_parser()
    out = [
        "The reference below is generated from `boardd`'s own argument parsers, so it lists "
        "exactly what `boardd COMMAND --help` prints.",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    commands = _subcommands(parser)
    for name, summary, _ in commands:
        out.append(f"| [`boardd {name}`](#boardd-{name}) | {_cell(_text(summary))} |")
    out.append("")
    for name, _, sub in commands:
        out += [f"## `boardd {name}` {{#boardd-{name}}}", ""]
        if sub.description:
            out += [_text(sub.description), ""]
        usage = _usage(sub)
        out += ["```text", usage, "```", ""]
        for title, description, actions in documented_actions(sub):
            heading = {"positional arguments": "Arguments", "options": "Options"}.get(
                title or "", title or "Options"
            )
            out += [f"**{heading}**", ""]
            if description:
                out += [_text(description), ""]
            for action in actions:
                out += [_flag_term(action), f":   {_text(_expanded_help(sub, action))}", ""]
        if sub.epilog:
            out += [_text(sub.epilog), ""]
    return "\n".join(out)


def exit_codes() -> str:
    """A table of the exit codes every command shares."""
    from boardd.exitcodes import MEANINGS

    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {code.value} | {_cell(_text(meaning))} |" for code, meaning in MEANINGS.items()]
    return "\n".join(rows)


def oldest_releases() -> str:
    """The oldest releases CI's second lane installs: every runtime dependency at the lower
    bound pyproject.toml states, as tools/oldest_constraints.py reads them."""
    import importlib.util

    path = REPO / "tools" / "oldest_constraints.py"
    spec = importlib.util.spec_from_file_location("oldest_constraints", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pins = module.oldest_pins(REPO / "pyproject.toml", module.DEFAULT_EXTRAS)
    return ", ".join(f"{name} {version}" for name, version, _ in pins)


def test_command() -> str:
    """README's test command (the block after ``<!-- test-command -->``), as a code block."""
    found = re.search(r"<!-- test-command -->\n(```sh\n.*?\n```)", README.read_text("utf-8"), re.S)
    if found is None:
        raise ValueError("README.md has no ```sh block after <!-- test-command -->")
    return found.group(1)


# -- the HTTP API -----------------------------------------------------------------------------


def _schema_type(schema: Mapping[str, Any]) -> str:
    """A schema's type in a few words, linking to named schemas."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#schema-{_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_type(s) for s in schema[key])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kinds = [str(k) for k in kind]
        text = " or ".join(k for k in kinds if k != "null")
        return text + (" or null" if "null" in kinds else "")
    if kind == "array":
        return "array of " + _schema_type(schema.get("items", {}))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "object of " + _schema_type(schema["additionalProperties"])
    return str(kind)


def _schema_notes(schema: Mapping[str, Any]) -> str:
    """Enum values, bounds and default of a schema, as text."""
    notes = []
    if "enum" in schema:
        values = ", ".join(_code(str(v)) for v in schema["enum"])
        notes.append(f"one of {values}" if len(schema["enum"]) <= 12 else f"one of: {values}")
    bounds = [
        (key, schema[key])
        for key in ("minimum", "maximum", "minLength", "maxLength")
        if key in schema and abs(int(schema[key])) < 2**62
    ]
    if bounds:
        notes.append(", ".join(f"{key} {value}" for key, value in bounds))
    if "default" in schema:
        notes.append(f"default {_code(json.dumps(schema['default']))}")
    return "; ".join(notes)


def _properties(schema: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, str, str]]:
    """(dotted name, type, description) of an object schema's properties, nested ones too."""
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        dotted = f"{prefix}{name}"
        notes = [_text(str(prop.get("description", ""))), _schema_notes(prop)]
        if name not in required:
            notes.insert(0, "optional")
        yield dotted, _schema_type(prop), ". ".join(n for n in notes if n)
        nested = prop.get("items", {}) if prop.get("type") == "array" else prop
        if isinstance(nested, dict) and "properties" in nested:
            suffix = "[]." if prop.get("type") == "array" else "."
            yield from _properties(nested, dotted + suffix)


def _resolve(spec: Mapping[str, Any], item: Mapping[str, Any]) -> Mapping[str, Any]:
    """``item`` with a ``$ref`` to the document's components followed."""
    ref = item.get("$ref")
    if not isinstance(ref, str):
        return item
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    result: Mapping[str, Any] = node
    return result


def _parameter_rows(spec: Mapping[str, Any], parameters: Sequence[Any]) -> list[str]:
    rows = ["| parameter | in | type | required | description |", "| --- | --- | --- | --- | --- |"]
    for raw in parameters:
        param = _resolve(spec, raw)
        schema = param.get("schema", {})
        kind = _schema_type(schema)
        if schema.get("type") == "array" and param.get("explode", True):
            kind = _schema_type(schema.get("items", {})) + ", repeatable"
        described = str(param.get("description", ""))
        shown = dict(schema if schema.get("type") != "array" else schema["items"])
        if "default" in described:
            shown.pop("default", None)  # the description says it already
        notes = _schema_notes(shown)
        text = _text(described) + (f" ({notes})" if notes else "")
        rows.append(
            f"| {_code(str(param['name']))} | {param.get('in', '')} | {_cell(kind)} | "
            f"{'yes' if param.get('required') else 'no'} | {_cell(text)} |"
        )
    return rows


def _response_rows(spec: Mapping[str, Any], responses: Mapping[str, Any]) -> list[str]:
    rows = ["| status | answer |", "| --- | --- |"]
    for status, raw in responses.items():
        response = _resolve(spec, raw)
        parts = [_text(str(response.get("description", "")))]
        for media, body in response.get("content", {}).items():
            parts.append(f"{_code(media)}: {_schema_type(body.get('schema', {}))}")
        for header, about in response.get("headers", {}).items():
            parts.append(f"header {_code(header)}: {_text(str(about.get('description', '')))}")
        rows.append(f"| {status} | {_cell('; '.join(p for p in parts if p))} |")
    return rows


def http_reference(spec: Mapping[str, Any] | None = None) -> str:
    """Markdown for every route of boardd's OpenAPI document, then its schemas."""
    if spec is None:
        from boardd.api.openapi import SPEC

        spec = SPEC
    out = [
        f"Generated from the OpenAPI {spec['openapi']} document that `boardd serve` answers "
        "at `/api/v1/openapi.json` (boardd "
        f"{spec['info']['version']}): {_text(str(spec['info']['description']))}",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {}
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            tag = (operation.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append((path, method, operation))
    descriptions = {t["name"]: t.get("description", "") for t in spec.get("tags", [])}
    for tag, operations in by_tag.items():
        out += [f"### {tag}", ""]
        if descriptions.get(tag):
            out += [descriptions[tag][:1].upper() + descriptions[tag][1:] + ".", ""]
        for path, method, operation in operations:
            out += [
                f"#### `{method.upper()} {path}` {{#op-{_anchor(operation['operationId'])}}}",
                "",
                f"**{operation.get('summary', '')}.** "
                + _text(str(operation.get("description", ""))),
                "",
            ]
            if "requestBody" in operation:
                body = operation["requestBody"]
                media = ", ".join(_code(m) for m in body.get("content", {}))
                out += [f"Request body ({'required' if body.get('required') else 'optional'}): "
                        f"{media}.", ""]  # fmt: skip
            if operation.get("parameters"):
                out += [*_parameter_rows(spec, operation["parameters"]), ""]
            out += [*_response_rows(spec, operation.get("responses", {})), ""]
    out += ["### Schemas", ""]
    for name, schema in spec["components"]["schemas"].items():
        out += [f"#### {name} {{#schema-{_anchor(name)}}}", ""]
        if schema.get("description"):
            out += [_text(str(schema["description"])), ""]
        rows = list(_properties(schema))
        if rows:
            out += ["| field | type | description |", "| --- | --- | --- |"]
            out += [f"| {_code(n)} | {_cell(t)} | {_cell(d)} |" for n, t, d in rows]
        else:
            notes = _schema_notes(schema)
            out.append(_schema_type(schema) + (f" ({notes})" if notes else ""))
        out.append("")
    return "\n".join(out)


# -- benchmark results ------------------------------------------------------------------------


def load_results(directory: Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """Every benchmark's latest results, by benchmark name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != 1:
            raise ValueError(f"{path}: unknown results format {document.get('format')!r}")
        found[str(document["benchmark"])] = document
    return found


def _machine(document: Mapping[str, Any]) -> str:
    m = document.get("machine", {})
    load = m.get("load_average") or []
    parts = [
        f"{m.get('cpus')} CPUs ({m.get('cpu_model') or 'model unknown'})",
        f"Python {m.get('python')}",
    ]
    if load:
        parts.append(f"load average {load[0]} at the end")
    return ", ".join(parts)


def _verdict(figure: Mapping[str, Any]) -> str:
    if figure.get("target") is None:
        return ""
    met = figure.get("met")
    word = "met" if met else "**not met**" if met is False else "not judged"
    return f"{figure['target']}: {word}"


def results_table(document: Mapping[str, Any]) -> str:
    """One benchmark's figures: boardd, its anchor, the ratio, the target."""
    has_anchor = any(f.get("anchor") is not None for f in document["figures"])
    head = ["figure", "boardd"] + (["anchor", "ratio"] if has_anchor else []) + ["target"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for figure in document["figures"]:
        unit = str(figure.get("unit", ""))
        cells = [_cell(str(figure["name"])), _number(figure.get("boardd"), unit)]
        if has_anchor:
            cells += [_number(figure.get("anchor"), unit), _ratio(figure.get("ratio"))]
        cells.append(_cell(_verdict(figure)))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def performance(results: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The Performance page's figures: each benchmark's latest run, or "not run yet"."""
    results = load_results() if results is None else results
    out: list[str] = []
    for name, title, command in BENCHMARKS:
        document = results.get(name)
        title = document["title"] if document else title
        out += [f"### {title} {{#{_anchor(name)}}}", ""]
        if document is None:
            out += [f"Not run yet. Run it with `{command}`.", ""]
            continue
        out += [
            f"- **Command**: `{document['command']}`",
            f"- **When**: {document['date']}, commit `{document.get('commit') or 'unknown'}`",
            f"- **Machine**: {_machine(document)}",
            f"- **Workload**: {document.get('workload') or '–'}",
            f"- **Anchor**: {document.get('anchor') or 'none'}",
            "",
            results_table(document),
            "",
        ]
        if document.get("notes"):
            out += [str(document["notes"]), ""]
    return "\n".join(out)


def comparison(results: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The few rows README shows: boardd beside TensorBoard, from the latest results."""
    results = load_results() if results is None else results
    rows = ["| | boardd | TensorBoard | ratio |", "| --- | --- | --- | --- |"]
    for what, name, prefix in COMPARISON:
        document = results.get(name)
        figure = next(
            (f for f in (document or {}).get("figures", []) if f["name"].startswith(prefix)),
            None,
        )
        if document is None or figure is None:
            rows.append(f"| {what} | not run yet | | |")
            continue
        unit = str(figure.get("unit", ""))
        rows.append(
            f"| {what} | {_number(figure.get('boardd'), unit)} | "
            f"{_number(figure.get('anchor'), unit)} | {_ratio(figure.get('ratio'))} |"
        )
    return "\n".join(rows)


def readme_block(results: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """What README's comparison block should hold."""
    results = load_results() if results is None else results
    dates = sorted({str(results[n]["date"])[:10] for _, n, _ in COMPARISON if n in results})
    when = f"{dates[0]} to {dates[-1]}" if dates and dates[0] != dates[-1] else "".join(dates[:1])
    note = (
        f"The latest run of each benchmark ({when or 'none yet'}; `bench/results/`), on a "
        "machine shared with other work: [Performance](docs/performance.md) gives the methods, "
        "the workloads, the machine and every figure."
    )
    return comparison(results) + "\n\n" + textwrap.fill(note, width=95) + "\n"


# -- the MkDocs hook --------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "exit-codes": exit_codes,
    "test-command": test_command,
    "oldest-releases": oldest_releases,
    "http-api": http_reference,
    "performance": performance,
    "comparison": comparison,
}


def render(markdown: str) -> str:
    """``markdown`` with each ``<!-- generated: NAME -->`` line replaced by its part."""

    def part(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r}; known: {', '.join(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(part, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs hook: fills in a page's generated parts."""
    return render(markdown)


def on_serve(server: Any, **kwargs: Any) -> Any:
    """MkDocs hook: ``mkdocs serve`` rebuilds when results or the code documented change."""
    for path in (RESULTS_DIR, REPO / "src" / "boardd" / "cli", REPO / "src" / "boardd" / "api"):
        if path.is_dir():
            server.watch(str(path))
    return server


# -- README ------------------------------------------------------------------------------------


def update_readme(check: bool) -> int:
    """Rewrites (or with ``check``, only compares) README's comparison block."""
    text = README.read_text(encoding="utf-8")
    found = README_BLOCK.search(text)
    if found is None:
        print("docs_gen: README.md has no <!-- comparison --> block", file=sys.stderr)
        return 1
    wanted = readme_block()
    if found.group(2) == wanted:
        return 0
    if check:
        print("docs_gen: README's comparison is stale: run python tools/docs_gen.py readme")
        return 1
    README.write_text(
        text[: found.start(2)] + wanted + text[found.end(2) :], encoding="utf-8", newline="\n"
    )
    print("docs_gen: README.md's comparison updated")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python tools/docs_gen.py readme [--check]`` or ``python tools/docs_gen.py NAME``
    (prints a generated part)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("part", choices=["readme", *GENERATORS])
    parser.add_argument("--check", action="store_true", help="readme: fail if it is stale")
    args = parser.parse_args(argv)
    if args.part == "readme":
        return update_readme(args.check)
    print(GENERATORS[args.part]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
