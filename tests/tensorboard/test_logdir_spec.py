"""Several logdirs (``boardd serve a=PATH b=PATH``) as TensorBoard's ``--logdir_spec
a:PATH,b:PATH`` shows them, the per-experiment and ``/tensorboard`` mounts, gzip, and
``--samples-per-plugin`` meaning what it means to TensorBoard."""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import ThreadedServer, ingest
from tests.tensorboard.conftest import Oracle, tensorboard

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

STEPS = 400


def write(logdir: Path, runs: dict[str, int]) -> None:
    """Runs of scalars (``loss``, ``acc``) with ``runs[run]`` points each, and a root run."""
    for run, count in runs.items():
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(count):
                w.add_scalar("loss", 1.0 / (step + 1), step)
                w.add_scalar("acc", step / count, step)


@dataclass
class Spec:
    tb: Oracle
    boardd: ThreadedServer
    logdirs: dict[str, Path]


@contextlib.contextmanager
def served(
    root: Path, logdirs: dict[str, Path], sampling: dict[str, int | None] | None, runs: set[str]
) -> Iterator[Spec]:
    specs = []
    for name, logdir in logdirs.items():
        db = root / f"{name}.sqlite"
        ingest(logdir, db, sampling, experiment=name)
        specs.append(ExperimentSpec(name, logdir, db))
    server = ThreadedServer(create_app(specs, sampling=sampling)).start()
    try:
        if len(logdirs) == 1:
            # One logdir: TensorBoard's --logdir (boardd does not prefix its run names).
            target, flag = str(next(iter(logdirs.values()))), "--logdir"
        else:
            target = ",".join(f"{name}:{path}" for name, path in logdirs.items())
            flag = "--logdir_spec"
        with tensorboard(target, sampling, runs, root / "tensorboard.log", flag=flag) as tb:
            yield Spec(tb, server, logdirs)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spec]:
    root = tmp_path_factory.mktemp("spec")
    a, b = root / "a", root / "b"
    write(a, {"train": STEPS, "eval/sub": 20, ".": 5})
    write(b, {"train": 30, "other": 7})
    runs = {"a/train", "a/eval/sub", "a/.", "b/train", "b/other"}
    with served(root, {"a": a, "b": b}, None, runs) as spec:
        yield spec


def get(base: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.get(base + path, timeout=30, **kwargs)  # type: ignore[arg-type]


def test_runs_and_tags_named_as_logdir_spec(two: Spec) -> None:
    for path in (
        "/data/runs",
        "/data/plugin/scalars/tags",
        "/data/plugins_listing",
        "/data/logdir",
    ):
        tb, ours = get(two.tb.url, path), get(two.boardd.url, path)
        assert ours.status_code == 200, ours.text
        assert ours.json() == tb.json(), path
    assert get(two.boardd.url, "/data/runs").json()[-1] in {"a/.", "b/other"}


def test_every_series_as_tensorboard(two: Spec) -> None:
    tags = get(two.tb.url, "/data/plugin/scalars/tags").json()
    for run, by_tag in tags.items():
        for tag in by_tag:
            params = {"run": run, "tag": tag}
            tb = get(two.tb.url, "/data/plugin/scalars/scalars", params=params)
            ours = get(two.boardd.url, "/data/plugin/scalars/scalars", params=params)
            assert ours.json() == tb.json(), (run, tag)
    form = {"tag": "loss", "runs": ["a/train", "b/train", "b/nope", "c/x"]}
    headers = {"X-XSRF-Protected": "1"}
    url = "/data/plugin/scalars/scalars_multirun"
    tb = httpx.post(two.tb.url + url, data=form, headers=headers)
    ours = httpx.post(two.boardd.url + url, data=form, headers=headers)
    assert ours.json() == tb.json() and set(ours.json()) == {"a/train", "b/train"}


def test_one_experiment_under_its_path(two: Spec) -> None:
    """``/experiment/a/data/...`` answers for ``a`` alone, with its own run names (TensorBoard
    ignores the experiment there; boardd scopes it)."""
    ours = get(two.boardd.url, "/experiment/a/data/runs").json()
    assert sorted(ours) == [".", "eval/sub", "train"]
    tags = get(two.boardd.url, "/experiment/b/data/plugin/scalars/tags").json()
    assert set(tags) == {"train", "other"}
    answer = get(
        two.boardd.url,
        "/experiment/b/data/plugin/scalars/scalars",
        params={"run": "other", "tag": "loss"},
    )
    assert [row[1] for row in answer.json()] == list(range(7))
    missing = get(two.boardd.url, "/experiment/zz/data/runs")
    assert missing.status_code == 404 and "zz" in missing.json()["error"]["message"]


def test_tensorboard_mount_answers_the_same(two: Spec) -> None:
    for path in ("/data/runs", "/data/plugin/scalars/tags", "/experiment/a/data/runs"):
        direct = get(two.boardd.url, path)
        mounted = get(two.boardd.url, "/tensorboard" + path)
        assert (mounted.status_code, mounted.json()) == (200, direct.json()), path


def test_gzip_and_etag(two: Spec) -> None:
    params = {"run": "a/train", "tag": "loss"}
    url = two.boardd.url + "/data/plugin/scalars/scalars"
    with httpx.Client(headers={"accept-encoding": "gzip"}) as client:
        raw = client.stream("GET", url, params=params)
        with raw as response:
            assert response.headers["content-encoding"] == "gzip"
            body = b"".join(response.iter_raw())
        assert len(gzip.decompress(body)) > len(body)
        etag = response.headers["etag"]
        again = client.get(url, params=params, headers={"if-none-match": etag})
        assert again.status_code == 304


def test_samples_per_plugin_means_what_it_means_to_tensorboard(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``scalars=50``: both keep (and answer) at most 50 points per series, the last step
    among them; a series with fewer keeps them all."""
    root = tmp_path_factory.mktemp("sampling")
    logdir = root / "logs"
    write(logdir, {"long": 300, "short": 9})
    sampling: dict[str, int | None] = {"scalars": 50}
    with served(root, {"logs": logdir}, sampling, {"long", "short"}) as spec:
        for run, expected in (("long", 50), ("short", 9)):
            params = {"run": run, "tag": "loss"}
            tb = get(spec.tb.url, "/data/plugin/scalars/scalars", params=params).json()
            ours = get(spec.boardd.url, "/data/plugin/scalars/scalars", params=params).json()
            assert len(ours) == len(tb) == expected
            assert ours[-1][1:] == tb[-1][1:]
