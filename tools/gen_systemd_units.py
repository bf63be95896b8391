"""Regenerate (or, with --check, verify) the repository's systemd/ directory from the templates.

    python tools/gen_systemd_units.py           # rewrite systemd/ from src/boardd/systemd/templates
    python tools/gen_systemd_units.py --check   # exit 1 if systemd/ is out of date

The shipped units, env example and sysusers file are rendered by boardd.systemd.units, so run
this with the project's virtualenv (``.venv/bin/python``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from boardd.systemd.units import shipped_files

SYSTEMD_DIR = Path(__file__).resolve().parent.parent / "systemd"


def main() -> int:
    """Writes (or checks) every shipped file; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    check = parser.parse_args().check
    stale = []
    for relative, text in shipped_files().items():
        target = SYSTEMD_DIR / relative
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(relative)
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    for relative in stale:
        print(f"systemd/{relative}: {'out of date' if check else 'rewritten'}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
