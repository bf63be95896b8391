"""``boardd export --scalars``: a store's scalar series as CSV (byte for byte the data API's CSV
answer) or JSON lines, read a block of points at a time (``data.series.scalar_chunks``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import httpx
import pytest

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.data import series as data_series
from boardd.data.connections import open_store
from boardd.data.kinds import SCALARS
from boardd.exitcodes import ExitCode
from tests.cli.test_ingest import boardd
from tests.client.test_scalar_streams import RUNS, write_logdir
from tests.conftest import WAIT, ThreadedServer, ingest

Point = tuple[str, str, int, float, float]
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> ExperimentSpec:
    root = tmp_path_factory.mktemp("export-scalars")
    write_logdir(root / "logs")
    ingest(root / "logs", root / "store.sqlite", experiment="exp", sampling={"*": None})
    return ExperimentSpec("exp", root / "logs", root / "store.sqlite")


def stored(db: Path, **bounds: int) -> list[Point]:
    """Every scalar point of the store as read whole (read_scalars), in the export's order."""
    connection = open_store(db)
    try:
        experiment = connection.execute("SELECT id FROM experiments").get
        found = data_series.list_series(
            connection, int(experiment), SCALARS, data_series.Selection("scalars")
        )
        columns = data_series.read_scalars(connection, found, data_series.Bounds(**bounds))
    finally:
        connection.close()
    return [
        (c.run, c.tag, *point)
        for c in columns
        for point in zip(c.steps.tolist(), c.wall_times.tolist(), c.values.tolist(), strict=True)
    ]


def same(a: list[Point], b: list[Point]) -> None:
    """Equal point for point, NaN equal to NaN."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x[:4] == y[:4] and (x[4] == y[4] or (math.isnan(x[4]) and math.isnan(y[4]))), (x, y)


def test_csv_parses_back_to_the_stored_points(spec: ExperimentSpec, tmp_path: Path) -> None:
    out = tmp_path / "scalars.csv"
    done = boardd("export", "--db", spec.db, "--scalars", out)
    assert done.returncode == ExitCode.OK, done.stderr
    assert "exported" in done.stderr and done.stdout == ""
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["run", "tag", "step", "wall_time", "value"]
    points = [
        (r, t, int(s), float(w), NON_FINITE[v] if v in NON_FINITE else float(v))
        for r, t, s, w, v in rows[1:]
    ]
    same(points, stored(spec.db))
    assert {p[0] for p in points} == set(RUNS)
    assert any(math.isinf(p[4]) for p in points) and any(math.isnan(p[4]) for p in points)
    # Byte for byte what the data API answers for format=csv.
    server = ThreadedServer(create_app([spec], sampling={"*": None})).start()
    try:
        answer = httpx.get(f"{server.url}/api/v1/scalars", params={"format": "csv"}, timeout=WAIT)
    finally:
        server.stop()
    assert answer.status_code == 200 and out.read_bytes() == answer.content


def test_json_lines_to_stdout_with_a_selection(spec: ExperimentSpec) -> None:
    done = boardd(
        "export", "--db", spec.db, "--scalars", "-", "--format", "jsonl",
        "--run", RUNS[1], "--tag", "loss", "--step-min", "3", "--step-max", "40",
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    points = [
        (d["run"], d["tag"], d["step"], d["wall_time"], NON_FINITE.get(d["value"], d["value"]))
        for d in lines
    ]
    expected = [p for p in stored(spec.db, step_min=3, step_max=40) if p[:2] == (RUNS[1], "loss")]
    same(points, expected)
    assert points and "exported" in done.stderr


def test_blocks_are_bounded_and_make_the_series(spec: ExperimentSpec) -> None:
    connection = open_store(spec.db)
    try:
        experiment = int(connection.execute("SELECT id FROM experiments").get)
        found = data_series.list_series(
            connection, experiment, SCALARS, data_series.Selection("scalars")
        )
        for s in found:
            blocks = list(data_series.scalar_chunks(connection, s, step_min=2, chunk_points=7))
            assert all(len(b.steps) <= 7 for b in blocks) and len(blocks) > 1
            (whole,) = data_series.read_scalars(connection, [s], data_series.Bounds(step_min=2))
            for name in ("steps", "wall_times", "values"):
                joined = [v for b in blocks for v in getattr(b, name).tolist()]
                assert str(joined) == str(getattr(whole, name).tolist()), name  # NaN as text
    finally:
        connection.close()


def test_usage_and_an_existing_file(spec: ExperimentSpec, tmp_path: Path) -> None:
    out = tmp_path / "taken.csv"
    out.write_text("mine")
    refused = boardd("export", "--db", spec.db, "--scalars", out)
    assert refused.returncode == ExitCode.BAD_STORE and "--force" in refused.stderr
    assert out.read_text() == "mine"
    assert boardd("export", "--db", spec.db, "--scalars", out, "--force").returncode == 0
    assert out.read_text().startswith("run,tag,step")
    assert not list(tmp_path.glob("*.partial"))
    alone = boardd("export", "--db", spec.db, "--out", tmp_path / "c.sqlite", "--tag", "loss")
    assert alone.returncode == ExitCode.USAGE and "--tag" in alone.stderr
    neither = boardd("export", "--db", spec.db)
    assert neither.returncode == ExitCode.USAGE
    plugin = boardd("export", "--db", spec.db, "--scalars", "-", "--plugin", "nope")
    assert plugin.returncode == ExitCode.USAGE and "known: scalars" in plugin.stderr
