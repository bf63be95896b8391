"""``Client.hparams()`` against a real server (served in a thread) on stores ingested from real
hparams logdirs (tests/hparams_logdirs.py): a DataFrame with a row per session, its columns,
values, statuses and groups as written; sort, filters and statuses; errors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from boardd.api.app import create_app
from boardd.client import BoarddError, Client
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.hparams_logdirs import (
    OFFICIAL_FAILED,
    OFFICIAL_GROUPS,
    OFFICIAL_NO_ACCURACY,
    OFFICIAL_RUNNING,
    TBX_TRIALS,
    write_official,
    write_tensorboardx,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """boardd serving two experiments: ``official`` and ``tbx``."""
    root = tmp_path_factory.mktemp("client-hparams")
    specs = []
    for name, write in (("official", write_official), ("tbx", write_tensorboardx)):
        made = write(root)
        db = root / f"{name}.sqlite"
        ingest(made.path, db, experiment=name)
        specs.append(ExperimentSpec(name, made.path, db))
    running = ThreadedServer(create_app(specs)).start()
    try:
        yield running.url
    finally:
        running.stop()


def test_a_row_per_session(server: str) -> None:
    with Client(server, experiment="official") as client:
        frame = client.hparams()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [
        "session_group", "session",
        "batch_norm", "dropout", "layers", "learning_rate", "optimizer",
        "score", "train/loss", "validation/loss", "validation/accuracy",
        "status", "hparams_run",
    ]  # fmt: skip
    assert list(frame["hparams_run"]) == list(frame["session"])
    assert len(frame) == sum(trials for _, trials in OFFICIAL_GROUPS.values())
    rows = frame.set_index("session")
    for g, (group, (hparams, trials)) in enumerate(OFFICIAL_GROUPS.items()):
        for trial in range(trials):
            row = rows.loc[f"{group}/trial_{trial}"]
            assert row["session_group"] == group
            for name, value in hparams.items():
                assert row[name] == value, (group, name)
            base = 1.0 + g + 0.125 * trial
            assert row["train/loss"] == float(np.float32(base / 4))
    # Missing values: an hparam a group lacks, a metric a session lacks.
    assert pd.isna(rows.loc["delta/trial_0", "dropout"])
    assert math.isnan(rows.loc["delta/trial_0", "score"])
    (no_accuracy,) = OFFICIAL_NO_ACCURACY
    assert math.isnan(rows.loc[no_accuracy, "validation/accuracy"])
    statuses = dict(zip(frame["session"], frame["status"], strict=True))
    assert {s for s, v in statuses.items() if v == "failure"} == OFFICIAL_FAILED
    # No end info: running while it receives data, unknown once idle (old wall times here).
    assert {statuses[s] for s in OFFICIAL_RUNNING} <= {"running", "unknown"}
    assert set(statuses.values()) - {"success", "failure"} <= {"running", "unknown"}


def test_sort_filters_and_statuses(server: str) -> None:
    with Client(server, experiment="official") as client:
        frame = client.hparams(sort="-score")
        order = list(dict.fromkeys(frame["session_group"]))
        assert order == ["epsilon", "gamma", "beta", "alpha", "delta"]  # missing last
        frame = client.hparams(sort=["optimizer", "-layers"])
        assert list(dict.fromkeys(frame["session_group"])) == [
            "epsilon", "alpha", "gamma", "beta", "delta"
        ]  # fmt: skip
        frame = client.hparams(filters={"optimizer": "^(adam|sgd)$", "learning_rate": (None, 0.04)})
        assert set(frame["session_group"]) == {"alpha", "beta", "delta"}
        frame = client.hparams(filters={"batch_norm": [True], "validation/loss": (1.0, None)})
        assert set(frame["session_group"]) == {"gamma"}
        frame = client.hparams(statuses=["failure"])
        assert set(frame["session"]) == OFFICIAL_FAILED
        assert set(frame["status"]) == {"failure"}
        with pytest.raises(ValueError, match="no hparam or metric column 'nope'"):
            client.hparams(sort="nope")
        with pytest.raises(ValueError, match="status 'done'"):
            client.hparams(statuses=["done"])
        with pytest.raises(BoarddError) as raised:
            client.hparams(filters={"optimizer": (0.0, 1.0)})
        assert raised.value.status == 400 and "optimizer" in raised.value.message
        # Arguments of the wrong shape are named, not a bare TypeError from deep inside.
        with pytest.raises(ValueError, match="a tuple is an interval"):
            client.hparams(filters={"learning_rate": (0, 1, 2)})
        with pytest.raises(TypeError, match="give a regular expression"):
            client.hparams(filters={"learning_rate": 0.001})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="sort: give a column name"):
            client.hparams(sort=5)  # type: ignore[arg-type]


def test_tensorboardx_trials(server: str) -> None:
    with Client(server, experiment="official") as client:
        frame = client.hparams(experiment="tbx", sort="lr")
    assert list(frame.columns)[2:] == [
        "augment", "batch", "lr", "opt", "hparam/accuracy", "hparam/loss", "status",
        "hparams_run",
    ]  # fmt: skip
    expected = sorted(TBX_TRIALS, key=lambda t: float(t[0]["lr"]))
    assert list(frame["lr"]) == [h["lr"] for h, _ in expected]
    assert list(frame["opt"]) == [h["opt"] for h, _ in expected]
    for (_, metrics), accuracy in zip(expected, frame["hparam/accuracy"], strict=True):
        if "hparam/accuracy" in metrics:
            assert accuracy == float(np.float32(metrics["hparam/accuracy"]))
        else:
            assert math.isnan(accuracy)
    # Each add_hparams call is its own session (and group) in a timestamped sub-run of the
    # writer's run: named after that run (the one the user named), the sub-run kept.
    for session, group, sub in zip(
        frame["session"], frame["session_group"], frame["hparams_run"], strict=True
    ):
        assert session == group and session.startswith("trial_"), (session, group)
        assert sub.startswith(f"{session}/1700000") and sub.count("/") == 1, sub
    assert list(frame["session"]) == [f"trial_{TBX_TRIALS.index(t)}" for t in expected]
    assert set(frame["status"]) == {"success"}


def test_an_experiment_without_hparams(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    from tests.hparams_logdirs import curve, write_run

    write_run(logdir, "train", (), {"loss": curve(1.0)})
    db = tmp_path / "s.sqlite"
    ingest(logdir, db, experiment="plain")
    running = ThreadedServer(create_app([ExperimentSpec("plain", logdir, db)])).start()
    try:
        with Client(running.url) as client:
            frame = client.hparams()
        assert list(frame.columns) == ["session_group", "session", "status", "hparams_run"]
        assert len(frame) == 0
    finally:
        running.stop()
