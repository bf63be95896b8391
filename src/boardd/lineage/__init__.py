"""The lineage store of a boardd: ML Metadata's records of what the logdirs hold (filled
automatically) and of what users write, in one SQLite file beside the logdir stores."""

from __future__ import annotations

from boardd.lineage.service import LineageService, LineageUnavailable

__all__ = ["LineageService", "LineageUnavailable"]
