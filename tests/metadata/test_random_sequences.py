"""Random call sequences on boardd and MLMD, compared result by result (ids, messages without
timestamps, error classes). Each seed is one fresh pair of stores; a failure names its seed
and the call, and the sequence replays from the seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardd.metadata import metadata_store
from boardd.metadata.proto import metadata_store_pb2 as pb
from tests.metadata.conftest import fake_config
from tests.metadata.oracle import MlmdOracle
from tests.metadata.parity import Both
from tests.metadata.sequences import steps

#: Sequences per test and steps per sequence: ~9,000 compared calls in all.
SEEDS = range(60)
STEPS = 150


def run_sequence(
    seed: int,
    oracle: MlmdOracle,
    count: int = STEPS,
    filters: bool = False,
    config: pb.ConnectionConfig | None = None,
) -> dict[str, int]:
    """One seed's sequence on a fresh pair of stores (in memory unless ``config``, with a
    fresh oracle then); tallies of the outcomes."""
    if config is None:
        oracle.reset()
    store = metadata_store.MetadataStore(config or fake_config())
    tallies: dict[str, int] = {}
    try:
        both = Both(store, oracle)
        for generator, step in steps(seed, count, filters):
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


def test_random_sequences_on_sqlite_files(tmp_path: Path) -> None:
    """A few sequences on file stores (boardd's lineage.sqlite, MLMD's SQLite file)."""
    for seed in range(1000, 1004):
        config = pb.ConnectionConfig()
        config.sqlite.filename_uri = str(tmp_path / f"boardd-{seed}.sqlite")
        with MlmdOracle(tmp_path / f"mlmd-{seed}.sqlite") as oracle:
            tallies = run_sequence(seed, oracle, 100, config=config)
        assert tallies["ok"] > 20, tallies


@pytest.mark.slow
def test_random_sequences_with_filters_and_lineage(oracle: MlmdOracle) -> None:
    """Sequences that also list with filter_query and call get_lineage_subgraph (they run
    QUERY's filter_query translation beside CORE's walk)."""
    totals: dict[str, int] = {}
    for seed in range(2000, 2030):
        for outcome, count in run_sequence(seed, oracle, 150, filters=True).items():
            totals[outcome] = totals.get(outcome, 0) + count
    assert totals["ok"] > 1000, totals
