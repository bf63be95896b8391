"""TensorBoard's PR-curves plugin: ``tags`` and ``pr_curves`` (one tag, several runs)."""

from __future__ import annotations

from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import param
from boardd.api.tensorboard.scope import Reader
from boardd.api.tensorboard.series_routes import json_array, tag_index
from boardd.data.errors import DataError
from boardd.data.kinds import TENSORS
from boardd.plugins.pr_curves import data as data_pr_curves

PLUGIN = "pr_curves"
#: Steps per series the pr_curves route returns unless --samples-per-plugin says otherwise.
DEFAULT_SAMPLES = 100


async def tags(request: Request) -> Response:
    """``/data/plugin/pr_curves/tags``."""
    return await answer(request, lambda reader: tb_json(tag_index(reader, TENSORS, PLUGIN)))


async def pr_curves(request: Request) -> Response:
    """``/data/plugin/pr_curves/pr_curves?run=&run=...&tag=``: ``{run: [{wall_time, step,
    precision, recall, true_positives, false_positives, true_negatives, false_negatives,
    thresholds}, ...]}``; 400 unless every run named has the tag (as TensorBoard answers)."""
    runs = tuple(dict.fromkeys(request.query_params.getlist("run")))
    if not runs:
        raise ApiError(400, "No runs provided when fetching PR curve data")
    tag = param(request, "tag")
    if not tag:
        raise ApiError(400, "No tag provided when fetching PR curve data")
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        found = {s.run: s for s in reader.series(TENSORS, PLUGIN, runs, (tag,))}
        out: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            series = found.get(run)
            if series is None:
                raise ApiError(400, f"No PR curves could be found for run {run!r} and tag {tag!r}")
            entries = out[run] = []
            for p in series.handle.provider.read_arrays(series.info, samples):
                try:
                    curve = data_pr_curves.unpack(p.value)
                except ValueError as exc:
                    raise DataError(f"run {run!r}, tag {tag!r}, step {p.step}: {exc}") from exc
                entries.append(
                    {
                        "wall_time": p.wall_time,
                        "step": p.step,
                        "precision": json_array(np.asarray(curve.precision)),
                        "recall": json_array(np.asarray(curve.recall)),
                        "true_positives": curve.true_positives,
                        "false_positives": curve.false_positives,
                        "true_negatives": curve.true_negatives,
                        "false_negatives": curve.false_negatives,
                        "thresholds": curve.thresholds,
                    }
                )
        return tb_json(out)

    return await answer(request, build)
