"""Answers too large to hold are streamed a block at a time, byte for byte the answer built
whole (every kind and format, gzip or not, with the same validator), and never cached."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from boardd.api import data as api_data
from boardd.api import replies
from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from tests.conftest import WAIT, ThreadedServer

#: Requests of every kind and format of the multi-series reads.
READS: list[dict[str, Any]] = [
    {"plugin": "scalars"},
    {"plugin": "scalars", "format": "columns"},
    {"plugin": "scalars", "format": "csv"},
    {"plugin": "scalars", "run": "train", "downsample": 50},
    {"plugin": "histograms"},
    {"plugin": "images"},
]
KIND = {"scalars": "scalars", "histograms": "tensors", "images": "blob_sequences"}


def _get(client: httpx.Client, params: dict[str, Any], **headers: str) -> httpx.Response:
    kind = KIND[params["plugin"]]
    response = client.get(f"/api/v1/{kind}", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response


def test_large_answers_are_streamed_as_the_same_bytes_and_not_cached(
    spec_all: ExperimentSpec, monkeypatch: pytest.MonkeyPatch, servers: list[ThreadedServer]
) -> None:
    whole_server = ThreadedServer(create_app([spec_all])).start()
    servers.append(whole_server)
    with httpx.Client(base_url=whole_server.url, timeout=WAIT, trust_env=False) as client:
        whole = [_get(client, p, **{"accept-encoding": "identity"}) for p in READS]
    for response in whole:
        assert "content-length" in response.headers  # built whole and cached
    # Every answer is now too large to hold, and long series are encoded in many slices.
    monkeypatch.setattr(replies, "HOLD_BYTES", 100)
    monkeypatch.setattr(api_data, "SLICE_POINTS", 7)
    monkeypatch.setattr(api_data, "SLICE_TENSORS", 3)
    monkeypatch.setattr(replies, "BLOCK_BYTES", 1000)
    server = ThreadedServer(create_app([spec_all])).start()
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=WAIT, trust_env=False) as client:
        for params, expected in zip(READS, whole, strict=True):
            plain = _get(client, params, **{"accept-encoding": "identity"})
            assert "content-length" not in plain.headers
            assert plain.headers["transfer-encoding"] == "chunked"
            assert plain.content == expected.content, params
            assert plain.headers["content-type"] == expected.headers["content-type"]
            assert plain.headers["etag"] == expected.headers["etag"]
            if params.get("format") == "csv":
                disposition = expected.headers["content-disposition"]
                assert plain.headers["content-disposition"] == disposition
            # Compressed as it goes, for a client that takes gzip.
            raw = client.build_request("GET", f"/api/v1/{KIND[params['plugin']]}", params=params)
            raw.headers["accept-encoding"] = "gzip"
            zipped = client.send(raw, stream=True)
            body = b"".join(zipped.iter_raw())
            zipped.close()
            assert zipped.headers["content-encoding"] == "gzip"
            assert gzip.decompress(body) == expected.content
            # A client that has this version gets 304.
            again = client.get(
                f"/api/v1/{KIND[params['plugin']]}",
                params=params,
                headers={"if-none-match": plain.headers["etag"]},
            )
            assert again.status_code == 304
        health = client.get("/api/v1/health").json()
    # None of the streamed answers was kept.
    assert health["cache"]["bytes"] < min(len(r.content) for r in whole[:3])


def test_empty_answers_streamed_are_still_complete(
    spec_all: ExperimentSpec, monkeypatch: pytest.MonkeyPatch, servers: list[ThreadedServer]
) -> None:
    # Over a bound of one byte even an empty answer is streamed: its framing alone.
    monkeypatch.setattr(replies, "HOLD_BYTES", 1)
    server = ThreadedServer(create_app([spec_all])).start()
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=WAIT, trust_env=False) as client:
        answer = _get(client, {"plugin": "scalars", "run": "no-such-run"})
        assert answer.content == b"{}"
        answer = _get(client, {"plugin": "scalars", "run": "no-such-run", "format": "csv"})
        assert answer.content == b"run,tag,step,wall_time,value\n"


def test_tensorboard_time_series_too_large_to_hold_is_streamed_as_the_same_bytes(
    spec_all: ExperimentSpec, monkeypatch: pytest.MonkeyPatch, servers: list[ThreadedServer]
) -> None:
    wanted = [
        {"plugin": "scalars", "tag": "loss"},
        {"plugin": "scalars", "tag": "acc", "run": "train"},
        {"plugin": "histograms", "tag": "weights"},
        {"plugin": "scalars", "tag": "no-such-tag"},
    ]
    form = {"requests": json.dumps(wanted)}
    headers = {"x-xsrf-protected": "1", "accept-encoding": "identity"}
    path = "/data/plugin/timeseries/timeSeries"
    whole_server = ThreadedServer(create_app([spec_all])).start()
    servers.append(whole_server)
    with httpx.Client(base_url=whole_server.url, timeout=WAIT, trust_env=False) as client:
        whole = client.post(path, data=form, headers=headers)
    assert whole.status_code == 200 and "content-length" in whole.headers
    monkeypatch.setattr(replies, "HOLD_BYTES", 100)
    monkeypatch.setattr(replies, "BLOCK_BYTES", 100)
    server = ThreadedServer(create_app([spec_all])).start()
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=WAIT, trust_env=False) as client:
        streamed = client.post(path, data=form, headers=headers)
        assert streamed.status_code == 200
        assert "content-length" not in streamed.headers
        assert streamed.content == whole.content
        assert streamed.headers["etag"] == whole.headers["etag"]
        zipped = client.post(path, data=form, headers={**headers, "accept-encoding": "gzip"})
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.content == whole.content  # decoded by httpx
