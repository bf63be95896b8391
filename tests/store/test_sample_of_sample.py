"""A store that keeps a larger sample answers a smaller one as its bottom-k."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from boardd.store import sampling
from boardd.store.errors import SamplingGrowsError
from boardd.store.reservoir import ReservoirState, offer, run_seed
from boardd.store.sampling import covers, kept_indices, larger_of
from boardd.store.session import WriteSession


@pytest.mark.parametrize("small", [1, 2, 7, 50])
def test_the_bottom_k_of_a_larger_reservoir_is_the_smaller_reservoir(small: int) -> None:
    steps = np.arange(0, 3000, 3, dtype=np.int64)
    seed = run_seed("", "train")
    large = ReservoirState(200, seed)
    smaller = ReservoirState(small, seed)
    for chunk in np.array_split(steps, 7):
        offer(large, chunk)
        offer(smaller, chunk)
    held = large.kept_steps.tolist()
    chosen = kept_indices("train", held, small)
    assert chosen is not None
    assert [held[i] for i in chosen] == smaller.kept_steps.tolist()
    assert kept_indices("train", held, None) is None
    assert kept_indices("train", held, 200) is None


def test_covers_and_the_larger_of_two_settings() -> None:
    assert covers({}, {"scalars": 500})
    assert not covers({"scalars": 500}, {})
    assert not covers({}, {"images": None})
    assert covers({"*": None}, {"images": 5, "my_plugin": 3})
    merged = larger_of({"scalars": 5}, {"*": 50})
    assert covers(merged, {"*": 50}) and covers(merged, {"scalars": 5})
    assert merged["scalars"] == 50 and merged["histograms"] == 500
    # Other scalar plugins: every point by the first's defaults, beside the second's 50.
    assert merged["*:scalar"] is None and merged["*:blob_sequence"] == 50
    assert larger_of({"scalars": 5}, {"scalars": None}) == {}  # every scalar: the default


def test_a_session_keeps_the_stores_larger_sample(tmp_path: Path) -> None:
    db, logdir = tmp_path / "s.sqlite", tmp_path / "logs"
    logdir.mkdir()
    with WriteSession(db, logdir, sampling={"images": None}) as session:
        assert session.sampling == {"images": None}
    with WriteSession(db, logdir, sampling={"images": 10}) as session:
        assert session.sampling == {"images": None}
    with WriteSession(db, logdir, sampling={"images": 5}, rebuild=True) as session:
        assert session.sampling == {"images": 5}
    with pytest.raises(SamplingGrowsError) as raised:
        WriteSession(db, logdir, sampling={"images": 6})
    assert raised.value.larger == {"images": 6}
    assert "--rebuild --samples-per-plugin 'images=6'" in str(raised.value)


def test_a_long_series_sample_is_chosen_alike_with_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    steps = np.sort(rng.choice(10**12, size=60_000, replace=False)).tolist()
    for capacity in (2, 3, 1_000, 59_999):
        with_numpy = kept_indices("train", steps, capacity)  # above the size that picks numpy
        monkeypatch.setattr(sampling, "_NUMPY_FROM", 10**9)
        assert kept_indices("train", steps, capacity) == with_numpy
        monkeypatch.undo()
