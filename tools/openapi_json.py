"""Write boardd's OpenAPI document (what /api/v1/openapi.json serves) to a file, or to stdout.

    python tools/openapi_json.py                 # the document on stdout
    python tools/openapi_json.py openapi.json    # ... into a file

The document is built from the route table (boardd.api.openapi.SPEC) without a server, so run
this with the project's virtualenv (``.venv/bin/python``). The dashboard's answer types
(web/src/generated/openapi.ts) are generated from it: ``npm --prefix web run gen:api``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from boardd.api.openapi import SPEC


def document() -> str:
    """The OpenAPI document as JSON text (keys in the route table's order, UTF-8 as is)."""
    spec: dict[str, Any] = SPEC
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """Writes the document; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="the file to write (default: stdout)")
    out: Path | None = parser.parse_args().out
    text = document()
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
