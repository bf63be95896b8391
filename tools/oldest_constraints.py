"""Print pip constraints pinning boardd's runtime dependencies to the oldest releases allowed.

    python3 tools/oldest_constraints.py                      # [project].dependencies + tensorboard
    python3 tools/oldest_constraints.py --extra s3 -o c.txt  # another extra too, into a file
    python3 tools/oldest_constraints.py -o c.txt --test-tools t.txt  # and the test tools

Each requirement of ``[project].dependencies`` (and of the named extras) becomes
``name==LOWER``, LOWER being its ``>=`` (or ``~=``/``==``) bound in pyproject.toml, so CI's
oldest-releases lane (.ci/run) installs exactly the lower bounds pyproject.toml states, read at
run time: there is no second list to keep in step. A requirement without such a bound is an
error, since "the oldest release allowed" would then be whatever pip has ever served.

Only the standard library is used (tomllib), so any Python boardd supports runs it before a
virtual environment exists. The test extra is not pinned: its tools install at what resolves
against these pins (``--test-tools``).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# The extras a user installs the product with (README: pip install '.[tensorboard]').
DEFAULT_EXTRAS = ("tensorboard",)

# PEP 508 without URLs: name, optional [extras], version specifiers, optional ; marker.
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[[^\]]*\])?\s*(?P<specs>[^;]*?)\s*(?:;\s*(?P<marker>.+?))?\s*$"
)
_CLAUSE = re.compile(r"^\s*(?P<op>~=|===|==|!=|<=|>=|<|>)\s*(?P<version>[^\s,]+)\s*$")


def normalize(name: str) -> str:
    """The PEP 503 normalized form of a project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lowest(requirement: str) -> tuple[str, str, str | None]:
    """(normalized name, lowest allowed version, marker) of one requirement string."""
    match = _REQUIREMENT.match(requirement)
    if match is None:
        raise ValueError(f"cannot parse requirement {requirement!r}")
    bounds = []
    for clause in filter(None, (part.strip() for part in match["specs"].split(","))):
        spec = _CLAUSE.match(clause)
        if spec is None:
            raise ValueError(f"cannot parse {clause!r} in requirement {requirement!r}")
        if spec["op"] in (">=", "~=", "==", "==="):
            bounds.append(spec["version"])
    if len(bounds) != 1 or "*" in bounds[0]:
        raise ValueError(
            f"requirement {requirement!r} needs exactly one inclusive lower bound (>=X) "
            "so that its oldest allowed release can be tested"
        )
    return normalize(match["name"]), bounds[0], match["marker"]


def oldest_pins(pyproject: Path, extras: tuple[str, ...]) -> list[tuple[str, str, str | None]]:
    """The (name, version, marker) pins of the dependencies and extras, in pyproject's order."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise ValueError(f"pyproject.toml has no extra {extra!r}")
        requirements += optional[extra]
    pins: dict[str, tuple[str, str, str | None]] = {}
    for requirement in requirements:
        name, version, marker = lowest(requirement)
        if name in pins and pins[name][1] != version:
            raise ValueError(f"{name} has two lower bounds: {pins[name][1]} and {version}")
        pins[name] = (name, version, marker)
    return list(pins.values())


def test_tools(pyproject: Path, extras: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(kept, left out): the test extra's requirements, to install at what resolves against the
    pins, less those another extra (one not pinned here) also names: that extra's version
    range, not the test's, is what users get, and its test tool may not install beside the
    pinned dependencies (s3fs releases require the fsspec release of the same date)."""
    optional = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get(
        "optional-dependencies", {}
    )
    others = {
        lowest(requirement)[0]
        for extra, requirements in optional.items()
        if extra not in (*extras, "test")
        for requirement in requirements
    }
    kept: list[str] = []
    left_out: list[str] = []
    for requirement in optional.get("test", []):
        match = _REQUIREMENT.match(requirement)
        name = normalize(match["name"]) if match else ""
        (left_out if name in others else kept).append(requirement)
    return kept, left_out


def constraints(pins: list[tuple[str, str, str | None]]) -> str:
    """The pins as a pip constraints file."""
    lines = [
        f"{name}=={version}" + (f" ; {marker}" if marker else "") for name, version, marker in pins
    ]
    return "".join(line + "\n" for line in lines)


def main() -> int:
    """Writes the constraints; returns the exit code."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--extra",
        action="append",
        help=f"an extra to pin too (repeatable; default: {', '.join(DEFAULT_EXTRAS)})",
    )
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    parser.add_argument(
        "--test-tools",
        type=Path,
        metavar="FILE",
        help="also write the test extra's requirements to FILE (pip install -r), less those "
        "of extras not pinned (named on stderr)",
    )
    args = parser.parse_args()
    extras = tuple(args.extra) if args.extra else DEFAULT_EXTRAS
    try:
        text = constraints(oldest_pins(PYPROJECT, extras))
        if args.test_tools is not None:
            kept, left_out = test_tools(PYPROJECT, extras)
            args.test_tools.write_text("".join(r + "\n" for r in kept), encoding="utf-8")
            for requirement in left_out:
                print(
                    f"oldest_constraints: left out {requirement!r}: another extra's",
                    file=sys.stderr,
                )
    except ValueError as error:
        print(f"oldest_constraints: {error}", file=sys.stderr)
        return 1
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
