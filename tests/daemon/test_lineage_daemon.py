"""``boardd serve`` keeps the lineage store: a real daemon fills it from a logdir with
checkpoints and hparams, takes a user's records through the API (with the token), and a
restart with ``--rebuild`` (a new logdir store, other row ids) leaves the user's records as
they were and boardd's own records under the same ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from boardd.lineage import vocabulary
from tests.daemon.conftest import Daemon, ServeFactory, boardd_env, wait_until
from tests.lineage.conftest import TRIALS, write_training_logdir

TOKEN = "daemon-lineage-token-0123"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def call(daemon: Daemon, method: str, **kwargs: Any) -> Any:
    assert daemon.client is not None
    response = daemon.client.post(f"/api/v1/metadata/{method}", json=kwargs, headers=AUTH)
    assert response.status_code == 200, (method, response.text)
    return response.json()["result"]


def everything(daemon: Daemon) -> dict[str, Any]:
    artifacts = call(daemon, "get_artifacts")
    executions = call(daemon, "get_executions")
    return {
        "artifacts": artifacts,
        "executions": executions,
        "contexts": call(daemon, "get_contexts"),
        "events": call(
            daemon, "get_events_by_execution_ids", execution_ids=[e["id"] for e in executions]
        ),
    }


def test_rebuild_leaves_user_records_intact(tmp_path: Path, serve: ServeFactory) -> None:
    logdir = write_training_logdir(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    lineage = tmp_path / "lineage" / "lineage.sqlite"
    args = [logdir.path, "--token-file", token_file, "--lineage", lineage]
    checkpoints = sum(len(v) for v in logdir.checkpoints.values())

    daemon = serve(*args)
    wait_until(
        lambda: (
            len(call(daemon, "get_artifacts_by_type", type_name=vocabulary.CHECKPOINT))
            == checkpoints
        ),
        what="the checkpoints in the lineage store",
        alive=daemon.check_alive,
    )
    expected = {f"runs/{run}": "STATUS_SUCCESS" for run in TRIALS} | {
        "runs/official": "STATUS_FAILURE"
    }

    def statuses() -> dict[str, str]:
        runs = call(daemon, "get_executions_by_type", type_name=vocabulary.TRAINING_RUN)
        return {r["name"]: r["properties"].get("status", {}).get("stringValue", "") for r in runs}

    # The catch-up commits in batches: wait for the last sessions' ends to be in.
    wait_until(
        lambda: expected.items() <= statuses().items(),
        what="every run's session status",
        alive=daemon.check_alive,
    )
    # The user's records: a data set read by one of boardd's runs, and a model of their own.
    data_type = call(daemon, "put_artifact_type", artifact_type={"name": "DataSet"})
    [data_id] = call(
        daemon, "put_artifacts", artifacts=[{"typeId": data_type, "uri": "/data/mnist"}]
    )
    run = call(
        daemon,
        "get_execution_by_type_and_name",
        type_name=vocabulary.TRAINING_RUN,
        execution_name="runs/lr0.1",
    )
    call(
        daemon,
        "put_events",
        events=[{"artifactId": data_id, "executionId": run["id"], "type": "INPUT"}],
    )
    before = everything(daemon)
    assert daemon.stop() == 0

    # Other sampling: the logdir store must be rebuilt (beside, then swapped in).
    daemon = serve(*args, "--rebuild", "--samples-per-plugin", "scalars=3")
    assert daemon.client is not None
    daemon.client.headers.update(AUTH)  # this server wants the token on every request
    daemon.wait_for_state("live")
    wait_until(
        lambda: "rebuilt in" in daemon.stderr(), what="the rebuild", alive=daemon.check_alive
    )
    after = everything(daemon)
    assert after == before
    assert daemon.stop() == 0

    # The command line reads the same file: the checkpoint's run, its hparams and its input.
    checkpoint = logdir.checkpoints["lr0.1"][0]
    shown = subprocess.run(
        [sys.executable, "-m", "boardd", "lineage", str(checkpoint), "--lineage", str(lineage)],
        env=boardd_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "written by TrainingRun runs/lr0.1  [COMPLETE]" in shown.stdout
    assert f"opt = {TRIALS['lr0.1'][0]['opt']!r}" in shown.stdout
    assert "inputs:\n      DataSet /data/mnist" in shown.stdout


def checkpoints_by_experiment(daemon: Daemon) -> dict[str, int]:
    """The checkpoint artifacts in the lineage store, counted by experiment (an artifact's
    name is EXPERIMENT/PATH)."""
    counts: dict[str, int] = {}
    for artifact in call(daemon, "get_artifacts_by_type", type_name=vocabulary.CHECKPOINT):
        experiment = artifact["name"].split("/", 1)[0]
        counts[experiment] = counts.get(experiment, 0) + 1
    return counts


def test_two_daemons_on_one_lineage_file_record_each_its_logdirs(
    tmp_path: Path, serve: ServeFactory
) -> None:
    """The default lineage file is one per user: a daemon started beside another records its
    own logdirs at once, not once the other one stops. One experiment name is recorded by one
    daemon at a time (its records are keyed by that name)."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    lineage = tmp_path / "lineage.sqlite"
    logdirs = {name: write_training_logdir(tmp_path / name) for name in ("alpha", "beta")}
    expected = {n: sum(len(v) for v in made.checkpoints.values()) for n, made in logdirs.items()}
    daemons = [
        serve(f"{name}={made.path}", "--token-file", token_file, "--lineage", lineage)
        for name, made in logdirs.items()
    ]
    for daemon in daemons:
        wait_until(
            lambda: checkpoints_by_experiment(daemon) == expected,  # noqa: B023
            what="both daemons' checkpoints in the shared lineage store",
            alive=daemon.check_alive,
        )
        assert "another boardd records" not in daemon.stderr()
    # A third daemon on another logdir named like one already recorded: it serves the store,
    # says who records that name, and writes nothing over the other one's records.
    other = write_training_logdir(tmp_path / "gamma")
    contexts = call(daemons[0], "get_contexts_by_type", type_name=vocabulary.EXPERIMENT)
    late = serve(f"alpha={other.path}", "--token-file", token_file, "--lineage", lineage)
    wait_until(
        lambda: "another boardd records experiment alpha" in late.stderr(),
        what="the third daemon saying that another one records alpha",
        alive=late.check_alive,
    )
    assert call(late, "get_contexts_by_type", type_name=vocabulary.EXPERIMENT) == contexts
    assert checkpoints_by_experiment(late) == expected
