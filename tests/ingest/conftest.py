"""Fixtures of the ingest tests: the big logdir is shared with the store's tests."""

from __future__ import annotations

from tests.store.conftest import big_logdir

__all__ = ["big_logdir"]
