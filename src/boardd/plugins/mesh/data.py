"""The mesh plugin's metadata: which mesh, and which part of it (vertices, faces, colours), a
stored tensor is (tensorboardX's and PyTorch's ``add_mesh`` write each part under a tag of its
own, ``NAME_VERTEX``, ``NAME_FACE``, ``NAME_COLOR``)."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from boardd.proto import mesh_plugin_data_pb2

PLUGIN = "mesh"
#: The newest version of the metadata this reads (a newer one is left out, as TensorBoard does).
VERSION = 0
MeshPluginData = mesh_plugin_data_pb2.MeshPluginData
#: Every part: what a mesh without a ``components`` mask has.
ALL_COMPONENTS = (
    (1 << MeshPluginData.VERTEX) | (1 << MeshPluginData.FACE) | (1 << MeshPluginData.COLOR)
)


def parse(content: bytes) -> mesh_plugin_data_pb2.MeshPluginData | None:
    """A tensor's mesh metadata, or None when it cannot be read or is of a newer version."""
    data = MeshPluginData()
    try:
        data.ParseFromString(content)
    except DecodeError:
        return None
    if data.version > VERSION:
        return None
    if data.components == 0:
        data.components = ALL_COMPONENTS
    return data
