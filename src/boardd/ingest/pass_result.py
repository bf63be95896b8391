"""What one pass over a logdir did."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class PassResult:
    """What one pass over the logdir did."""

    bytes_read: int = 0
    records: int = 0
    commits: int = 0
    files_changed: list[str] = field(default_factory=list)
    #: The files whose read offset the pass moved forward (new whole records were read).
    files_read: set[str] = field(default_factory=set)
    runs_deleted: list[str] = field(default_factory=list)
    #: CPU seconds (this thread's) spent finding what to read: the walk and the life-cycle
    #: checks, not creating records nor reading: about what a pass with nothing new costs.
    scan_cpu_seconds: float = 0.0
