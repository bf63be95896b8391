"""TensorBoard's mesh plugin: ``tags`` (each mesh of a run with its batch size), ``meshes`` (a
mesh's parts at each step: content type, shape, scene configuration) and ``data`` (one part of
one mesh of the batch at one step, as raw little-endian numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import integer, param, run_and_tag
from boardd.api.tensorboard.scope import Reader
from boardd.data.kinds import TENSORS

if TYPE_CHECKING:
    from boardd.proto.mesh_plugin_data_pb2 import MeshPluginData

# The plugin's data module (and protocol buffers) is imported by the handlers: not on the start
# path.

PLUGIN = "mesh"
#: Steps per part the routes return unless --samples-per-plugin says otherwise: TensorBoard's
#: mesh routes ask for 100, but TensorBoard keeps only 10 tensors per series of a plugin it has
#: no size guidance for (mesh is one), so 10 is what it answers.
DEFAULT_SAMPLES = 10
#: The number type of each part's data (by content type: VERTEX, FACE, COLOR).
DTYPES: dict[int, type[np.generic]] = {1: np.float32, 2: np.int32, 3: np.uint8}
#: The ``data`` route's content types by name (MeshPluginData.ContentType).
CONTENT_TYPES = {"VERTEX": 1, "FACE": 2, "COLOR": 3}


class Part(NamedTuple):
    """One stored point of one part of a mesh."""

    meta: MeshPluginData
    step: int
    wall_time: float
    value: npt.NDArray[Any]


async def tags(request: Request) -> Response:
    """``/data/plugin/mesh/tags``: ``{run: {mesh: {"samples": batch size}}}``."""
    from boardd.plugins.mesh import data as data_mesh

    def build(reader: Reader) -> bytes:
        out: dict[str, dict[str, Any]] = {}
        for s in reader.series(TENSORS, PLUGIN):
            meshes = out.setdefault(s.run, {})
            meta = data_mesh.parse(s.info.plugin_content)
            if meta is not None and meta.shape:
                meshes[meta.name] = {"samples": meta.shape[0]}
        return tb_json(out)

    return await answer(request, build)


def _parts(
    reader: Reader, run: str, mesh: str, samples: int | None, content_type: int | None = None
) -> list[Part]:
    """The stored points of every part of the mesh (of ``content_type`` only, if given: the
    others are not read), by step (parts of one step in content type order: vertices, faces,
    colours, as writers write them)."""
    from boardd.plugins.mesh import data as data_mesh

    found = []
    for s in reader.series(TENSORS, PLUGIN, (run,)):
        meta = data_mesh.parse(s.info.plugin_content)
        if meta is None or meta.name != mesh:
            continue
        if content_type is None or meta.content_type == content_type:
            found.append((meta, s))
    found.sort(key=lambda f: (f[0].content_type, f[1].info.tag))
    parts = [
        Part(meta, p.step, p.wall_time, p.value)
        for meta, s in found
        for p in s.handle.provider.read_arrays(s.info, samples)
    ]
    parts.sort(key=lambda p: p.step)
    return parts


async def meshes(request: Request) -> Response:
    """``/data/plugin/mesh/meshes?run=&tag=``: ``[{wall_time, step, content_type, components,
    config, data_shape}]``, one per part and step; an unknown run or mesh is an empty list, a
    missing parameter a 400."""
    run, mesh = run_and_tag(request)
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        return tb_json(
            [
                {
                    "wall_time": p.wall_time,
                    "step": p.step,
                    "content_type": p.meta.content_type,
                    "components": p.meta.components,
                    "config": p.meta.json_config,
                    "data_shape": list(p.meta.shape),
                }
                for p in _parts(reader, run, mesh, samples)
            ]
        )

    return await answer(request, build)


async def data(request: Request) -> Response:
    """``/data/plugin/mesh/data?run=&tag=&content_type=VERTEX|FACE|COLOR[&step=][&sample=]``:
    that part of the ``sample``-th mesh of the batch written at ``step`` (default 0), as
    little-endian float32 (vertices), int32 (faces) or uint8 (colours); empty when the mesh
    has no such part at that step."""
    run, mesh = run_and_tag(request)
    name = param(request, "content_type", "")
    content_type = CONTENT_TYPES.get(name)
    if content_type is None:
        raise ApiError(400, f"content_type={name!r}: give one of VERTEX, FACE, COLOR")
    step_text = param(request, "step", "0")
    try:
        step = float(step_text)
    except ValueError:
        raise ApiError(400, f"step={step_text!r}: give a number") from None
    sample = integer(request, "sample", 0)
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        chosen = []
        for p in _parts(reader, run, mesh, samples, content_type):
            if p.step != step:
                continue
            if sample >= p.value.shape[0]:
                raise ApiError(
                    400, f"sample={sample}: the mesh has {p.value.shape[0]} in its batch"
                )
            chosen.append(p.value[sample])
        typed = np.array(chosen, dtype=DTYPES[content_type])
        return typed.reshape(-1).astype(typed.dtype.newbyteorder("<")).tobytes()

    return await answer(request, build, "application/octet-stream")
