"""/api/v1/distributions, /pr_curves, /text and /descriptions: the numbers of TensorBoard's own
routes (served by boardd from the same store) in the documented shapes, 404 for what does not
exist, answers that fit their schemas, cached with an ETag."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from boardd.config import ExperimentSpec
from tests.api.conftest import ALL, WALL, assert_error, get_json, serve
from tests.api.test_openapi import response_schema, schema_validator
from tests.conftest import ingest

STEPS = range(0, 60, 3)
#: A description with Markdown and what the cleaner must escape.
DESCRIPTION = "the **loss**, see [docs](https://example.com) <script>alert(1)</script>"


def write_logdir(logdir: Path) -> None:
    """Run "a": histograms, PR curves and Markdown text; run "b": histograms only; a scalar
    with a description (TensorBoard's writer: tensorboardX writes none)."""
    rng = np.random.default_rng(7)
    with SummaryWriter(str(logdir / "a")) as w:
        for step in STEPS:
            t = WALL + step
            w.add_histogram("w", rng.normal(size=300) * (1 + step), step, walltime=t)
            labels = rng.integers(0, 2, 80)
            w.add_pr_curve("pr", labels, rng.random(80), step, num_thresholds=21, walltime=t)
            w.add_text(
                "note",
                f"step **{step}** <script>x</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |",
                step,
                walltime=t,
            )
    with SummaryWriter(str(logdir / "b")) as w:
        for step in range(5):
            w.add_histogram("w", rng.normal(size=50), step, walltime=WALL + step)
    writer = EventFileWriter(str(logdir / "a"), filename_suffix=".described")
    for step in range(3):
        event = tb_event_pb2.Event(wall_time=WALL + step, step=step)
        event.summary.value.add(
            tag="described",
            tensor=tensor_util.make_tensor_proto(float(step)),
            metadata=scalar_metadata.create_summary_metadata(
                display_name="described", description=DESCRIPTION
            ),
        )
        writer.add_event(event)
    writer.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("plugin_data")
    logdir = root / "logs"
    write_logdir(logdir)
    db = root / "store.sqlite"
    ingest(logdir, db, ALL, experiment="exp")
    with serve(ExperimentSpec("exp", logdir, db)) as c:
        yield c


def tensorboard(client: TestClient, route: str, **params: Any) -> Any:
    """TensorBoard's own route, as boardd serves it for the experiment."""
    return get_json(client, f"/experiment/exp/data/plugin/{route}", **params)


def fits(path: str, body: Any) -> None:
    schema_validator(response_schema(path, 200)).validate(body)


def test_distributions_are_tensorboards(client: TestClient) -> None:
    for run in ("a", "b"):
        mine = get_json(client, "/api/v1/distributions", run=run, tag="w")
        fits("/api/v1/distributions", mine)
        theirs = tensorboard(client, "distributions/distributions", run=run, tag="w")
        assert len(mine) == len(theirs) > 0
        assert [
            [d["wall_time"], d["step"], [[p["basis_point"], p["value"]] for p in d["percentiles"]]]
            for d in mine
        ] == theirs


def test_pr_curves_are_tensorboards(client: TestClient) -> None:
    mine = get_json(client, "/api/v1/pr_curves", run="a", tag="pr")
    fits("/api/v1/pr_curves", mine)
    theirs = tensorboard(client, "pr_curves/pr_curves", run="a", tag="pr")["a"]
    assert [d["step"] for d in mine] == list(STEPS)
    assert mine == theirs  # the same fields, one run's list


def test_text_is_tensorboards(client: TestClient) -> None:
    mine = get_json(client, "/api/v1/text", run="a", tag="note/text_summary")
    fits("/api/v1/text", mine)
    theirs = tensorboard(client, "text/text", run="a", tag="note/text_summary")
    assert [(d["step"], d["wall_time"], d["html"]) for d in mine] == [
        (d["step"], d["wall_time"], d["text"]) for d in theirs
    ]
    html = mine[-1]["html"]
    assert "<strong>57</strong>" in html and "<table>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_descriptions_are_tensorboards(client: TestClient) -> None:
    mine = get_json(client, "/api/v1/descriptions", plugin="scalars")
    fits("/api/v1/descriptions", mine)
    theirs = tensorboard(client, "scalars/tags")
    assert mine == {"a": {"described": theirs["a"]["described"]["description"]}}
    html = mine["a"]["described"]
    assert "<strong>loss</strong>" in html and '<a href="https://example.com">' in html
    assert "<script>" not in html
    # Series without a description are left out; a plugin without any answers {}.
    assert get_json(client, "/api/v1/descriptions", plugin="histograms") == {}
    assert get_json(client, "/api/v1/descriptions", plugin="images") == {}
    error = assert_error(client.get("/api/v1/descriptions", params={"plugin": "scalar"}), 400)
    assert "scalars" in error["message"]


@pytest.mark.parametrize(
    ("path", "tag"),
    [
        ("/api/v1/distributions", "w"),
        ("/api/v1/pr_curves", "pr"),
        ("/api/v1/text", "note/text_summary"),
    ],
)
def test_unknown_series_are_404(client: TestClient, path: str, tag: str) -> None:
    assert_error(client.get(path, params={"run": "nope", "tag": tag}), 404)
    assert_error(client.get(path, params={"run": "a", "tag": "nope"}), 404)
    assert_error(client.get(path, params={"run": "a", "tag": tag, "experiment": "x"}), 404)
    assert_error(client.get(path, params={"tag": tag}), 400)
    assert_error(client.get(path, params={"run": "a"}), 400)
    assert_error(client.get(path, params={"run": "a", "tag": tag, "downsample": "-1"}), 400)


@pytest.mark.parametrize(
    ("path", "tag"),
    [
        ("/api/v1/distributions", "w"),
        ("/api/v1/pr_curves", "pr"),
        ("/api/v1/text", "note/text_summary"),
    ],
)
def test_downsample_keeps_the_ends(client: TestClient, path: str, tag: str) -> None:
    steps = [d["step"] for d in get_json(client, path, run="a", tag=tag, downsample=4)]
    assert len(steps) == 4 and steps[0] == STEPS[0] and steps[-1] == STEPS[-1]
    assert get_json(client, path, run="a", tag=tag, downsample=0) == []


def test_default_sampling_is_tensorboards(tmp_path: Path) -> None:
    # --samples-per-plugin bounds both TensorBoard's routes and these.
    logdir = tmp_path / "logs"
    write_logdir(logdir)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, ALL, experiment="exp")
    sampling = {"histograms": 5, "pr_curves": 4, "text": 3}
    with serve(ExperimentSpec("exp", logdir, db), sampling=sampling) as c:
        for path, tag, n in [
            ("/api/v1/distributions", "w", 5),
            ("/api/v1/pr_curves", "pr", 4),
            ("/api/v1/text", "note/text_summary", 3),
        ]:
            assert len(get_json(c, path, run="a", tag=tag)) == n, path
        theirs = tensorboard(c, "distributions/distributions", run="a", tag="w")
        mine = get_json(c, "/api/v1/distributions", run="a", tag="w")
        assert [d["step"] for d in mine] == [d[1] for d in theirs]


def test_answers_carry_an_etag(client: TestClient) -> None:
    params = {"run": "a", "tag": "w"}
    first = client.get("/api/v1/distributions", params=params)
    assert first.status_code == 200
    etag = first.headers["etag"]
    again = client.get("/api/v1/distributions", params=params, headers={"if-none-match": etag})
    assert again.status_code == 304
