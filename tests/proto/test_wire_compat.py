"""boardd's protos are wire-compatible with TensorBoard's: same fields, and bytes round-trip."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import pytest
from google.protobuf import descriptor, json_format
from google.protobuf.message import Message
from tensorboard.compat.proto import config_pb2 as tb_config_pb2
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2
from tensorboard.compat.proto import histogram_pb2 as tb_histogram_pb2
from tensorboard.compat.proto import resource_handle_pb2 as tb_resource_handle_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.compat.proto import tensor_pb2 as tb_tensor_pb2
from tensorboard.compat.proto import tensor_shape_pb2 as tb_tensor_shape_pb2
from tensorboard.compat.proto import types_pb2 as tb_types_pb2
from tensorboard.plugins.custom_scalar import layout_pb2 as tb_layout_pb2
from tensorboard.plugins.hparams import api_pb2 as tb_api_pb2
from tensorboard.plugins.hparams import plugin_data_pb2 as tb_plugin_data_pb2
from tensorboard.plugins.hparams import summary_v2 as hp
from tensorboard.plugins.mesh import plugin_data_pb2 as tb_mesh_pb2
from tensorboard.plugins.projector import projector_config_pb2 as tb_projector_pb2

from boardd.proto import (
    event_pb2,
    graph_debug_info_pb2,
    graph_pb2,
    histogram_pb2,
    hparams_api_pb2,
    hparams_plugin_data_pb2,
    layout_pb2,
    mesh_plugin_data_pb2,
    projector_config_pb2,
    run_metadata_pb2,
    summary_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)

# (ours, TensorBoard's) for every file we mirror.
FILES: list[tuple[ModuleType, ModuleType]] = [
    (event_pb2, tb_event_pb2),
    (summary_pb2, tb_summary_pb2),
    (histogram_pb2, tb_histogram_pb2),
    (tensor_pb2, tb_tensor_pb2),
    (tensor_shape_pb2, tb_tensor_shape_pb2),
    (types_pb2, tb_types_pb2),
    (hparams_api_pb2, tb_api_pb2),
    (hparams_plugin_data_pb2, tb_plugin_data_pb2),
    (layout_pb2, tb_layout_pb2),
    (mesh_plugin_data_pb2, tb_mesh_pb2),
    (projector_config_pb2, tb_projector_pb2),
]

# What the .proto comments say we leave out; everything else must be mirrored exactly.
OMITTED_FIELDS = {
    "tensorboard.TensorProto.resource_handle_val",
    "tensorboard.TensorProto.variant_val",
}
OMITTED_TYPES = {
    "tensorboard.WorkerHealth",
    "tensorboard.WorkerShutdownMode",
    "tensorboard.WatchdogConfig",
    "tensorboard.RequestedExitCode",
    "tensorboard.WorkerHeartbeatRequest",
    "tensorboard.WorkerHeartbeatResponse",
    "tensorboard.SummaryDescription",
    "tensorboard.VariantTensorDataProto",
    "tensorboard.SerializedDType",
}


def _tb_name(full_name: str) -> str:
    """The TensorBoard name of one of our types (only the package differs)."""
    assert full_name.startswith("boardd.wire."), full_name
    return "tensorboard." + full_name.removeprefix("boardd.wire.")


def _type_name(field: descriptor.FieldDescriptor, ours: bool) -> str:
    type_descriptor = field.message_type or field.enum_type
    if type_descriptor is None:
        return ""
    name: str = type_descriptor.full_name
    return _tb_name(name) if ours and name.startswith("boardd.") else name


def _signature(field: descriptor.FieldDescriptor, ours: bool) -> tuple[object, ...]:
    oneof = field.containing_oneof
    return (
        field.name,
        field.type,
        field.is_repeated,
        field.is_packed,
        field.has_presence,
        _type_name(field, ours),
        oneof.name if oneof is not None else None,
    )


#: The TensorBoard release whose protos ours mirror (the newest when they were written).
MIRRORED_TENSORBOARD = (2, 21)


def _tensorboard_older_than_ours() -> bool:
    """Whether the installed TensorBoard predates the protos ours mirror."""
    from importlib.metadata import version

    numbers = tuple(int(part) for part in version("tensorboard").split(".")[:2])
    return numbers < MIRRORED_TENSORBOARD


def _assert_same_enum(ours: descriptor.EnumDescriptor, theirs: descriptor.EnumDescriptor) -> None:
    # Every value of theirs, by the same number. Ours mirror the newest TensorBoard's protos:
    # an older release (CI's oldest-releases lane) may lack values added since (new dtypes),
    # never have one of its own.
    mine = {v.name: v.number for v in ours.values}
    their_values = {v.name: v.number for v in theirs.values}
    assert {name: mine.get(name) for name in their_values} == their_values, theirs.full_name
    extra = set(mine) - set(their_values)
    assert not extra or _tensorboard_older_than_ours(), (theirs.full_name, sorted(extra))


def _assert_same_message(ours: descriptor.Descriptor, theirs: descriptor.Descriptor) -> None:
    assert _tb_name(ours.full_name) == theirs.full_name
    expected = {
        f.number: _signature(f, ours=False)
        for f in theirs.fields
        if f.full_name not in OMITTED_FIELDS
    }
    actual = {f.number: _signature(f, ours=True) for f in ours.fields}
    assert actual == expected, theirs.full_name
    assert ours.GetOptions().map_entry == theirs.GetOptions().map_entry
    _assert_same_children(ours.nested_types, ours.enum_types, theirs)


def _assert_same_children(
    our_messages: Sequence[descriptor.Descriptor],
    our_enums: Sequence[descriptor.EnumDescriptor],
    theirs: descriptor.Descriptor | descriptor.FileDescriptor,
) -> None:
    if isinstance(theirs, descriptor.FileDescriptor):
        their_messages = list(theirs.message_types_by_name.values())
        their_enums = list(theirs.enum_types_by_name.values())
    else:
        their_messages = list(theirs.nested_types)
        their_enums = list(theirs.enum_types)
    mine = {_tb_name(m.full_name): m for m in our_messages}
    for message in their_messages:
        if message.full_name in OMITTED_TYPES:
            assert message.full_name not in mine
            continue
        assert message.full_name in mine, f"{message.full_name} is missing"
        _assert_same_message(mine.pop(message.full_name), message)
    assert not mine, f"types TensorBoard does not have: {sorted(mine)}"
    my_enums = {_tb_name(e.full_name): e for e in our_enums}
    for enum in their_enums:
        if enum.full_name in OMITTED_TYPES:
            continue
        assert enum.full_name in my_enums, f"{enum.full_name} is missing"
        _assert_same_enum(my_enums.pop(enum.full_name), enum)
    assert not my_enums, f"enums TensorBoard does not have: {sorted(my_enums)}"


@pytest.mark.parametrize(("ours", "theirs"), FILES, ids=lambda m: m.__name__.split(".")[-1])
def test_same_fields_as_tensorboard(ours: ModuleType, theirs: ModuleType) -> None:
    our_file = ours.DESCRIPTOR
    assert our_file.package.startswith("boardd.wire")
    _assert_same_children(
        list(our_file.message_types_by_name.values()),
        list(our_file.enum_types_by_name.values()),
        theirs.DESCRIPTOR,
    )


def _reachable(root: descriptor.Descriptor) -> dict[str, descriptor.Descriptor]:
    """Every message type a message of type ``root`` can hold, ``root`` included."""
    found: dict[str, descriptor.Descriptor] = {}
    stack = [root]
    while stack:
        message = stack.pop()
        if message.full_name not in found:
            found[message.full_name] = message
            stack.extend(f.message_type for f in message.fields if f.message_type is not None)
    return found


def _top_level(found: dict[str, descriptor.Descriptor]) -> set[str]:
    return {name for name, m in found.items() if m.containing_type is None}


#: The messages our single-file mirrors of TensorBoard's (below) take from the other files.
_ELSEWHERE = {"tensorboard.TensorProto", "tensorboard.TensorShapeProto"}


@pytest.mark.parametrize(
    ("ours", "root", "before"),
    [
        ((graph_pb2, graph_debug_info_pb2), tb_graph_pb2.GraphDef.DESCRIPTOR, None),
        (
            (run_metadata_pb2,),
            tb_config_pb2.RunMetadata.DESCRIPTOR,
            tb_graph_pb2.GraphDef.DESCRIPTOR,
        ),
    ],
    ids=["graph", "run_metadata"],
)
def test_gathered_files_hold_what_tensorboard_reaches(
    ours: tuple[ModuleType, ...], root: descriptor.Descriptor, before: descriptor.Descriptor | None
) -> None:
    """graph.proto (with graph_debug_info.proto) and run_metadata.proto gather several of
    TensorBoard's files: every message a GraphDef (a RunMetadata, beyond what a GraphDef
    reaches) can hold is in ours, field for field, and nothing else is."""
    wanted = _top_level(_reachable(root)) - _ELSEWHERE - OMITTED_TYPES
    if before is not None:
        wanted -= _top_level(_reachable(before))
    theirs = _reachable(root)
    mine = {k: v for module in ours for k, v in module.DESCRIPTOR.message_types_by_name.items()}
    assert {_tb_name(m.full_name) for m in mine.values()} == wanted
    for message in mine.values():
        _assert_same_message(message, theirs[_tb_name(message.full_name)])
    # The enums they use (FullTypeId) are the same too.
    enums = [e for module in ours for e in module.DESCRIPTOR.enum_types_by_name.values()]
    for enum in enums:
        their_enum = next(
            f.enum_type
            for m in theirs.values()
            for f in m.fields
            if f.enum_type is not None and f.enum_type.full_name == _tb_name(enum.full_name)
        )
        _assert_same_enum(enum, their_enum)


def test_a_graph_reads_and_prints_as_tensorboard_reads_and_prints_it() -> None:
    """The graphs routes send a graph as protobuf text format: it is the same text."""
    graph = tb_graph_pb2.GraphDef()
    graph.versions.producer = 22
    node = graph.node.add(name="layer/MatMul", op="MatMul", input=["x", "w"], device="/cpu:0")
    node.attr["T"].type = tb_types_pb2.DT_FLOAT
    node.attr["_output_shapes"].list.shape.add().dim.add(size=3)
    node.attr["value"].tensor.float_val.extend([1.0, 2.5])
    node.experimental_type.type_id = 1000  # TFT_TENSOR
    function = graph.library.function.add()
    function.signature.name = "__inference_f_12"
    function.signature.input_arg.add(name="a", type=tb_types_pb2.DT_INT32)
    function.ret["out"] = "a"
    function.node_def.add(name="inner", op="Identity", input=["a"])
    frame = graph.debug_info.frames_by_id[7]
    frame.file_index, frame.line = 0, 0  # set, though 0: proto2 prints them
    graph.debug_info.files.append("model.py")
    graph.debug_info.traces_by_id[7].frame_id.append(7)
    metadata = tb_config_pb2.RunMetadata()
    stats = metadata.step_stats.dev_stats.add(device="/cpu:0")
    stats.node_stats.add(node_name="layer/MatMul", all_start_micros=5, op_end_rel_micros=7)
    stats.thread_names[1] = "main"
    metadata.function_graphs.add().pre_optimization_graph.CopyFrom(graph)
    metadata.cost_graph.node.add(name="n", id=1).output_info.add(size=8)
    ours = graph_pb2.GraphDef.FromString(graph.SerializeToString())
    assert str(ours) == str(graph)
    ours_metadata = run_metadata_pb2.RunMetadata.FromString(metadata.SerializeToString())
    assert str(ours_metadata) == str(metadata)


def _dict(message: Message) -> dict[str, object]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _tb_event_with_every_value() -> tb_event_pb2.Event:
    event = tb_event_pb2.Event(wall_time=1234.5, step=42)
    event.source_metadata.writer = "test"
    values = event.summary.value
    values.add(tag="simple", simple_value=0.25, node_name="node").metadata.display_name = "S"
    histo = values.add(tag="histo").histo
    histo.min, histo.max, histo.num, histo.sum, histo.sum_squares = -1.0, 2.0, 3.0, 1.5, 5.0
    histo.bucket_limit.extend([0.0, 1.0, 2.0])
    histo.bucket.extend([1.0, 0.0, 2.0])
    image = values.add(tag="image").image
    image.width, image.height, image.colorspace = 3, 2, 4
    image.encoded_image_string = b"\x89PNG..."
    audio = values.add(tag="audio").audio
    audio.sample_rate, audio.num_channels, audio.length_frames = 8000.0, 1, 100
    audio.encoded_audio_string, audio.content_type = b"RIFF....", "audio/wav"
    tensor_value = values.add(tag="tensor")
    tensor_value.metadata.plugin_data.plugin_name = "pr_curves"
    tensor_value.metadata.plugin_data.content = b"\x08\x01"
    tensor_value.metadata.data_class = tb_summary_pb2.DATA_CLASS_TENSOR
    tensor_value.metadata.summary_description = "d"
    tensor = tensor_value.tensor
    tensor.dtype = tb_types_pb2.DT_HALF
    tensor.tensor_shape.dim.add(size=2, name="x")
    tensor.half_val.extend([15360, 16384])
    tensor.version_number = 1
    strings = values.add(tag="strings").tensor
    strings.dtype = tb_types_pb2.DT_STRING
    strings.string_val.extend([b"a", b"\xff\x00"])
    everything = values.add(tag="typed").tensor
    everything.tensor_content = b"\x01\x02"
    everything.float_val.append(1.5)
    everything.double_val.append(2.5)
    everything.int_val.append(-3)
    everything.scomplex_val.extend([1.0, 2.0])
    everything.int64_val.append(-(2**40))
    everything.bool_val.append(True)
    everything.dcomplex_val.extend([3.0, 4.0])
    everything.uint32_val.append(2**32 - 1)
    everything.uint64_val.append(2**64 - 1)
    everything.float8_val = b"\x7f"
    everything.tensor_shape.unknown_rank = True
    return event


def _tb_run_level_events() -> list[tb_event_pb2.Event]:
    graph = tb_graph_pb2.GraphDef()
    graph.node.add(name="a", op="Const")
    return [
        tb_event_pb2.Event(wall_time=1.0, file_version="brain.Event:2"),
        tb_event_pb2.Event(wall_time=2.0, step=1, graph_def=graph.SerializeToString()),
        tb_event_pb2.Event(wall_time=3.0, step=2, meta_graph_def=b"\x0a\x00"),
        tb_event_pb2.Event(
            wall_time=4.0,
            step=3,
            log_message=tb_event_pb2.LogMessage(
                level=tb_event_pb2.LogMessage.WARN, message="careful"
            ),
        ),
        tb_event_pb2.Event(
            wall_time=5.0,
            step=4,
            session_log=tb_event_pb2.SessionLog(
                status=tb_event_pb2.SessionLog.CHECKPOINT, checkpoint_path="/ckpt", msg="m"
            ),
        ),
        tb_event_pb2.Event(
            wall_time=6.0,
            step=5,
            tagged_run_metadata=tb_event_pb2.TaggedRunMetadata(tag="t", run_metadata=b"\x01"),
        ),
    ]


@pytest.mark.parametrize(
    "tb_event",
    [_tb_event_with_every_value(), *_tb_run_level_events()],
    ids=lambda e: e.WhichOneof("what"),
)
def test_tensorboard_event_parses_the_same(tb_event: tb_event_pb2.Event) -> None:
    wire = tb_event.SerializeToString()
    ours = event_pb2.Event.FromString(wire)
    assert _dict(ours) == _dict(tb_event)
    assert ours.SerializeToString(deterministic=True) == tb_event.SerializeToString(
        deterministic=True
    )
    # And back: what we write, TensorBoard reads.
    assert tb_event_pb2.Event.FromString(ours.SerializeToString()) == tb_event


def test_our_event_parses_the_same_in_tensorboard() -> None:
    ours = event_pb2.Event(wall_time=9.5, step=-3)
    value = ours.summary.value.add(tag="x")
    value.metadata.plugin_data.plugin_name = "scalars"
    value.metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    value.tensor.dtype = types_pb2.DT_DOUBLE
    value.tensor.tensor_shape.SetInParent()
    value.tensor.double_val.append(float("-inf"))
    theirs = tb_event_pb2.Event.FromString(ours.SerializeToString())
    assert _dict(theirs) == _dict(ours)
    assert theirs.summary.value[0].tensor.double_val[0] == float("-inf")


def test_fields_we_leave_out_survive_a_round_trip() -> None:
    tensor = tb_tensor_pb2.TensorProto(dtype=tb_types_pb2.DT_RESOURCE)
    handle = tensor.resource_handle_val.add(device="/cpu:0", name="v", hash_code=7)
    handle.dtypes_and_shapes.add(dtype=tb_types_pb2.DT_FLOAT)
    tensor.variant_val.add(type_name="t", metadata=b"m")
    assert isinstance(handle, tb_resource_handle_pb2.ResourceHandleProto)
    ours = tensor_pb2.TensorProto.FromString(tensor.SerializeToString())
    assert ours.dtype == types_pb2.DT_RESOURCE
    assert tb_tensor_pb2.TensorProto.FromString(ours.SerializeToString()) == tensor


def _hparams_contents() -> list[bytes]:
    lr = hp.HParam("lr", hp.RealInterval(0.001, 0.1), display_name="rate", description="d")
    opt = hp.HParam("opt", hp.Discrete(["adam", "sgd"]))
    layers = hp.HParam("layers", hp.IntInterval(1, 8))
    config = hp.hparams_config_pb(
        [lr, opt, layers],
        [
            hp.Metric("loss", group="validation", display_name="Loss"),
            hp.Metric("acc", dataset_type=hp.Metric.TRAINING),
        ],
        time_created_secs=1700000000.5,
    )
    start = hp.hparams_pb(
        {lr: 0.01, opt: "adam", layers: 3, "flag": True}, trial_id="trial-1", start_time_secs=12.5
    )
    return [
        summary.value[0].metadata.plugin_data.content
        for summary in (config, start)
        # hparams_pb and hparams_config_pb build their Summary with TensorBoard's own protos.
        if isinstance(summary, tb_summary_pb2.Summary)
    ]


def test_hparams_plugin_data_round_trips() -> None:
    contents = _hparams_contents()
    end = tb_plugin_data_pb2.HParamsPluginData(
        session_end_info=tb_plugin_data_pb2.SessionEndInfo(
            status=tb_api_pb2.STATUS_SUCCESS, end_time_secs=99.0
        )
    )
    contents.append(end.SerializeToString())
    assert len(contents) == 3
    for content in contents:
        theirs = tb_plugin_data_pb2.HParamsPluginData.FromString(content)
        ours = hparams_plugin_data_pb2.HParamsPluginData.FromString(content)
        assert ours.WhichOneof("data") == theirs.WhichOneof("data")
        assert _dict(ours) == _dict(theirs)
        back = tb_plugin_data_pb2.HParamsPluginData.FromString(ours.SerializeToString())
        assert back == theirs


def test_our_hparams_experiment_reads_in_tensorboard() -> None:
    ours = hparams_plugin_data_pb2.HParamsPluginData(version=0)
    experiment = ours.experiment
    experiment.name = "exp"
    info = experiment.hparam_infos.add(
        name="opt", type=hparams_api_pb2.DATA_TYPE_STRING, differs=True
    )
    info.domain_discrete.values.add(string_value="adam")
    info.domain_discrete.values.add(string_value="sgd")
    experiment.hparam_infos.add(
        name="lr", domain_interval=hparams_api_pb2.Interval(min_value=0.0, max_value=1.0)
    )
    experiment.metric_infos.add(
        name=hparams_api_pb2.MetricName(group="eval", tag="loss"),
        dataset_type=hparams_api_pb2.DATASET_VALIDATION,
    )
    theirs = tb_plugin_data_pb2.HParamsPluginData.FromString(ours.SerializeToString())
    assert _dict(theirs) == _dict(ours)
    assert theirs.experiment.hparam_infos[0].domain_discrete.values[1].string_value == "sgd"
    assert theirs.experiment.metric_infos[0].name.group == "eval"
    assert theirs.experiment.hparam_infos[0].differs


def test_hparams_api_requests_round_trip() -> None:
    theirs = tb_api_pb2.ListSessionGroupsRequest(
        experiment_name="e",
        allowed_statuses=[tb_api_pb2.STATUS_SUCCESS, tb_api_pb2.STATUS_RUNNING],
        aggregation_type=tb_api_pb2.AGGREGATION_MEDIAN,
        start_index=5,
        slice_size=10,
        include_metrics=False,
    )
    col = theirs.col_params.add(hparam="lr", order=tb_api_pb2.ORDER_DESC, include_in_result=True)
    col.filter_interval.min_value = 0.5
    ours = hparams_api_pb2.ListSessionGroupsRequest.FromString(theirs.SerializeToString())
    assert _dict(ours) == _dict(theirs)
    # proto3 `optional`: an explicit false is still "set".
    assert ours.HasField("include_metrics")
    assert ours.col_params[0].HasField("include_in_result")
