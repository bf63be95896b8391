"""Tests of boardd.store.reservoir: keep-last, uniformity, determinism, preemption, batching."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boardd.store.reservoir import (
    OfferResult,
    ReservoirState,
    offer,
    run_seed,
    step_priorities,
)

# --- An independent per-point reference: plain Python integers, one point at a time. ----------

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def ref_mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def ref_priority(seed: int, step: int) -> int:
    value = ref_mix((ref_mix(seed & M64) + (step & M64) * GAMMA) & M64)
    return value - (1 << 64) if value >= 1 << 63 else value


class Model:
    """The documented semantics, point by point, with a list: what offer() must equal."""

    def __init__(self, capacity: int | None, seed: int) -> None:
        self.capacity = capacity
        self.seed = seed
        self.kept: list[tuple[int, object]] = []  # (step, which offered point)
        self.threshold: int | None = None
        self.seen = 0

    def pri(self, step: int) -> int:
        return ref_priority(self.seed, step)

    def offer(self, step: int, ident: object) -> None:
        if self.capacity == 0:
            self.seen += 1
            self.kept = []
            self.threshold = None
            return
        if self.kept and self.kept[-1][0] >= step:
            cut = bisect.bisect_left([s for s, _ in self.kept], step)
            self.seen = math.ceil(self.seen * cut / len(self.kept)) if cut else 0
            self.kept = self.kept[:cut]
            if cut == 0:
                self.threshold = None
        self.seen += 1
        if self.capacity is None:
            self.threshold = None
        elif self.capacity == 1:
            self.kept = []
            self.threshold = None
        else:
            if (
                self.kept
                and self.threshold is not None
                and self.pri(self.kept[-1][0]) >= (self.threshold)
            ):
                self.kept.pop()
            if len(self.kept) > self.capacity - 1:
                self.threshold = sorted(self.pri(s) for s, _ in self.kept)[self.capacity - 1]
                self.kept = [(s, i) for s, i in self.kept if self.pri(s) < self.threshold]
        self.kept.append((step, ident))


def test_reference_mix_is_splitmix64() -> None:
    # The first outputs of Vigna's splitmix64 generator seeded with 0.
    assert [ref_mix(i * GAMMA & M64) for i in (1, 2, 3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, M64),
    steps=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20),
)
def test_priorities_match_reference(seed: int, steps: list[int]) -> None:
    got = step_priorities(seed, np.array(steps, dtype=np.int64))
    assert got.dtype == np.int64
    assert got.tolist() == [ref_priority(seed, s) for s in steps]


def test_priorities_are_pinned() -> None:
    # Changing the hash changes what every existing store keeps: this must never move.
    assert step_priorities(0, np.array([0, 1, 2, -1])).tolist() == [
        ref_priority(0, 0),
        ref_priority(0, 1),
        ref_priority(0, 2),
        ref_priority(0, -1),
    ]
    assert step_priorities(12345, np.array([0, 1000])).tolist() == PINNED_PRIORITIES


PINNED_PRIORITIES = [8766464950418114028, -2145190123645855413]


def test_run_seed_is_stable_and_unambiguous() -> None:
    assert run_seed("", "train") == PINNED_RUN_SEED
    assert 0 <= run_seed("exp", "train") < 1 << 64
    assert run_seed("exp", "train") != run_seed("exp", "eval")
    assert run_seed("ab", "c") != run_seed("a", "bc")
    # Run names decoded with surrogateescape still hash.
    assert run_seed("", "bad\udcff") != run_seed("", "bad")


PINNED_RUN_SEED = 688085454027890381


# --- Helpers. ---------------------------------------------------------------------------------


class FakeStore:
    """The store's side of the contract: delete evicted rows, then upsert kept points."""

    def __init__(self) -> None:
        self.rows: dict[int, object] = {}

    def apply(self, result: OfferResult, steps: list[int], idents: list[object]) -> None:
        kept_steps = {steps[i] for i in np.flatnonzero(result.keep)}
        assert len(kept_steps) == int(result.keep.sum()), "two points kept at one step"
        evicted = result.evicted_steps.tolist()
        assert evicted == sorted(set(evicted))
        assert set(evicted) <= set(self.rows), "evicted a row the store does not have"
        assert not set(evicted) & kept_steps, "a step both evicted and kept"
        for step in evicted:
            del self.rows[step]
        for i in np.flatnonzero(result.keep):
            self.rows[steps[i]] = idents[i]


def offered(state: ReservoirState, steps: Iterable[int] | np.ndarray, chunk: int) -> ReservoirState:
    array = np.fromiter(steps, dtype=np.int64)
    for start in range(0, len(array), chunk):
        offer(state, array[start : start + chunk])
    return state


def same_state(a: ReservoirState, b: ReservoirState) -> bool:
    return (
        a.kept_steps.tolist() == b.kept_steps.tolist()
        and a.seen == b.seen
        and a.threshold == b.threshold
    )


# --- Keep-last, capacities. -------------------------------------------------------------------


@pytest.mark.parametrize("capacity", [1, 2, 3, 10, 100])
def test_latest_point_always_kept_and_size_is_capacity(capacity: int) -> None:
    state = ReservoirState(capacity=capacity, seed=run_seed("", "keep-last"))
    rng = np.random.default_rng(7)
    steps = np.cumsum(rng.integers(1, 5, size=1000))
    start = 0
    while start < len(steps):
        stop = start + int(rng.integers(1, 40))
        offer(state, steps[start:stop])
        seen = min(stop, len(steps))
        assert state.kept_steps[-1] == steps[seen - 1]
        assert len(state.kept_steps) == min(capacity, seen)
        assert state.seen == seen
        start = stop


def test_capacity_all_keeps_every_surviving_point() -> None:
    state = ReservoirState(capacity=None, seed=1)
    result = offer(state, np.arange(100))
    assert result.keep.all()
    assert state.kept_steps.tolist() == list(range(100))
    result = offer(state, [50, 51, 52])
    assert result.keep.tolist() == [True, True, True]
    # Steps 50 to 52 are rewritten in place (upsert); 53 and later were preempted.
    assert result.evicted_steps.tolist() == list(range(53, 100))
    assert state.kept_steps.tolist() == list(range(53))
    assert state.seen == 53  # Exact when everything is kept.
    assert state.threshold is None


def test_capacity_zero_keeps_nothing_not_even_the_latest() -> None:
    state = ReservoirState(capacity=0, seed=1)
    result = offer(state, [1, 2, 3])
    assert not result.keep.any()
    assert state.kept_steps.tolist() == []
    assert state.seen == 3
    # A series that kept points under an earlier capacity gives them all up.
    state = ReservoirState(capacity=0, seed=1, seen=3, kept_steps=np.array([1, 2, 3]))
    result = offer(state, [4])
    assert not result.keep.any()
    assert result.evicted_steps.tolist() == [1, 2, 3]
    assert state.kept_steps.tolist() == []


def test_smaller_capacity_trims_at_next_offer() -> None:
    state = offered(ReservoirState(capacity=50, seed=3), np.arange(1000), chunk=1000)
    before = set(state.kept_steps.tolist())
    state.capacity = 5
    result = offer(state, [1000])
    assert len(state.kept_steps) == 5
    assert set(state.kept_steps.tolist()) <= before | {1000}
    assert set(result.evicted_steps.tolist()) == before - set(state.kept_steps.tolist())


def test_keep_marks_at_most_one_point_per_step_the_last_one() -> None:
    state = ReservoirState(capacity=None, seed=1)
    result = offer(state, [5, 6, 7, 6, 7, 7])
    assert result.keep.tolist() == [True, False, False, True, False, True]
    assert state.kept_steps.tolist() == [5, 6, 7]
    assert state.seen == 3


def test_empty_batch_changes_nothing() -> None:
    state = offered(ReservoirState(capacity=4, seed=1), range(10), chunk=10)
    before = state.copy()
    result = offer(state, np.array([], dtype=np.int64))
    assert result.keep.shape == (0,)
    assert result.evicted_steps.shape == (0,)
    assert same_state(state, before)


# --- Uniformity. ------------------------------------------------------------------------------


def test_each_earlier_point_kept_with_probability_k_minus_1_over_n_minus_1() -> None:
    # Over a fixed set of seeds, so the outcome is fixed: it cannot flake.
    n, capacity, trials = 40, 8, 3000
    counts = np.zeros(n, dtype=np.int64)
    sizes = set()
    for trial in range(trials):
        state = ReservoirState(capacity=capacity, seed=run_seed("uniformity", str(trial)))
        offered(state, np.arange(n) * 10, chunk=7)
        counts[state.kept_steps // 10] += 1
        sizes.add(len(state.kept_steps))
    assert sizes == {capacity}
    assert counts[-1] == trials  # The latest point, always.
    p = (capacity - 1) / (n - 1)
    expected = trials * p
    # Pearson's statistic over the n - 1 earlier points; 70.7 is chi2.ppf(0.999, df=38).
    chi2 = float((((counts[:-1] - expected) ** 2) / expected).sum())
    assert chi2 < 70.7, (chi2, counts.tolist())
    sigma = math.sqrt(trials * p * (1 - p))
    assert np.all(np.abs(counts[:-1] - expected) < 4.5 * sigma), counts.tolist()


def test_uniform_after_many_points_not_only_at_the_start() -> None:
    # Inclusion by decile of a longer stream: a bias towards old or recent points would show.
    n, capacity, trials = 1000, 20, 400
    deciles = np.zeros(10, dtype=np.int64)
    for trial in range(trials):
        state = ReservoirState(capacity=capacity, seed=run_seed("deciles", str(trial)))
        offer(state, np.arange(n))
        non_latest = state.kept_steps[:-1]
        deciles += np.bincount(non_latest * 10 // (n - 1), minlength=10)
    points_per_decile = np.bincount(np.arange(n - 1) * 10 // (n - 1), minlength=10)
    expected = trials * (capacity - 1) * points_per_decile / (n - 1)
    chi2 = float((((deciles - expected) ** 2) / expected).sum())
    assert chi2 < 27.9, deciles.tolist()  # chi2.ppf(0.999, df=9)


# --- Determinism. -----------------------------------------------------------------------------


def test_same_seed_same_points_whatever_the_batching() -> None:
    steps = np.arange(0, 50_000, 3)
    a = offered(ReservoirState(capacity=100, seed=run_seed("exp", "train")), steps, chunk=17)
    b = offered(ReservoirState(capacity=100, seed=run_seed("exp", "train")), steps, chunk=5000)
    assert same_state(a, b)
    # What existing stores hold: this must never change.
    assert a.kept_steps[:8].tolist() == [180, 600, 969, 981, 996, 1131, 1551, 2499]
    assert int(a.kept_steps.sum()) == PINNED_KEPT_SUM


PINNED_KEPT_SUM = 2531508


def test_other_runs_keep_other_points() -> None:
    steps = np.arange(10_000)
    a = offered(ReservoirState(capacity=100, seed=run_seed("exp", "train")), steps, chunk=10_000)
    b = offered(ReservoirState(capacity=100, seed=run_seed("exp", "eval")), steps, chunk=10_000)
    assert a.kept_steps[-1] == b.kept_steps[-1] == 9999
    assert len(set(a.kept_steps.tolist()) & set(b.kept_steps.tolist())) < 20


def test_tags_of_a_run_written_at_common_steps_keep_common_steps() -> None:
    seed = run_seed("exp", "train")
    loss = offered(ReservoirState(capacity=50, seed=seed), np.arange(20_000), chunk=999)
    accuracy = offered(ReservoirState(capacity=50, seed=seed), np.arange(20_000), chunk=20_000)
    assert same_state(loss, accuracy)
    # Evaluated every 10 steps: at the common steps, loss keeps a subset of what eval keeps.
    evaluation = offered(
        ReservoirState(capacity=50, seed=seed), np.arange(0, 20_000, 10), chunk=300
    )
    common = set(loss.kept_steps[:-1].tolist()) & set(range(0, 20_000, 10))
    assert common <= set(evaluation.kept_steps.tolist())


# --- Preemption. ------------------------------------------------------------------------------


def test_preemption_drops_the_tail_and_scales_seen() -> None:
    state = offered(ReservoirState(capacity=10, seed=run_seed("", "preempt")), range(100), 100)
    before = state.kept_steps.tolist()
    survivors = [s for s in before if s < 80]
    result = offer(state, [80])
    assert state.kept_steps.tolist() == [*survivors, 80]
    assert result.keep.tolist() == [True]
    assert result.evicted_steps.tolist() == [s for s in before if s > 80]
    # rustboard: seen * (1 - preempted / kept), rounded up; then this point.
    assert state.seen == math.ceil(100 * len(survivors) / len(before)) + 1


def test_restart_from_checkpoint_reproduces_the_uninterrupted_sample() -> None:
    seed = run_seed("", "restart")
    interrupted = offered(ReservoirState(capacity=30, seed=seed), range(5000), chunk=5000)
    offered(interrupted, range(4000, 10_000), chunk=777)
    uninterrupted = offered(ReservoirState(capacity=30, seed=seed), range(10_000), chunk=10_000)
    assert interrupted.kept_steps.tolist() == uninterrupted.kept_steps.tolist()
    assert interrupted.threshold == uninterrupted.threshold


def test_restart_from_scratch_starts_the_series_over() -> None:
    seed = run_seed("", "scratch")
    state = offered(ReservoirState(capacity=10, seed=seed), range(1000), chunk=1000)
    result = offer(state, np.arange(50))
    fresh = offered(ReservoirState(capacity=10, seed=seed), range(50), chunk=50)
    assert same_state(state, fresh)
    assert result.keep.sum() == 10


def test_restart_inside_one_batch() -> None:
    # Steps 100..119 then a restart at 90 in the same batch: nothing of 90..119 survives from
    # before the restart.
    state = ReservoirState(capacity=None, seed=1)
    offer(state, np.arange(100))
    batch = np.r_[100:120, 90:150]
    result = offer(state, batch)
    kept = np.flatnonzero(result.keep)
    assert batch[kept].tolist() == list(range(90, 150))
    assert kept.min() == 20
    assert result.evicted_steps.tolist() == []  # 90..99 are replaced in place.
    assert state.kept_steps.tolist() == list(range(150))


def test_repeated_steps_keep_the_last_write() -> None:
    # Gradient accumulation logging every micro-batch at the same global step.
    steps = np.repeat(np.arange(500), 4)
    state = ReservoirState(capacity=20, seed=run_seed("", "accumulate"))
    store = FakeStore()
    idents: list[object] = list(range(len(steps)))
    store.apply(offer(state, steps), steps.tolist(), idents)
    assert sorted(store.rows) == state.kept_steps.tolist()
    assert all(ident == 4 * step + 3 for step, ident in store.rows.items())
    assert len(state.kept_steps) == 20 and state.kept_steps[-1] == 499


def test_a_repeat_that_empties_the_sample_starts_it_over() -> None:
    # A stored state whose latest point fails the threshold: the repeat of step 6 preempts
    # every kept point, which restarts the series (threshold cleared, seen from 0).
    state = ReservoirState(
        capacity=3, seed=1, seen=9, kept_steps=np.array([5]), threshold=-(1 << 63)
    )
    result = offer(state, [6, 6, 7])
    assert result.keep.tolist() == [False, True, True]
    assert result.evicted_steps.tolist() == [5]
    assert state.kept_steps.tolist() == [6, 7]
    assert state.threshold is None
    assert state.seen == 2


# --- Batching: any chunks, same result as one point at a time. --------------------------------

stream_of_steps = st.one_of(
    st.lists(st.integers(-3, 40), max_size=80),
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(1, 30), st.integers(1, 3), st.integers(0, 2)),
        max_size=6,
    ).map(
        lambda runs: [
            step
            for start, length, stride, repeat in runs
            for step in range(start, start + length * stride, stride)
            for _ in range(1 + repeat)
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    steps=stream_of_steps,
    capacity=st.one_of(st.none(), st.integers(0, 8)),
    seed=st.integers(0, M64),
    data=st.data(),
)
def test_chunks_equal_one_at_a_time_and_the_reference(
    steps: list[int], capacity: int | None, seed: int, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(steps)), max_size=8), label="cuts"))
    bounds = [0, *cuts, len(steps)]
    new_capacity = data.draw(st.one_of(st.none(), st.integers(0, 8)), label="new capacity")
    change_at = data.draw(st.integers(0, len(bounds) - 1), label="change at chunk")
    # Any state the store may hand back, not only those offer() reaches from scratch.
    initial = sorted(data.draw(st.sets(st.integers(-5, 40), max_size=6), label="kept before"))
    threshold = data.draw(st.none() | st.integers(-(1 << 63), (1 << 63) - 1), label="threshold")
    seen = len(initial) + data.draw(st.integers(0, 100), label="seen more")
    model = Model(capacity, seed)
    model.kept = [(step, "before") for step in initial]
    model.seen = seen
    # A threshold that the sampled points do not respect is dropped.
    if threshold is not None and all(model.pri(step) < threshold for step in initial[:-1]):
        model.threshold = threshold
    state, single = (
        ReservoirState(capacity, seed, seen, np.array(initial, dtype=np.int64), threshold)
        for _ in range(2)
    )
    store = FakeStore()
    store.rows = dict(model.kept)
    for chunk_number, (start, stop) in enumerate(itertools.pairwise(bounds)):
        if chunk_number == change_at:
            model.capacity = state.capacity = single.capacity = new_capacity
        chunk = steps[start:stop]
        idents: list[object] = list(range(start, stop))
        result = offer(state, np.array(chunk, dtype=np.int64))
        assert result.keep.shape == (len(chunk),)
        store.apply(result, chunk, idents)
        for step, ident in zip(chunk, idents, strict=True):
            model.offer(step, ident)
            offer(single, [step])
        assert state.kept_steps.tolist() == [s for s, _ in model.kept]
        assert store.rows == dict(model.kept)
        assert state.seen == model.seen
        assert state.threshold == model.threshold
        assert same_state(state, single)
        if capacity is not None and state.capacity:
            assert len(state.kept_steps) <= max(state.capacity, len(model.kept))


# --- Real event files: a job restarted from a checkpoint. -------------------------------------


def _scalar_steps(path: Path, tag: str) -> list[int]:
    from tensorboard.backend.event_processing.event_file_loader import (  # type: ignore[import-untyped]
        EventFileLoader,
    )

    return [
        event.step
        for event in EventFileLoader(str(path)).Load()
        if event.HasField("summary") and any(v.tag == tag for v in event.summary.value)
    ]


def test_restart_written_by_tensorboardx(tmp_path: Path) -> None:
    from tensorboardX import SummaryWriter  # type: ignore[import-untyped]

    # The job runs to step 299, is preempted, restarts from the checkpoint of step 250 and
    # rewrites steps 250.. into a new event file of the same run.
    files = []
    for suffix, written in ((".first", range(300)), (".second", range(250, 401))):
        with SummaryWriter(str(tmp_path), filename_suffix=suffix) as writer:
            for step in written:
                writer.add_scalar("loss", 1.0 / (step + 1), step)
                writer.add_scalar("accuracy", step / 400, step)
                if step % 10 == 0:
                    writer.add_scalar("eval", step, step)
        (path,) = (p for p in tmp_path.iterdir() if p.name.endswith(suffix))
        files.append(path)

    seed = run_seed("", ".")
    kept: dict[str, list[int]] = {}
    for tag in ("loss", "accuracy", "eval"):
        state = ReservoirState(capacity=25, seed=seed)
        store = FakeStore()
        for path in files:
            steps = _scalar_steps(path, tag)
            store.apply(offer(state, steps), steps, [(path.name, s) for s in steps])
        rows = {step: source for step, source in store.rows.items() if isinstance(source, tuple)}
        assert sorted(rows) == sorted(store.rows) == state.kept_steps.tolist()
        assert max(rows) == 400 and rows[400] == (files[1].name, 400)
        assert len(rows) == 25
        # Nothing written before the restart survives at or after the checkpoint.
        assert all(name == files[1].name for step, (name, _) in rows.items() if step >= 250)
        kept[tag] = sorted(rows)
    assert kept["loss"] == kept["accuracy"]
    common = set(kept["loss"][:-1]) & set(range(0, 401, 10))
    assert common <= set(kept["eval"])


# --- Validation. ------------------------------------------------------------------------------


def test_invalid_states_and_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        ReservoirState(capacity=-1, seed=0)
    with pytest.raises(TypeError, match="capacity"):
        ReservoirState(capacity=2.5, seed=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strictly increasing"):
        ReservoirState(capacity=5, seed=0, kept_steps=np.array([3, 2]))
    with pytest.raises(ValueError, match="threshold"):
        ReservoirState(capacity=5, seed=0, threshold=1 << 63)
    state = ReservoirState(capacity=5, seed=0)
    with pytest.raises(TypeError, match="integers"):
        offer(state, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="one-dimensional"):
        offer(state, np.zeros((2, 2), dtype=np.int64))
    offer(state, [1, 2, 3])
    with pytest.raises(ValueError):
        state.kept_steps[0] = 7  # Read-only: the cached priorities must stay in step.


def test_copy_is_independent() -> None:
    state = offered(ReservoirState(capacity=5, seed=9), range(100), chunk=100)
    saved = state.copy()
    offer(state, np.arange(100, 200))
    assert saved.kept_steps[-1] == 99 and saved.seen == 100
    again = saved.copy()
    offer(saved, np.arange(100, 200))
    assert same_state(saved, state)
    assert again.seen == 100
