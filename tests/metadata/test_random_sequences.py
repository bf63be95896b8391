"""Random call sequences on boardd and MLMD, compared result by result (ids, messages without
timestamps, error classes). Each seed is one fresh pair of stores; a failure names its seed
and the call, and the sequence replays from the seed."""

from __future__ import annotations

import pytest

from boardd.metadata import metadata_store
from tests.metadata.conftest import fake_config
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both
from tests.metadata.sequences import steps

#: Sequences per test and steps per sequence: ~5,000 compared calls in all.
SEEDS = range(40)
STEPS = 120


def run_sequence(seed: int, oracle: MlmdOracle, count: int = STEPS) -> dict[str, int]:
    """One seed's sequence on a fresh pair of in-memory stores; tallies of the outcomes."""
    oracle.reset()
    store = metadata_store.MetadataStore(fake_config())
    tallies: dict[str, int] = {}
    try:
        both = Both(store, oracle)
        for generator, step in steps(seed, count):
            name, args, kwargs = step
            try:
                outcome, value = both.outcome(name, *args, **kwargs)
            except AssertionError as exc:
                raise AssertionError(f"seed {seed}: {exc}") from None
            generator.record(step, outcome, value)
            tallies[outcome] = tallies.get(outcome, 0) + 1
    finally:
        store.close()
    return tallies


@pytest.mark.slow
def test_random_sequences_match_mlmd(oracle: MlmdOracle) -> None:
    totals: dict[str, int] = {}
    for seed in SEEDS:
        for outcome, count in run_sequence(seed, oracle).items():
            totals[outcome] = totals.get(outcome, 0) + count
    # The sequences exercise both paths: successes and each usual error.
    assert totals["ok"] > len(SEEDS) * STEPS // 3, totals
    for error in ("AlreadyExistsError", "InvalidArgumentError", "NotFoundError"):
        assert totals.get(error, 0) > 20, totals
