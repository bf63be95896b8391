"""numpy for the data layer's scalar kernels, once ``boardd serve`` has sent its first answer.

Importing numpy is a large share of ``boardd serve``'s time from process start to its first
complete answer (bench/bench_tensorboard.py measures both). The scalar read path
needs numpy only for speed on large series, so the daemon defers it (:func:`defer`) and its
warm-up imports it after the first answer (:func:`load`). Meanwhile the two scalar kernels
that have a pure-Python form (uniform downsampling in :mod:`boardd.data.downsample`, taking
points by index in :mod:`boardd.data.series`) run in pure Python, with the same results (a
test compares them). Every other user of numpy imports it when it needs it, and so does every
process that does not defer it: :func:`numpy_module` imports it on first use.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["defer", "end_deferral", "load", "numpy_module"]

_deferred = False
_numpy: ModuleType | None = None


def defer() -> None:
    """Until :func:`load`, :func:`numpy_module` answers None instead of importing numpy."""
    global _deferred
    _deferred = _numpy is None


def end_deferral() -> None:
    """From now on :func:`numpy_module` imports numpy when a kernel needs it."""
    global _deferred
    _deferred = False


def load() -> ModuleType:
    """Imports numpy (if not yet) and hands it to the kernels from now on."""
    global _numpy, _deferred
    import numpy

    _numpy = numpy
    _deferred = False
    return numpy


def numpy_module() -> ModuleType | None:
    """numpy, imported now if need be; None while deferred (the kernels' pure-Python form)."""
    if _numpy is not None:
        return _numpy
    return None if _deferred else load()
