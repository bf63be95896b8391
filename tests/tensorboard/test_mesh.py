"""TensorBoard's mesh plugin on boardd: meshes and point clouds as tensorboardX's (and
PyTorch's) ``add_mesh`` writes them, request by request against TensorBoard (the ``data``
route's bytes compared as bytes)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from tests.tensorboard.conftest import Pair, pair

pytestmark = [
    pytest.mark.slow,
    pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server"),
]

WALL = 1_700_000_000.0
RUNS = {"shapes", "cloud"}
#: More steps than TensorBoard answers by default (10), so that the sampling matters.
STEPS = 14
CONFIG = {"camera": {"cls": "PerspectiveCamera", "fov": 75}}


@pytest.fixture(scope="module", params=["defaults", "keep_all"])
def meshes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("mesh")
    logdir = root / "logs"
    rng = np.random.default_rng(5)
    # A batch of two tetrahedra with faces and colours, at every step.
    faces = np.array([[[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]] * 2, dtype=np.int32)
    with SummaryWriter(str(logdir / "shapes")) as w:
        for step in range(STEPS):
            vertices = rng.normal(size=(2, 4, 3)).astype(np.float32)
            colors = rng.integers(0, 256, (2, 4, 3), dtype=np.uint8)
            w.add_mesh("tetra", vertices, colors, faces, CONFIG, step, walltime=WALL + step)
    # A point cloud: vertices alone, no configuration.
    with SummaryWriter(str(logdir / "cloud")) as w:
        for step in (0, 5):
            w.add_mesh("points", rng.normal(size=(1, 50, 3)), global_step=step, walltime=WALL)
    sampling = {"mesh": 100} if request.param == "keep_all" else None
    with pair(root, logdir, sampling, RUNS) as p:
        yield p


def test_the_tab_is_enabled(meshes: Pair) -> None:
    theirs, ours = meshes.both("GET", "/data/plugins_listing")
    assert ours.json()["mesh"] == theirs.json()["mesh"]
    assert ours.json()["mesh"]["enabled"] is True


def test_tags(meshes: Pair) -> None:
    theirs, ours = meshes.both("GET", "/data/plugin/mesh/tags")
    assert ours.status_code == theirs.status_code == 200
    assert (
        ours.json()
        == theirs.json()
        == {
            "shapes": {"tetra": {"samples": 2}},
            "cloud": {"points": {"samples": 1}},
        }
    )


@pytest.mark.parametrize(("run", "tag"), [("shapes", "tetra"), ("cloud", "points")])
def test_meshes(meshes: Pair, run: str, tag: str) -> None:
    theirs, ours = meshes.both("GET", "/data/plugin/mesh/meshes", params={"run": run, "tag": tag})
    assert ours.status_code == theirs.status_code == 200
    # The same steps (TensorBoard's reservoir and boardd's sample choose the same ones when
    # they keep all of them; with the default both keep 10 of 14, and the last).
    a, b = theirs.json(), ours.json()
    assert len(a) == len(b) > 0
    if len({entry["step"] for entry in a}) == len({entry["step"] for entry in b}) and (
        sorted({e["step"] for e in a}) == sorted({e["step"] for e in b})
    ):
        assert b == a
    else:
        key = lambda e: (e["content_type"], e["components"], e["config"], e["data_shape"])  # noqa: E731
        assert sorted(map(key, b)) == sorted(map(key, a))
        assert a[-1]["step"] == b[-1]["step"]


@pytest.mark.parametrize(
    ("run", "tag", "content_type", "step", "sample"),
    [
        ("shapes", "tetra", "VERTEX", "13", "0"),
        ("shapes", "tetra", "VERTEX", "13", "1"),
        ("shapes", "tetra", "FACE", "13", "1"),
        ("shapes", "tetra", "COLOR", "13.0", "0"),
        ("cloud", "points", "VERTEX", "5", "0"),
        ("cloud", "points", "VERTEX", None, "0"),  # step 0 by default
        ("cloud", "points", "COLOR", "5", "0"),  # no colours: empty
        ("cloud", "points", "VERTEX", "3", "0"),  # no such step: empty
    ],
)
def test_data_bytes(
    meshes: Pair, run: str, tag: str, content_type: str, step: str | None, sample: str
) -> None:
    params = {"run": run, "tag": tag, "content_type": content_type, "sample": sample}
    if step is not None:
        params["step"] = step
    theirs, ours = meshes.both("GET", "/data/plugin/mesh/data", params=params)
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content


def test_data_holds_the_vertices(meshes: Pair) -> None:
    """The comparison above is not of two empty answers."""
    _, ours = meshes.both(
        "GET",
        "/data/plugin/mesh/data",
        params={"run": "shapes", "tag": "tetra", "content_type": "FACE", "step": "13"},
    )
    faces = np.frombuffer(ours.content, dtype="<i4").reshape(-1, 3)
    assert faces.tolist() == [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]


@pytest.mark.parametrize(
    ("params", "tensorboard"),
    [
        ({"run": "shapes", "tag": "tetra", "content_type": "EDGES"}, 400),
        ({"run": "shapes", "tag": "tetra", "content_type": "VERTEX", "sample": "x"}, 500),
        (
            {"run": "shapes", "tag": "tetra", "content_type": "VERTEX", "sample": "7", "step": "1"},
            500,
        ),
        ({"run": "shapes", "tag": "tetra", "content_type": "VERTEX", "step": "one"}, 500),
    ],
)
def test_bad_data_requests_are_400(meshes: Pair, params: dict[str, str], tensorboard: int) -> None:
    """TensorBoard answers a plain-text 400 or crashes (500); boardd's 400 names the problem."""
    theirs, ours = meshes.both("GET", "/data/plugin/mesh/data", params=params)
    assert theirs.status_code == tensorboard
    assert ours.status_code == 400, ours.text


def test_meshes_without_a_tag_is_a_400(meshes: Pair) -> None:
    """TensorBoard answers [] (docs/tensorboard.md)."""
    theirs, ours = meshes.both("GET", "/data/plugin/mesh/meshes", params={"run": "shapes"})
    assert (theirs.status_code, theirs.json()) == (200, [])
    assert ours.status_code == 400
    assert "tag" in ours.json()["error"]["message"]
