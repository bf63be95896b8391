"""numpy for the data layer's scalar kernels, once ``boardd serve`` has sent its first answer.

Importing numpy is a large share of ``boardd serve``'s time from process start to its first
complete answer (bench/bench_tensorboard.py measures both). The scalar read path needs numpy
only for speed on large series, so the daemon starts its providers with a deferred
:class:`NumpySwitch` and its warm-up loads numpy after the first answer. Meanwhile the two
scalar kernels that have a pure-Python form (uniform downsampling in
:mod:`boardd.data.downsample`, taking points by index in :mod:`boardd.data.series`) run in
pure Python, with the same results (a test compares them). A kernel given no switch, and
every other user of numpy, imports it when it needs it.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["NumpySwitch", "numpy_of"]


class NumpySwitch:
    """Whether the scalar kernels of its owner's reads use numpy yet: the daemon makes one,
    deferred, for its providers, and loads numpy once its first answer is out."""

    def __init__(self, *, deferred: bool = False) -> None:
        self._deferred = deferred
        self._numpy: ModuleType | None = None

    def load(self) -> ModuleType:
        """Imports numpy (if not yet) and hands it to the kernels from now on."""
        import numpy

        self._numpy = numpy
        self._deferred = False
        return numpy

    def end_deferral(self) -> None:
        """From now on the kernels import numpy when they need it."""
        self._deferred = False

    def module(self) -> ModuleType | None:
        """numpy, imported now if need be; None while deferred (the kernels' pure-Python
        form)."""
        if self._numpy is not None:
            return self._numpy
        return None if self._deferred else self.load()


def numpy_of(switch: NumpySwitch | None) -> ModuleType | None:
    """numpy for a kernel, or None for its pure-Python form: as ``switch`` says, and without
    one, numpy (imported now if need be)."""
    if switch is not None:
        return switch.module()
    import numpy

    return numpy


def load(switch: NumpySwitch | None) -> ModuleType:
    """numpy for a kernel that has no pure-Python form (the switch's too from now on)."""
    if switch is not None:
        return switch.load()
    import numpy

    return numpy
