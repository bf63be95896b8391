"""The lineage query: from a checkpoint back to its run, the run's hparams, its experiment and
its data; and the graph around an artifact, hop by hop."""

from __future__ import annotations

import os

import pytest

from boardd.lineage import vocabulary
from boardd.lineage.graph import LineageNotFound, chain, lineage_graph
from tests.lineage.conftest import OFFICIAL, OFFICIAL_HPARAMS, TRIALS, Populated, records_in


def test_from_a_checkpoint_back_to_its_runs_hparams(populated: Populated) -> None:
    checkpoint = populated.logdir.checkpoints["lr0.01"][1]  # checkpoints/epoch=4.ckpt
    [found] = populated.read(lambda s: chain(s, str(checkpoint)))
    assert found["type"] == vocabulary.CHECKPOINT
    assert found["uri"] == str(checkpoint)
    [run] = found["produced_by"]
    assert run["type"] == vocabulary.TRAINING_RUN
    assert run["name"] == "exp/lr0.01"
    assert run["state"] == "COMPLETE"
    hparams, _ = TRIALS["lr0.01"]
    assert run["hparams"] == {k: float(v) if type(v) is int else v for k, v in hparams.items()}
    assert [c["name"] for c in run["contexts"]] == ["exp"]
    data = [o for o in run["outputs"] if o["type"] == vocabulary.EVENT_FILE]
    on_disk = [
        str(populated.logdir.path / "lr0.01" / f)
        for f in os.listdir(populated.logdir.path / "lr0.01")
        if "tfevents" in f
    ]
    assert sorted(d["uri"] for d in data) == sorted(on_disk)
    assert all(d["properties"]["records"] == records_in(d["uri"]) for d in data)
    # The other checkpoint of the run is an output too.
    assert str(populated.logdir.checkpoints["lr0.01"][0]) in {o["uri"] for o in run["outputs"]}


def test_a_relative_path_is_found(populated: Populated, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(populated.logdir.path / OFFICIAL)
    [found] = populated.read(lambda s: chain(s, "model.safetensors"))
    [run] = found["produced_by"]
    assert run["state"] == "FAILED"
    assert run["hparams"] == {
        k: float(v) if type(v) is int else v for k, v in OFFICIAL_HPARAMS.items()
    }


def test_an_unknown_uri_says_so(populated: Populated) -> None:
    with pytest.raises(LineageNotFound, match="no artifact"):
        populated.read(lambda s: chain(s, "/nowhere/model.pt"))


def test_graph_hops(populated: Populated) -> None:
    checkpoint = populated.logdir.checkpoints["lr0.1"][0]
    [artifact] = populated.read(lambda s: s.get_artifacts_by_uri(str(checkpoint)))
    zero = populated.read(lambda s: lineage_graph(s, artifact.id, 0))
    assert [n["id"] for n in zero["nodes"]] == [f"artifact:{artifact.id}"]
    assert zero["edges"] == []
    one = populated.read(lambda s: lineage_graph(s, artifact.id, 1))
    [run] = [n for n in one["nodes"] if n["kind"] == "execution"]
    assert run["type"] == vocabulary.TRAINING_RUN and run["name"] == "exp/lr0.1"
    assert run["boardd"] is True
    assert one["edges"] == [
        {"source": run["id"], "target": f"artifact:{artifact.id}", "type": "OUTPUT"}
    ]
    two = populated.read(lambda s: lineage_graph(s, artifact.id, 2))
    outputs = populated.read(lambda s: s.get_events_by_execution_ids([run["record_id"]]))
    assert {n["id"] for n in two["nodes"] if n["kind"] == "artifact"} == {
        f"artifact:{e.artifact_id}" for e in outputs
    }
    assert len(two["edges"]) == len(outputs)
    assert two["truncated"] is False
    with pytest.raises(LineageNotFound):
        populated.read(lambda s: lineage_graph(s, 10**9, 2))
