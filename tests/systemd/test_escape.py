"""Unit-name escaping as ``systemd-escape --path`` does it, and ExecStart='s first word."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from boardd.systemd.errors import InstallError
from boardd.systemd.escape import quote_exec_path, systemd_escape_path
from boardd.systemd.install import find_boardd_executable
from boardd.systemd.units import render_unit
from boardd.systemd.verify import verify_unit_file

ESCAPE = shutil.which("systemd-escape")
ANALYZE = shutil.which("systemd-analyze")

_component_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="/\x00"),
    min_size=1,
    max_size=12,
)
_component_bytes = st.binary(min_size=1, max_size=8).filter(
    lambda b: b"/" not in b and b"\0" not in b
)
_component = st.one_of(_component_text, _component_bytes.map(os.fsdecode)).filter(
    lambda c: c not in (".", "..")
)
_paths = st.lists(_component, min_size=0, max_size=5).map(lambda parts: "/" + "/".join(parts))


@pytest.mark.skipif(
    ESCAPE is None, reason="systemd-escape is not installed (apt-get install systemd)"
)
@settings(max_examples=150, deadline=None)
@given(_paths)
@example("/")
@example("/srv/logs/exp1")
@example("/srv/my-logs/run 1/.hidden/ü/a.b:c_d")
@example("/home/me/lr=0.1,bs=64/%i/$HOME/'q\"\\")
@example("/.dot/-dash-/--")
def test_escape_matches_systemd_escape(path: str) -> None:
    assert ESCAPE is not None
    proc = subprocess.run(
        [ESCAPE, "--path", "--", path], capture_output=True, check=True, env=_c_locale()
    )
    assert systemd_escape_path(path) == os.fsdecode(proc.stdout.rstrip(b"\n"))
    assert systemd_unescape_path(systemd_escape_path(path)) == path


@pytest.mark.skipif(
    ESCAPE is None, reason="systemd-escape is not installed (apt-get install systemd)"
)
@pytest.mark.parametrize("path", ["/srv//logs/./x/", "/a/b/", "//", "/./"])
def test_escape_simplifies_like_systemd_escape(path: str) -> None:
    assert ESCAPE is not None
    proc = subprocess.run([ESCAPE, "--path", "--", path], capture_output=True, check=True)
    assert systemd_escape_path(path) == proc.stdout.decode().rstrip("\n")


def test_escape_examples_without_systemd() -> None:
    assert systemd_escape_path("/srv/logs/exp1") == "srv-logs-exp1"
    assert systemd_escape_path("/srv/my-logs/.x") == "srv-my\\x2dlogs-.x"
    assert systemd_escape_path("/.hidden/a b") == "\\x2ehidden-a\\x20b"
    assert systemd_escape_path("/ü") == "\\xc3\\xbc"
    assert systemd_escape_path("/") == "-"
    assert systemd_unescape_path("srv-my\\x2dlogs-.x") == "/srv/my-logs/.x"
    assert systemd_unescape_path("-") == "/"
    with pytest.raises(ValueError, match="absolute"):
        systemd_escape_path("relative/path")
    with pytest.raises(ValueError, match="normalized"):
        systemd_escape_path("/srv/../etc")


def test_quote_exec_path() -> None:
    assert quote_exec_path(Path("/opt/venv/bin/boardd")) == "/opt/venv/bin/boardd"
    assert quote_exec_path(Path("/opt/my venv/bin/boardd")) == '"/opt/my venv/bin/boardd"'
    assert quote_exec_path(Path("/opt/50%/bin/boardd")) == "/opt/50%%/bin/boardd"
    with pytest.raises(InstallError, match="absolute"):
        quote_exec_path(Path("bin/boardd"))
    for bad in ("/opt/a\nb/boardd", '/opt/a"b/boardd', "/opt/a'b/boardd", "/opt/a\\b/boardd"):
        with pytest.raises(InstallError, match="quotes, backslashes or control characters"):
            quote_exec_path(Path(bad))


@pytest.mark.skipif(
    ANALYZE is None, reason="systemd-analyze is not installed (apt-get install systemd)"
)
def test_quoted_exec_path_reaches_the_binary(tmp_path: Path) -> None:
    # systemd-analyze verify fails unless ExecStart's first word, unquoted, names the file.
    odd = tmp_path / "my venv" / "50%" / "ü-x" / "bin"
    odd.mkdir(parents=True)
    (odd / "boardd").symlink_to(find_boardd_executable())
    unit = tmp_path / "boardd@.service"
    unit.write_text(render_unit(template=True, user=False, boardd=quote_exec_path(odd / "boardd")))
    assert verify_unit_file(unit, user=False) == []


def systemd_unescape_path(name: str) -> str:
    """The inverse of systemd_escape_path (what ``%f`` gives inside a unit)."""
    if name == "-":
        return "/"
    raw = bytearray()
    i = 0
    while i < len(name):
        char = name[i]
        if char == "-":
            raw.append(0x2F)
        elif char == "\\" and name[i + 1 : i + 2] == "x" and len(name) >= i + 4:
            raw.append(int(name[i + 2 : i + 4], 16))
            i += 3
        else:
            raw.extend(char.encode("utf-8"))
        i += 1
    return "/" + os.fsdecode(bytes(raw))


def _c_locale() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C.UTF-8"}
