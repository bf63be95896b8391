"""TensorBoard's images and audio routes on boardd, against the real TensorBoard on the same
logdir: listings, entries and every blob's bytes.

Blob keys differ (TensorBoard's encode run, tag, step and index; boardd's name the store and
the blob), so entries are compared field by field with their ``query`` followed instead:
each key must give the same bytes, with the same content type, as TensorBoard's key for that
entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from tests.tensorboard.conftest import Pair
from tests.tensorboard.plugin_logdir import LONG_STEPS, plugin_pair

pytestmark = pytest.mark.allow_leaks("module-scoped TensorBoard subprocess and server")

PLUGINS = {"images": ("images", "individualImage"), "audio": ("audio", "individualAudio")}


@pytest.fixture(scope="module")
def plugin_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with plugin_pair(tmp_path_factory, None) as p:
        yield p


def get(pair: Pair, path: str, **kwargs: Any) -> httpx.Response:
    """A request to boardd alone."""
    return httpx.get(pair.boardd.url + path, timeout=30, **kwargs)


def listed(pair: Pair, plugin: str) -> list[tuple[str, str, int]]:
    """Every (run, tag, samples) TensorBoard's tags route lists."""
    tags = pair.tb.get(f"/data/plugin/{plugin}/tags").json()
    return [(run, tag, m["samples"]) for run, by_tag in tags.items() for tag, m in by_tag.items()]


@pytest.mark.parametrize("plugin", PLUGINS)
def test_tags(keep_all: Pair, plugin: str) -> None:
    tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/tags")
    assert ours.status_code == 200
    assert ours.json() == tb.json()


def test_image_samples_are_the_most_images_of_a_step(keep_all: Pair) -> None:
    tags = keep_all.both("GET", "/data/plugin/images/tags")[1].json()
    assert tags["train"]["multi"]["samples"] == 3
    assert tags["train"]["sample"]["samples"] == 1
    assert tags["train"]["multi"]["description"] == "<p>three per step</p>"


def compare_entries(pair: Pair, plugin: str, run: str, tag: str, sample: int) -> int:
    """Compares one listing and every blob of it; the number of entries."""
    route, blob_route = PLUGINS[plugin]
    params = {"run": run, "tag": tag, "sample": str(sample)}
    tb, ours = pair.both("GET", f"/data/plugin/{plugin}/{route}", params=params)
    assert ours.status_code == 200, ours.text
    if tb.status_code == 500:
        # TensorBoard's audio route fails on a sample one past a step's last clip (it skips
        # only steps with fewer than sample clips); boardd skips that step too.
        assert plugin == "audio" and ours.json() == [], (run, tag, sample)
        return 0
    tb_entries, ours_entries = tb.json(), ours.json()
    assert len(ours_entries) == len(tb_entries), (run, tag, sample)
    for a, b in zip(tb_entries, ours_entries, strict=True):
        assert set(b) == set(a)
        assert {k: v for k, v in b.items() if k != "query"} == {
            k: v for k, v in a.items() if k != "query"
        }
        tb_query, ours_query = parse_qs(a["query"]), parse_qs(b["query"])
        assert set(ours_query) == set(tb_query)
        assert ours_query.get("content_type") == tb_query.get("content_type")
        tb_blob = pair.tb.get(f"/data/plugin/{plugin}/{blob_route}?{a['query']}")
        ours_blob = get(pair, f"/data/plugin/{plugin}/{blob_route}?{b['query']}")
        assert ours_blob.status_code == 200
        assert ours_blob.content == tb_blob.content, (run, tag, b["step"])
        assert ours_blob.headers["content-type"] == tb_blob.headers["content-type"]
    return len(ours_entries)


@pytest.mark.parametrize("plugin", PLUGINS)
def test_every_entry_and_blob(keep_all: Pair, plugin: str) -> None:
    total = 0
    for run, tag, samples in listed(keep_all, plugin):
        for sample in range(samples + 1):  # one past the last: no entries
            count = compare_entries(keep_all, plugin, run, tag, sample)
            assert (count == 0) == (sample == samples), (run, tag, sample)
            total += count
    assert total == {"images": 6 + 8 * 3 + 3, "audio": 5}[plugin]


def test_blob_content_types(keep_all: Pair) -> None:
    ours = get(
        keep_all, "/data/plugin/images/images", params={"run": "train", "tag": "multi"}
    ).json()
    image = get(keep_all, f"/data/plugin/images/individualImage?{ours[0]['query']}")
    assert image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    clips = get(
        keep_all, "/data/plugin/audio/audio", params={"run": "train", "tag": "speech"}
    ).json()
    assert {c["contentType"] for c in clips} == {"audio/wav"}
    clip = get(keep_all, f"/data/plugin/audio/individualAudio?{clips[0]['query']}")
    assert clip.headers["content-type"] == "audio/wav"
    assert clip.content[:4] == b"RIFF"


def test_defaults_ten_steps_per_series(defaults: Pair) -> None:
    """With the default sampling both list at most 10 steps per series and end at the same
    last step; which steps in between differs (boardd's seeded choice by step, TensorBoard's
    reservoir): compared by count and last step only."""
    tb, ours = defaults.both("GET", "/data/plugin/images/tags")
    assert ours.json() == tb.json()
    for plugin, run, tag in (("images", "train", "sample"), ("images", "train", "multi"),
                             ("audio", "train", "speech")):  # fmt: skip
        route = PLUGINS[plugin][0]
        params = {"run": run, "tag": tag}
        tb, ours = defaults.both("GET", f"/data/plugin/{plugin}/{route}", params=params)
        assert len(ours.json()) == len(tb.json()) <= 10
        assert ours.json()[-1]["step"] == tb.json()[-1]["step"]
        assert ours.json()[-1]["wall_time"] == tb.json()[-1]["wall_time"]
    tb, ours = defaults.both(
        "GET", "/data/plugin/images/images", params={"run": "train", "tag": "sample"}
    )
    assert len(ours.json()) == 6  # steps 0, 50, ..., 250: all kept


@pytest.mark.parametrize("plugin", PLUGINS)
def test_unknown_series_and_bad_parameters(keep_all: Pair, plugin: str) -> None:
    route, blob_route = PLUGINS[plugin]
    tag = "multi" if plugin == "images" else "speech"
    for params in ({"run": "nope", "tag": tag}, {"run": "train", "tag": "nope"}):
        tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/{route}", params=params)
        assert (tb.status_code, ours.status_code) == (404, 404)
        assert ours.json()["error"]["code"] == "not_found"
    # TensorBoard fails (500) on a missing tag and a sample that is not a number; boardd
    # answers 400. A negative sample TensorBoard takes as an index from the end (width and
    # height are not images); boardd refuses it.
    for params in ({"run": "train"}, {"run": "train", "tag": tag, "sample": "x"}):
        tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/{route}", params=params)
        assert (tb.status_code, ours.status_code) == (500, 400)
        assert ours.json()["error"]["code"] == "bad_request"
    _, ours = keep_all.both(
        "GET", f"/data/plugin/{plugin}/{route}", params={"run": "train", "tag": tag, "sample": "-1"}
    )
    assert ours.status_code == 400
    # A sample past the clips or images a step has: no entry. TensorBoard answers the same on
    # images, and on audio past the count; at the count itself its audio route fails (500:
    # it skips a step only when its clips are fewer than the index, not when as many).
    count = get(keep_all, f"/data/plugin/{plugin}/tags").json()["train"][tag]["samples"]
    for sample in (count, count + 1):
        params = {"run": "train", "tag": tag, "sample": str(sample)}
        tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/{route}", params=params)
        assert (ours.status_code, ours.json()) == (200, [])
        fails = plugin == "audio" and sample == count
        assert (tb.status_code, None if fails else tb.json()) == (
            (500, None) if fails else (200, [])
        )
    # Blobs: a missing key is a 400 as in TensorBoard; a key boardd never gave out a 404
    # (TensorBoard fails on it with a 500).
    extra = {"content_type": "audio/wav"} if plugin == "audio" else {}
    tb, ours = keep_all.both("GET", f"/data/plugin/{plugin}/{blob_route}", params=extra)
    assert (tb.status_code, ours.status_code) == (400, 400)
    assert "blob_key" in ours.json()["error"]["message"]
    tb, ours = keep_all.both(
        "GET",
        f"/data/plugin/{plugin}/{blob_route}",
        params={"blob_key": "logs~abc.999999", **extra},
    )
    assert ours.status_code == 404 and ours.json()["error"]["code"] == "not_found"


def test_individual_audio_content_type_checked(keep_all: Pair) -> None:
    clips = get(
        keep_all, "/data/plugin/audio/audio", params={"run": "train", "tag": "speech"}
    ).json()
    key = parse_qs(clips[0]["query"])["blob_key"][0]
    for params in ({"blob_key": key}, {"blob_key": key, "content_type": "text/html"}):
        tb, ours = keep_all.both("GET", "/data/plugin/audio/individualAudio", params=params)
        assert (tb.status_code, ours.status_code) == (400, 400)
        assert "content_type" in ours.json()["error"]["message"] or "mime" in ours.text
    ours = get(
        keep_all,
        "/data/plugin/audio/individualAudio",
        params={"blob_key": key, "content_type": "application/octet-stream"},
    )
    assert ours.status_code == 200 and ours.headers["content-type"] == "application/octet-stream"


def test_defaults_sample_10_of_a_long_series(plugin_defaults: Pair) -> None:
    """130 images: 10 on both sides, ending at the last step; the steps in between differ
    (boardd's seeded choice by step, TensorBoard's reservoir), so only the last image's bytes
    are compared."""
    params = {"run": "long", "tag": "img"}
    tb, ours = plugin_defaults.both("GET", "/data/plugin/images/images", params=params)
    assert len(ours.json()) == len(tb.json()) == 10 < LONG_STEPS
    assert ours.json()[-1]["step"] == tb.json()[-1]["step"] == LONG_STEPS - 1
    tb_blob = plugin_defaults.tb.get(
        f"/data/plugin/images/individualImage?{tb.json()[-1]['query']}"
    )
    ours_blob = get(
        plugin_defaults, f"/data/plugin/images/individualImage?{ours.json()[-1]['query']}"
    )
    assert ours_blob.content == tb_blob.content
