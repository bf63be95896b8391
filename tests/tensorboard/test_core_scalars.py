"""TensorBoard's core and scalars routes on boardd, answer for answer against the real
TensorBoard on the same logdir."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from tests.tensorboard.conftest import RICH_RUNS, Pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")


def same(a: Any, b: Any) -> bool:
    """Equal JSON, floats compared exactly (NaN spelled "NaN" on both sides)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def csv_rows(text: str) -> list[list[Any]]:
    """CSV rows, numbers as floats: an int scalar is a float in boardd's store, so its CSV says
    7.0 where TensorBoard's says 7 (the documentation lists it)."""
    rows: list[list[Any]] = [line.split(",") for line in text.splitlines()]
    head, body = rows[0], rows[1:]
    return [head] + [[float(x) if x != "nan" else "nan" for x in row] for row in body]


def test_runs_in_tensorboards_order(keep_all: Pair) -> None:
    tb, ours = keep_all.both("GET", "/data/runs")
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    assert set(ours.json()) == RICH_RUNS


def test_plugins_listing_enabled_as_tensorboard(keep_all: Pair) -> None:
    tb, ours = keep_all.both("GET", "/data/plugins_listing")
    assert list(ours.json()) == list(tb.json())
    for name, entry in tb.json().items():
        assert ours.json()[name] == entry, name


@pytest.mark.parametrize(
    "path",
    [
        "/data/experiments",
        "/data/experiment_runs",
        "/data/window_properties",
        # The Debugger V2 tab asks it when opened (boardd answered 404: a console error).
        "/data/plugin/debugger-v2/runs",
    ],
)
def test_small_core_routes(keep_all: Pair, path: str) -> None:
    tb, ours = keep_all.both("GET", path)
    assert (ours.status_code, ours.json()) == (tb.status_code, tb.json())


def test_environment_and_logdir(keep_all: Pair) -> None:
    tb, ours = keep_all.both("GET", "/data/environment")
    for field in ("version", "data_location", "window_title", "experiment_name", "creation_time"):
        assert ours.json()[field] == tb.json()[field], field
    tb, ours = keep_all.both("GET", "/data/logdir")
    assert ours.json() == tb.json()


def test_scalar_tags(keep_all: Pair) -> None:
    tb, ours = keep_all.both("GET", "/data/plugin/scalars/tags")
    assert ours.json() == tb.json()
    assert "<strong>f64</strong>" in ours.json()["typed"]["f64"]["description"]


def test_every_scalar_series_json_and_csv(keep_all: Pair) -> None:
    tags = keep_all.tb.get("/data/plugin/scalars/tags").json()
    count = 0
    for run, by_tag in tags.items():
        for tag in by_tag:
            params = {"run": run, "tag": tag}
            tb, ours = keep_all.both("GET", "/data/plugin/scalars/scalars", params=params)
            assert ours.status_code == 200, ours.text
            assert len(ours.json()) == len(tb.json())
            assert all(map(same, ours.json(), tb.json())) or ours.json() == tb.json(), (run, tag)
            tb, ours = keep_all.both(
                "GET", "/data/plugin/scalars/scalars", params={**params, "format": "csv"}
            )
            assert csv_rows(ours.text) == csv_rows(tb.text), (run, tag)
            assert ours.headers["content-type"].startswith("text/csv")
            count += 1
    assert count >= 9


def test_non_finite_scalars_spelled_as_tensorboard(keep_all: Pair) -> None:
    tb, ours = keep_all.both(
        "GET", "/data/plugin/scalars/scalars", params={"run": "train", "tag": "loss"}
    )
    assert ours.json() == tb.json()
    values = {row[1]: row[2] for row in ours.json()}
    assert (values[13], values[17], values[19]) == ("NaN", "Infinity", "-Infinity")


def test_scalars_multirun_form_and_xsrf(keep_all: Pair) -> None:
    form = {"tag": "loss", "runs": ["train", "eval", "nested/deep/run", "nope"]}
    tb, ours = keep_all.both(
        "POST",
        "/data/plugin/scalars/scalars_multirun",
        data=form,
        headers={"X-XSRF-Protected": "1"},
    )
    assert ours.status_code == 200
    assert ours.json() == tb.json()
    # Multipart, as TensorBoard's UI posts its FormData.
    files = {"tag": (None, "loss"), "runs": (None, "eval")}
    tb, ours = keep_all.both(
        "POST",
        "/data/plugin/scalars/scalars_multirun",
        files=files,
        headers={"X-XSRF-Protected": "1"},
    )
    assert ours.json() == tb.json() and list(ours.json()) == ["eval"]
    # Without the header, and not marked same-origin by a browser (curl, or a cross-site form
    # post): refused. (The installed TensorBoard, 2.21, checks nothing and answers 200;
    # docs/tensorboard.md lists it.)
    route = "/data/plugin/scalars/scalars_multirun"
    own = keep_all.boardd.url  # http://127.0.0.1:PORT
    other = own.rsplit(":", 1)[0] + ":1"
    for headers in (
        {},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another port of this host
        {"Origin": other},
        {"Origin": "null"},
        {"Origin": own, "Sec-Fetch-Site": "cross-site"},  # the browser's word wins
    ):
        _, ours = keep_all.both("POST", route, data=form, headers=headers)
        assert ours.status_code == 400, headers
        assert "X-XSRF-Protected" in ours.json()["error"]["message"]
    # The Scalars tab's own posts (its FormData, no header), which the browser marks as made
    # by this server's page: answered as TensorBoard answers them.
    for headers in ({"Sec-Fetch-Site": "same-origin"}, {"Origin": own}):
        _, ours = keep_all.both("POST", route, files=files, headers=headers)
        assert ours.status_code == 200, headers
        assert ours.json() == tb.json(), headers


def test_missing_series_and_unknown_routes(keep_all: Pair) -> None:
    tb, ours = keep_all.both(
        "GET", "/data/plugin/scalars/scalars", params={"run": "nope", "tag": "loss"}
    )
    assert (tb.status_code, ours.status_code) == (404, 404)
    assert ours.json()["error"]["code"] == "not_found"
    tb, ours = keep_all.both("GET", "/data/plugin/scalars/scalars", params={"run": "train"})
    assert (tb.status_code, ours.status_code) == (400, 400)
    _, ours = keep_all.both("GET", "/data/no_such_route")
    assert ours.status_code == 404 and ours.json()["error"]["code"] == "not_found"


def test_defaults_downsample_as_tensorboard(defaults: Pair) -> None:
    """With the default sampling both answer at most 1000 points per scalar series, ending
    at the same last step (which points in between differ: see docs/tensorboard.md)."""
    tb, ours = defaults.both("GET", "/data/plugin/scalars/tags")
    assert ours.json() == tb.json()
    tb, ours = defaults.both(
        "GET", "/data/plugin/scalars/scalars", params={"run": "train", "tag": "acc"}
    )
    assert len(ours.json()) == len(tb.json())
    assert ours.json()[-1] == tb.json()[-1]


def test_a_repeated_parameter_is_read_as_tensorboard_reads_it(keep_all: Pair) -> None:
    """``?run=a&run=b``: TensorBoard (werkzeug) takes the first value; Starlette's ``get``
    takes the last, so boardd answered for the other run."""
    tags = keep_all.tb.get("/data/plugin/scalars/tags").json()
    first, second = sorted(run for run, by_tag in tags.items() if "loss" in by_tag)[:2]
    for path in ("/data/plugin/scalars/scalars", "/data/plugin/scalars/scalars?format=csv"):
        url = f"{path}{'&' if '?' in path else '?'}run={first}&run={second}&tag=loss&tag=nope"
        tb, ours = keep_all.both("GET", url)
        assert tb.status_code == ours.status_code == 200
        if "csv" in path:
            assert csv_rows(ours.text) == csv_rows(tb.text)
        else:
            assert ours.json() == tb.json()
        alone = keep_all.boardd.url + path + ("&" if "?" in path else "?")
        assert ours.text == httpx.get(f"{alone}run={first}&tag=loss", timeout=30).text
