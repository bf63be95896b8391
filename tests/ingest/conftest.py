"""Fixtures of the ingest tests: the big logdir of the store's tests, the daemon's ``serve``."""

from __future__ import annotations

from tests.daemon.conftest import serve
from tests.store.conftest import big_logdir

__all__ = ["big_logdir", "serve"]
