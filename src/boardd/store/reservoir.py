"""Deterministic, vectorized reservoir sampling of a time series' steps (keep-last, preemption).

This module decides WHICH points of a series the store keeps; it touches no SQL. The store calls
:func:`offer` with the steps of each new batch of points of a series, inserts the points marked in
``OfferResult.keep`` and deletes the rows at ``OfferResult.evicted_steps``.

What is kept, for a series of capacity ``k``:

* the most recent point, always (``k >= 1``);
* of the other points seen, a uniform random sample of ``k - 1`` (all of them while fewer);
* ``k = None`` keeps everything and ``k = 0`` keeps nothing, not even the latest point (as
  rustboard's own flag; no setting of boardd's gives 0: ``--samples-per-plugin`` reads 0 as
  "all", as TensorBoard's command line does, see boardd.store.sampling).

How: bottom-k ("priority") sampling, not Algorithm R. Every point gets a pseudo-random 64-bit
priority, a counter-based hash (splitmix64) of ``(run seed, step)``; the sample is the ``k - 1``
non-latest points of smallest priority. Equivalently, the state carries a ``threshold``: a point
that stops being the latest stays only if its priority is below it, and when more than ``k - 1``
points qualify the threshold drops to the ``k``-th smallest priority. Compared with rustboard's
Algorithm R (``reservoir.rs``):

* exactly uniform: each of the first ``n - 1`` points is kept with probability ``(k-1)/(n-1)``
  (rustboard's keep-last variant favours older points slightly: the point just before the latest
  one is kept with probability ``(k-1)/n``);
* order-free, hence vectorized and chunk-independent: a batch costs a few numpy passes over the
  batch and over the kept set, and offering points one by one or in any chunks gives the same
  state, because a decision never depends on which chunk or slot a point landed in.

Why the hash is keyed by step and not by the point's ordinal ``n``:

* ``n`` is not known after a preemption (rustboard only estimates it, see ``seen``), so keyed by
  ``n`` a restarted job would draw fresh, unrelated decisions; keyed by step, a job restarted from
  a checkpoint that rewrites the same steps reproduces exactly the sample of a run that was never
  interrupted;
* tags of one run share the seed, so series with the same steps keep the same steps, and when one
  tag is written at a subset of another's steps (eval every 100 steps, loss every step) the one
  with more points keeps a subset of the other's steps at their common steps, barring
  preemptions (coordinated samples: charts and images line up on the same steps);
* a fixed seed makes the decision a pure function of ``(seed, step)``: reproducible across
  processes, batch sizes and numpy versions (uint64 wrap-around arithmetic only).
  For a fixed seed the step-to-priority map is a bijection, so distinct steps never tie.

Preemption, as rustboard does it: a point at step ``s`` first drops every kept point of the series
with step ``>= s`` (a job restarted from a checkpoint rewrites the orphaned tail), and ``seen`` is
scaled by the fraction of kept points that survive, rounded up (exact integer arithmetic here,
where rustboard uses floats). ``seen`` is only an estimate of the points behind the sample, for
display: no decision depends on it. The threshold is NOT raised by a partial preemption: the
points it excluded are gone, so raising it would over-represent the points written after the
restart; the reservoir is instead briefly under-filled, until the new points reach past the old
tail. When a preemption drops every kept point (a run restarted from scratch into the same
directory), the series starts over: threshold cleared and ``seen`` 0, as rustboard's formula gives.

Capacity changes between daemon runs are safe: a smaller capacity trims the sample at the next
offer (a uniform subsample of a uniform sample); a larger one fills as new points arrive.

The store persists per series: ``seen``, ``threshold`` (a signed 64-bit integer or NULL) and the
kept steps (its rows); with the capacity and :func:`run_seed` that rebuilds a
:class:`ReservoirState`.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from boardd.store.splitmix import GAMMA, MIX1, MIX2, mix64

Steps = npt.NDArray[np.int64]

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


_Array = TypeVar("_Array", bound=npt.NDArray[Any])


def _readonly(array: _Array) -> _Array:
    array.flags.writeable = False
    return array


def _empty_steps() -> Steps:
    return _readonly(np.empty(0, dtype=np.int64))


def step_priorities(seed: int, steps: Steps) -> Steps:
    """The sampling priority of each step of a series sampled with ``seed`` (signed 64-bit).

    A point survives as a non-latest point only if its priority is below the series' threshold.
    The priority of a step is splitmix64's output function applied to ``mix(seed) + step *
    GAMMA`` (mod 2**64), read as a signed integer so that the threshold fits an SQLite INTEGER.
    Changing this formula changes what existing stores would keep: a test pins its values.
    """
    z = np.ascontiguousarray(steps, dtype=np.int64).view(np.uint64) * np.uint64(GAMMA)
    z += np.uint64(mix64(seed))
    z ^= z >> np.uint64(30)
    z *= np.uint64(MIX1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(MIX2)
    z ^= z >> np.uint64(31)
    return z.view(np.int64)


def run_seed(experiment_key: str, run: str) -> int:
    """A stable 64-bit seed for the series of one run (BLAKE2b of the key and the run name).

    ``experiment_key`` should not depend on where the store or the logdir lives (an empty string
    is fine), so that two stores built from the same files keep the same points.
    """
    digest = hashlib.blake2b(digest_size=8, person=b"boardd.reservoir")
    for part in (experiment_key, run):
        # Run names come from os.fsdecode and may hold lone surrogates.
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return int.from_bytes(digest.digest(), "little")


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


@dataclass(eq=False, slots=True)
class ReservoirState:
    """The sampling state of one series; :func:`offer` updates it in place.

    ``capacity``: points kept at most (``None`` = all, 0 = none). ``seed``: from :func:`run_seed`
    (the same for every series of a run). ``seen``: estimated points behind the sample.
    ``kept_steps``: the steps kept, strictly increasing, read-only (the last one is the latest
    point). ``threshold``: a non-latest point stays only if its priority is below it (``None``:
    no bound yet); a threshold that some kept point other than the latest does not respect is
    dropped. To resume a series, build a new state from the persisted values.
    """

    capacity: int | None
    seed: int
    seen: int = 0
    kept_steps: Steps = field(default_factory=_empty_steps)
    threshold: int | None = None
    # Priorities of kept_steps, recomputed only when kept_steps is replaced from outside.
    _priorities: Steps | None = field(default=None, init=False, repr=False)
    _priorities_of: Steps | None = field(default=None, init=False, repr=False)
    # With capacity None: kept_steps is a prefix of this buffer, so that appending is cheap.
    _buffer: Steps | None = field(default=None, init=False, repr=False)
    _buffer_view: Steps | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.capacity is not None and (
            not isinstance(self.capacity, int) or isinstance(self.capacity, bool)
        ):
            raise TypeError(f"capacity must be an int or None, not {self.capacity!r}")
        if self.capacity is not None and self.capacity < 0:
            raise ValueError(f"capacity must be >= 0 or None (keep all), not {self.capacity}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise TypeError(f"seed must be an int, not {self.seed!r}")
        if self.seen < 0:
            raise ValueError(f"seen must be >= 0, not {self.seen}")
        if self.threshold is not None and not _INT64_MIN <= self.threshold <= _INT64_MAX:
            raise ValueError(f"threshold must be a signed 64-bit integer, not {self.threshold}")
        steps = _as_steps(self.kept_steps, what="kept_steps").copy()
        if steps.shape[0] > 1 and not bool(np.all(steps[1:] > steps[:-1])):
            raise ValueError("kept_steps must be strictly increasing")
        self.kept_steps = _readonly(steps)
        if self.threshold is not None and steps.shape[0] > 1:
            priorities = self._kept_priorities()
            if bool(np.any(priorities[:-1] >= self.threshold)):
                # Only a changed seed (or a foreign store) gets here: the threshold no longer
                # bounds the sample, so drop it; the next overflow of the capacity sets it anew.
                self.threshold = None

    def copy(self) -> ReservoirState:
        """An independent copy, e.g. to roll back if the transaction storing a batch fails."""
        clone = ReservoirState(self.capacity, self.seed, self.seen, self.kept_steps, self.threshold)
        clone._priorities = self._priorities
        clone._priorities_of = clone.kept_steps if self._priorities_of is self.kept_steps else None
        return clone

    def held_steps(self) -> int:
        """How many steps this state holds in memory (spare room of its buffer included)."""
        if self._buffer is not None and self._buffer_view is self.kept_steps:
            return int(self._buffer.shape[0])
        return int(self.kept_steps.shape[0])

    def _kept_priorities(self) -> Steps:
        if self._priorities is None or self._priorities_of is not self.kept_steps:
            self._priorities = step_priorities(self.seed, self.kept_steps)
            self._priorities_of = self.kept_steps
        return self._priorities


class OfferResult(NamedTuple):
    """What the store must do after :func:`offer`.

    ``keep[i]``: the i-th offered point is in the sample after the batch; at most one point per
    step is marked (the last one offered at that step). ``evicted_steps``: sorted steps of points
    kept before the batch that are now gone (evicted or preempted); the store deletes those rows.
    The two are disjoint: a preempted step offered again and kept is in ``keep`` only, and the
    store's upsert by (series, step) replaces the old row.
    """

    keep: npt.NDArray[np.bool_]
    evicted_steps: Steps


def _as_steps(steps: object, *, what: str) -> Steps:
    array = np.asarray(steps)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, not of shape {array.shape}")
    if array.shape[0] and array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, not {array.dtype}")
    if array.dtype.kind == "u" and array.shape[0] and int(array.max()) > _INT64_MAX:
        raise ValueError(f"{what} must fit in a signed 64-bit integer")
    return np.ascontiguousarray(array, dtype=np.int64)


def _count(
    seen: int,
    size: int,
    positions: npt.NDArray[np.intp],
    repeats: npt.NDArray[np.intp],
    below: npt.NDArray[np.intp],
) -> int:
    """``seen`` after ``size`` points, of which the one at ``positions[i]`` came ``repeats[i]``
    more times, each repeat preempting the previous one while ``below[i]`` points sat below it.
    """
    done = 0
    for position, extra, kept_below in zip(
        positions.tolist(), repeats.tolist(), below.tolist(), strict=True
    ):
        seen += position + 1 - done
        done = position + 1
        if kept_below == 0:
            seen = 1  # Each repeat preempts the whole sample: ceil(seen * 0) + 1.
            continue
        for _ in range(extra):
            following = _ceil_div(seen * kept_below, kept_below + 1) + 1
            if following == seen:
                break  # A fixed point: the remaining repeats change nothing.
            seen = following
    return seen + size - done


@dataclass(slots=True)
class _Work:
    """The sample while a batch is processed: steps, priorities, batch index (-1: kept before)."""

    steps: Steps
    priorities: Steps
    index: npt.NDArray[np.intp]
    threshold: int | None
    seen: int
    evicted: list[Steps]

    def drop(self, steps: Steps, index: npt.NDArray[np.intp]) -> None:
        """Notes, of the points dropped from the sample, those kept before this batch."""
        old = steps[index < 0]
        if old.shape[0]:
            self.evicted.append(old)

    def preempt(self, step: int) -> None:
        """Drops every kept point at ``step`` or later and scales ``seen`` as rustboard does."""
        kept = self.steps.shape[0]
        if not kept or int(self.steps[-1]) < step:
            return
        cut = int(np.searchsorted(self.steps, step, side="left"))
        self.drop(self.steps[cut:], self.index[cut:])
        self.seen = _ceil_div(self.seen * cut, kept)
        self.steps, self.priorities, self.index = (
            self.steps[:cut],
            self.priorities[:cut],
            self.index[:cut],
        )
        if cut == 0:
            # Nothing of the old stream is left in the sample: start over.
            self.threshold = None

    def add_latest_only(self, steps: Steps, priorities: Steps, index: npt.NDArray[np.intp]) -> None:
        """Adds increasing points above the sample, keeping only the latest (capacity 1)."""
        self.drop(self.steps, self.index)
        self.steps, self.priorities, self.index = steps[-1:], priorities[-1:], index[-1:]
        # With no room beside the latest point there is nothing for a threshold to bound.
        self.threshold = None

    def add_sampled(
        self,
        capacity: int,
        steps: Steps,
        priorities: Steps,
        index: npt.NDArray[np.intp],
        positions: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.intp]:
        """Adds increasing points above the sample, keeping at most ``capacity`` (>= 2).

        Returns, for the repeated points at ``positions``, how many sampled points sat below each
        while it was the latest point (for :func:`_count`).
        """
        room = capacity - 1
        # The older sampled points stay as they are. The candidates are the previous latest
        # point, judged when the first new point arrives, and each new point but the last one,
        # judged when the next one arrives.
        n_body = max(self.steps.shape[0] - 1, 0)
        offset = self.steps.shape[0] - n_body
        tail_steps = np.concatenate((self.steps[n_body:], steps[:-1]))
        tail_prio = np.concatenate((self.priorities[n_body:], priorities[:-1]))
        tail_index = np.concatenate((self.index[n_body:], index[:-1]))
        if self.threshold is None:
            passed = np.ones(tail_steps.shape[0], dtype=np.bool_)
        else:
            passed = tail_prio < self.threshold
        below = np.zeros(positions.shape[0], dtype=np.intp)
        if positions.shape[0]:
            # While a repeated point is the latest one, each repeat preempts it; if no sampled
            # point sits below it, that restarts the series (no threshold). Candidates only
            # accumulate, so only the first repeated point can find none below it; after that
            # restart every later candidate passes.
            judged = positions + offset
            passed_before = np.concatenate(([0], np.cumsum(passed, dtype=np.intp)))
            if n_body + int(passed_before[judged[0]]) == 0:
                self.threshold = None
                passed[judged[0] :] = True
                passed_before = np.concatenate(([0], np.cumsum(passed, dtype=np.intp)))
            below = np.minimum(n_body + passed_before[judged], room)
        if not bool(passed.all()):
            self.drop(tail_steps[~passed], tail_index[~passed])
            tail_steps, tail_prio, tail_index = (
                tail_steps[passed],
                tail_prio[passed],
                tail_index[passed],
            )
        cand_steps = np.concatenate((self.steps[:n_body], tail_steps, steps[-1:]))
        cand_prio = np.concatenate((self.priorities[:n_body], tail_prio, priorities[-1:]))
        cand_index = np.concatenate((self.index[:n_body], tail_index, index[-1:]))
        if cand_steps.shape[0] - 1 > room:
            # The sequential rule lowers the threshold to the capacity-th smallest priority each
            # time a candidate overflows; the end result is the same order statistic of all.
            self.threshold = int(np.partition(cand_prio[:-1], room)[room])
            stays = cand_prio < self.threshold
            stays[-1] = True
            self.drop(cand_steps[~stays], cand_index[~stays])
            cand_steps, cand_prio, cand_index = (
                cand_steps[stays],
                cand_prio[stays],
                cand_index[stays],
            )
        self.steps, self.priorities, self.index = cand_steps, cand_prio, cand_index
        return below


_NO_POSITIONS: Final = _readonly(np.zeros(0, dtype=np.intp))


@dataclass(frozen=True, slots=True)
class _Runs:
    """A batch cut into runs of increasing steps; of consecutive points at one step, only the
    last one is listed (``points``, at ``index`` in the batch), with how often it was repeated.
    """

    points: Steps
    index: npt.NDArray[np.intp]
    repeats: npt.NDArray[np.intp] | None
    starts: list[int]

    @classmethod
    def of(cls, batch: Steps) -> _Runs:
        size = batch.shape[0]
        if bool(np.all(batch[1:] > batch[:-1])):
            # The common case: one run, no repeats.
            return cls(batch, np.arange(size, dtype=np.intp), None, [0, size])
        is_last = np.ones(size, dtype=np.bool_)
        np.not_equal(batch[1:], batch[:-1], out=is_last[:-1])
        index = np.flatnonzero(is_last)
        points = batch[index]
        repeats = np.diff(index, prepend=-1) - 1
        starts = [0, *(np.flatnonzero(points[1:] < points[:-1]) + 1).tolist(), points.shape[0]]
        return cls(points, index, repeats, starts)

    def repeated(self, start: int, stop: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """Positions in ``start:stop`` (relative) of the repeated points, and their repeats."""
        if self.repeats is None:
            return _NO_POSITIONS, _NO_POSITIONS
        positions = np.flatnonzero(self.repeats[start:stop])
        return positions, self.repeats[start:stop][positions]


def offer(state: ReservoirState, steps: npt.ArrayLike) -> OfferResult:
    """Offers the steps of a batch of new points of one series, in file order; updates ``state``.

    A step not greater than the one before it is a preemption (see the module docstring). The
    work is a few numpy passes per run of increasing steps (consecutive repeats of a step
    included); only a step lower than its predecessor starts a new run, handled after the
    previous one. With capacity None, points are appended to a buffer with room to spare.
    """
    batch = _as_steps(steps, what="steps")
    size = batch.shape[0]
    if size == 0:
        return OfferResult(
            keep=_readonly(np.zeros(0, dtype=np.bool_)), evicted_steps=_empty_steps()
        )
    if state.capacity == 0:
        # Nothing kept means no preemption can be seen: every point counts.
        evicted = state.kept_steps
        state.seen += size
        state.kept_steps = _empty_steps()
        state.threshold = None
        return OfferResult(keep=_readonly(np.zeros(size, dtype=np.bool_)), evicted_steps=evicted)
    runs = _Runs.of(batch)
    if state.capacity is None:
        new_index, evicted = _offer_all(state, runs)
    else:
        new_index, evicted = _offer_sampled(state, state.capacity, runs)
    keep = np.zeros(size, dtype=np.bool_)
    keep[new_index] = True
    return OfferResult(keep=_readonly(keep), evicted_steps=_readonly(evicted))


def _evicted(pieces: list[Steps], new_steps: Steps) -> Steps:
    """The sorted steps of ``pieces`` (dropped points kept before the batch) not in
    ``new_steps`` (sorted, kept from the batch): a step preempted and kept again is replaced by
    the store's upsert, it has no row to delete.
    """
    evicted = np.concatenate(pieces) if pieces else _empty_steps()
    if evicted.shape[0] > 1:
        evicted = np.sort(evicted)
    if evicted.shape[0] and new_steps.shape[0] and evicted[-1] >= new_steps[0]:
        found = np.minimum(np.searchsorted(new_steps, evicted), new_steps.shape[0] - 1)
        evicted = evicted[new_steps[found] != evicted]
    return evicted


def _offer_sampled(
    state: ReservoirState, capacity: int, runs: _Runs
) -> tuple[npt.NDArray[np.intp], Steps]:
    """:func:`offer` with a capacity of at least 1: returns the kept batch indices, evicted."""
    kept_before = state.kept_steps
    work = _Work(
        steps=kept_before,
        priorities=state._kept_priorities(),
        index=np.full(kept_before.shape[0], -1, dtype=np.intp),
        threshold=state.threshold,
        seen=state.seen,
        evicted=[],
    )
    priorities = step_priorities(state.seed, runs.points)
    for start, stop in itertools.pairwise(runs.starts):
        work.preempt(int(runs.points[start]))
        positions, repeats = runs.repeated(start, stop)
        run = slice(start, stop)
        if capacity == 1:
            work.add_latest_only(runs.points[run], priorities[run], runs.index[run])
            below = np.zeros_like(positions)
        else:
            below = work.add_sampled(
                capacity, runs.points[run], priorities[run], runs.index[run], positions
            )
        work.seen = _count(work.seen, stop - start, positions, repeats, below)

    # Points kept from before the batch sit below the new ones, whose batch indices increase
    # with their steps: the index column is sorted.
    first_new = int(np.searchsorted(work.index, 0))
    state.kept_steps = _readonly(work.steps)
    state.seen = work.seen
    state.threshold = work.threshold
    # Not cached: a writer holds the states of many series, and recomputing the priorities of
    # a sample at its next batch is cheap where keeping them costs 8 bytes a point.
    state._priorities = None
    state._priorities_of = None
    return work.index[first_new:], _evicted(work.evicted, work.steps[first_new:])


def _offer_all(state: ReservoirState, runs: _Runs) -> tuple[npt.NDArray[np.intp], Steps]:
    """:func:`offer` with capacity None: returns the kept batch indices and the evicted steps.

    Touches the points kept before only where a preemption cuts them, so that a series that
    keeps everything does not cost a copy of itself per batch.
    """
    old = state.kept_steps
    n_old = old.shape[0]  # How many of them are still kept.
    pieces: list[tuple[Steps, npt.NDArray[np.intp]]] = []  # Runs of the batch still kept.
    kept = n_old
    seen = state.seen
    for start, stop in itertools.pairwise(runs.starts):
        step = int(runs.points[start])
        latest = int(pieces[-1][0][-1]) if pieces else int(old[n_old - 1]) if n_old else None
        if latest is not None and latest >= step:
            before = kept
            while pieces and int(pieces[-1][0][0]) >= step:
                kept -= pieces.pop()[0].shape[0]
            if pieces:
                piece_steps, piece_index = pieces[-1]
                cut = int(np.searchsorted(piece_steps, step))
                kept -= piece_steps.shape[0] - cut
                pieces[-1] = (piece_steps[:cut], piece_index[:cut])
            else:
                cut = int(np.searchsorted(old[:n_old], step))
                kept -= n_old - cut
                n_old = cut
            seen = _ceil_div(seen * kept, before)
        positions, repeats = runs.repeated(start, stop)
        below: npt.NDArray[np.intp] = positions + kept
        pieces.append((runs.points[start:stop], runs.index[start:stop]))
        kept += stop - start
        seen = _count(seen, stop - start, positions, repeats, below)

    new_steps = np.concatenate([p[0] for p in pieces]) if len(pieces) > 1 else pieces[0][0]
    new_index = np.concatenate([p[1] for p in pieces]) if len(pieces) > 1 else pieces[0][1]
    evicted = _evicted([old[n_old:].copy()] if n_old < old.shape[0] else [], new_steps)
    buffer = state._buffer
    appendable = (
        n_old == old.shape[0]
        and buffer is not None
        and state._buffer_view is old
        and buffer.shape[0] >= kept
    )
    if not appendable or buffer is None:
        # A new buffer also when a preemption cut the old points: the arrays handed out
        # before (kept_steps of earlier states) must not change under their holders.
        buffer = np.empty(max(kept + kept // 2, 64), dtype=np.int64)
        buffer[:n_old] = old[:n_old]
        state._buffer = buffer
    buffer[n_old:kept] = new_steps
    state.kept_steps = state._buffer_view = _readonly(buffer[:kept])
    state.seen = seen
    state.threshold = None
    return new_index, evicted
