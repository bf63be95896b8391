"""TensorBoard's projector plugin on boardd: the embeddings tensorboardX's (and PyTorch's)
``add_embedding`` writes beside the event files (``projector_config.pbtxt``, TSV points and
labels, a sprite), request by request against TensorBoard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import Pair, pair

pytestmark = [
    pytest.mark.slow,
    pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server"),
]

RUNS = {"words", "plain"}
#: A square number: tensorboardX tiles the sprite in a square it does not initialise
#: (np.ndarray), so any tile left empty holds whatever memory held (NaN: a warning, an error
#: here). 36 thumbnails fill 6 × 6.
POINTS = 36


@pytest.fixture(scope="module")
def projector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("projector")
    logdir = root / "logs"
    rng = np.random.default_rng(2)
    with SummaryWriter(str(logdir / "words")) as w:
        w.add_scalar("loss", 1.0, 0)
        # Labels of one column, then of two (a header row), and a sprite.
        w.add_embedding(rng.normal(size=(POINTS, 5)), metadata=[f"w{i}" for i in range(POINTS)])
        w.add_embedding(
            rng.normal(size=(POINTS, 3)),
            metadata=[[f"w{i}", str(i % 3)] for i in range(POINTS)],
            metadata_header=["word", "class"],
            label_img=rng.random((POINTS, 3, 8, 8)),
            global_step=7,
            tag="with sprite",
        )
    with SummaryWriter(str(logdir / "plain")) as w:
        w.add_scalar("loss", 1.0, 0)
    with pair(root, logdir, None, RUNS) as p:
        yield p


def names(p: Pair, run: str) -> list[str]:
    info = p.tb.get("/data/plugin/projector/info", params={"run": run}).json()
    return [e["tensorName"] for e in info["embeddings"]]


def test_the_tab_is_enabled(projector: Pair) -> None:
    # TensorBoard looks for embeddings in a thread its first listing starts: it says so from
    # a later one.
    deadline = time.monotonic() + 10
    while True:
        theirs, ours = projector.both("GET", "/data/plugins_listing")
        if theirs.json()["projector"]["enabled"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ours.json()["projector"] == theirs.json()["projector"]
    assert ours.json()["projector"]["enabled"] is True


def test_runs_and_info(projector: Pair) -> None:
    theirs, ours = projector.both("GET", "/data/plugin/projector/runs")
    assert ours.json() == theirs.json() == ["words"]
    theirs, ours = projector.both("GET", "/data/plugin/projector/info", params={"run": "words"})
    assert ours.status_code == theirs.status_code == 200
    assert ours.json() == theirs.json()
    assert [e["tensorShape"] for e in ours.json()["embeddings"]] == [[POINTS, 5], [POINTS, 3]]


@pytest.mark.parametrize("rows", [None, "10"])
def test_tensors_and_labels(projector: Pair, rows: str | None) -> None:
    answers = {}
    for name in names(projector, "words"):
        params = {"run": "words", "name": name} | ({"num_rows": rows} if rows else {})
        for route in ("tensor", "metadata"):
            theirs, ours = projector.both("GET", f"/data/plugin/projector/{route}", params=params)
            assert ours.status_code == theirs.status_code == 200, (route, theirs.text)
            assert ours.content == theirs.content, route
            answers[route] = ours
    # The last embedding's: [rows, 3] float32, and labels with their header row.
    count = int(rows) if rows else POINTS
    assert np.frombuffer(answers["tensor"].content, dtype="<f4").shape == (count * 3,)
    labels = answers["metadata"].text.splitlines()
    assert labels[0] == "word\tclass"
    assert len(labels) == count + 1


def test_sprite(projector: Pair) -> None:
    name = names(projector, "words")[1]
    params = {"run": "words", "name": name}
    theirs, ours = projector.both("GET", "/data/plugin/projector/sprite_image", params=params)
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content
    assert ours.headers["content-type"] == theirs.headers["content-type"] == "image/png"


@pytest.mark.parametrize(
    ("route", "params"),
    [
        ("info", {"run": "plain"}),
        ("tensor", {"run": "words", "name": "nope"}),
        ("metadata", {"run": "words"}),
        ("tensor", {"run": "words", "name": "x", "num_rows": "0"}),
        ("sprite_image", {"run": "words", "name": "nope"}),
        ("bookmarks", {"run": "words", "name": "nope"}),
    ],
)
def test_bad_requests(projector: Pair, route: str, params: dict[str, str]) -> None:
    theirs, ours = projector.both("GET", f"/data/plugin/projector/{route}", params=params)
    assert theirs.status_code == ours.status_code == 400


@pytest.mark.parametrize("name", ["index.js", "projector_binary.html", "projector_binary.js"])
def test_the_projector_page(projector: Pair, name: str) -> None:
    theirs, ours = projector.both("GET", f"/data/plugin/projector/{name}")
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content


def test_files_outside_the_configuration_folder_are_refused(tmp_path: Path) -> None:
    """boardd only, as TensorBoard refuses them: a configuration naming ../secret."""
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    (tmp_path / "secret.tsv").write_text("1\t2\n")
    (logdir / "run" / "projector_config.pbtxt").write_text(
        'embeddings { tensor_name: "t" tensor_path: "../../secret.tsv" }\n'
    )
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_scalar("loss", 1.0, 0)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db)
    server = ThreadedServer(create_app([ExperimentSpec("logs", logdir, db)])).start()
    try:
        got = httpx.get(
            server.url + "/data/plugin/projector/tensor", params={"run": "run", "name": "t"}
        )
    finally:
        server.stop()
    assert got.status_code == 400
    assert "outside the config directory" in got.json()["error"]["message"]


@pytest.mark.parametrize(("name", "status"), [("projector", 200), ("scalars", 400), ("nope", 404)])
def test_the_plugin_entry_page(projector: Pair, name: str, status: int) -> None:
    """The page TensorBoard's UI opens in an iframe for the projector (it imports the module)."""
    theirs, ours = projector.both("GET", "/data/plugin_entry.html", params={"name": name})
    assert theirs.status_code == ours.status_code == status
    if status == 200:
        assert ours.text == theirs.text
        assert ours.headers["content-type"] == theirs.headers["content-type"]
