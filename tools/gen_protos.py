"""Regenerate (or, with --check, verify) the Python code for boardd's .proto sources.

    python tools/gen_protos.py           # rewrite the *_pb2.py and *_pb2.pyi beside each .proto
    python tools/gen_protos.py --check   # exit 1 if the committed files are out of date

Needs grpcio-tools (the ``test`` extra installs it). The check ignores the protobuf version
that protoc stamps into the generated code, so a newer grpcio-tools does not fail it; the stamp
sets the oldest protobuf runtime that can import the code, which tests/proto checks against
pyproject.toml.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
# Every directory of .proto sources, relative to src/ (the import path protoc sees).
PROTO_DIRS = (Path("boardd") / "proto", Path("boardd") / "metadata" / "proto")
PROTO_DIR = SRC / PROTO_DIRS[0]
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi")

# protoc writes its own version into every file twice: a comment and the arguments of the
# runtime check. Neither says anything about the .proto sources.
_VERSION_COMMENT = re.compile(r"^# Protobuf Python Version: .*$", re.MULTILINE)
_VERSION_CHECK = re.compile(r"ValidateProtobufRuntimeVersion\((?:[^()]*)\)", re.DOTALL)

EXIT_OK = 0
EXIT_STALE = 1
EXIT_NO_TOOLS = 2


def proto_sources() -> list[Path]:
    """The .proto files of the package, sorted."""
    return sorted(p for d in PROTO_DIRS for p in (SRC / d).glob("*.proto"))


def generate(out_dir: Path) -> None:
    """Run protoc on every source, writing ``<dir>/*_pb2.py[i]`` under ``out_dir``."""
    from grpc_tools import protoc  # imported late: only this tool needs grpcio-tools

    # grpc_tools ships the well-known types (google/protobuf/struct.proto) in its package.
    well_known = Path(protoc.__file__).resolve().parent / "_proto"
    args = [
        "protoc",
        f"-I{SRC}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        # Absolute paths: protoc maps them to "boardd/proto/…" through -I, whatever the cwd.
        *(str(p) for p in proto_sources()),
    ]
    status = protoc.main(args)
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}; see its messages above")


def generated_files(root: Path) -> dict[str, str]:
    """Generated files under each of ``root/PROTO_DIRS``, by path relative to ``root``."""
    return {
        (d / p.name).as_posix(): p.read_text(encoding="utf-8")
        for d in PROTO_DIRS
        if (root / d).is_dir()
        for p in sorted((root / d).iterdir())
        if p.name.endswith(GENERATED_SUFFIXES)
    }


def normalize(text: str) -> str:
    """The generated text without protoc's version stamps."""
    text = _VERSION_COMMENT.sub("# Protobuf Python Version: <any>", text)
    return _VERSION_CHECK.sub("ValidateProtobufRuntimeVersion(<any>)", text)


def stale_files() -> list[str]:
    """One line per committed generated file that differs from a fresh generation."""
    with tempfile.TemporaryDirectory(prefix="boardd-protos-") as tmp:
        generate(Path(tmp))
        fresh = generated_files(Path(tmp))
    committed = generated_files(SRC)
    problems: list[str] = []
    for name in sorted(fresh.keys() | committed.keys()):
        if name not in committed:
            problems.append(f"{name}: missing (not generated yet)")
        elif name not in fresh:
            problems.append(f"{name}: no .proto source generates it any more (delete it)")
        elif normalize(fresh[name]) != normalize(committed[name]):
            diff = difflib.unified_diff(
                normalize(committed[name]).splitlines(),
                normalize(fresh[name]).splitlines(),
                "committed",
                "fresh",
                lineterm="",
                n=0,
            )
            changed = [line for line in diff if line[:1] in "+-" and line[:3] not in "+++---"]
            problems.append(f"{name}: {len(changed)} line(s) differ, e.g. {changed[:2]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Generate or check; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and fail if the committed files differ",
    )
    args = parser.parse_args(argv)
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        print("grpcio-tools is not installed: pip install grpcio-tools", file=sys.stderr)
        return EXIT_NO_TOOLS
    if not args.check:
        generate(SRC)
        dirs = ", ".join(str(SRC / d) for d in PROTO_DIRS)
        print(f"generated code for {len(proto_sources())} .proto files in {dirs}")
        return EXIT_OK
    problems = stale_files()
    if problems:
        print("generated protobuf code is out of date with the .proto sources:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        print("run: python tools/gen_protos.py", file=sys.stderr)
        return EXIT_STALE
    print("generated protobuf code is up to date")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
