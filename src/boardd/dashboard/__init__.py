"""boardd's dashboard: the built front-end (``static/``, from ``web/`` by ``hatch_build.py``;
never committed), served at ``/`` by :mod:`boardd.api.dashboard`."""

from __future__ import annotations

from pathlib import Path

#: The bundle: ``index.html`` and ``assets/`` (content-hashed names).
STATIC = Path(__file__).parent / "static"
