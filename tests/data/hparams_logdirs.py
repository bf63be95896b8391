"""Logdirs with hparams summaries, written by TensorBoard's official hparams API (its summary
protos, as ``hp.hparams_config`` / ``hp.hparams`` write them without TensorFlow) and by
tensorboardX's ``add_hparams``: what the hparams tests of the data layer, the store, the API and
the TensorBoard routes read."""

from __future__ import annotations

from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2, summary_v2
from tensorboard.plugins.hparams import summary_v2 as hp
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import SummaryWriter
from tensorboardX import summary as x_summary

#: The wall time of step 0 (old: a session without end info is UNKNOWN, not RUNNING).
WALL = 1_700_000_000.0


class Writer:
    """One run's event file, written with TensorBoard's writer."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._w = EventFileWriter(str(directory), max_queue_size=1000, flush_secs=3600)

    def summary(self, pb: summary_pb2.Summary, step: int = 0, wall: float = WALL) -> None:
        self._w.add_event(event_pb2.Event(step=step, wall_time=wall, summary=pb))

    def scalars(self, tag: str, points: dict[int, float]) -> None:
        for step, value in points.items():
            pb = summary_pb2.Summary.FromString(x_summary.scalar(tag, value).SerializeToString())
            self.summary(pb, step, WALL + step)

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()


def session_end_pb(status: int, end_time_secs: float) -> summary_pb2.Summary:
    """The session end summary TensorBoard's ``summary.session_end_pb`` writes (that module
    imports TensorFlow)."""
    data = plugin_data_pb2.HParamsPluginData(
        version=metadata.PLUGIN_DATA_VERSION,
        session_end_info=plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=end_time_secs),
    )
    return _pb(summary_v2._summary_pb(metadata.SESSION_END_INFO_TAG, data))


def _pb(message: object) -> summary_pb2.Summary:
    return summary_pb2.Summary.FromString(message.SerializeToString())  # type: ignore[attr-defined]


#: The official logdir's trials: (run, trial id, hparams, status or None, metrics by run-relative
#: group: {tag: {step: value}}).
OFFICIAL_TRIALS: list[
    tuple[str, str, dict[str, object], int | None, dict[str, dict[str, dict[int, float]]]]
] = [
    (
        "t0",
        "g-a",
        {"lr": 0.1, "opt": "adam", "layers": 2, "dropout": True},
        api_pb2.STATUS_SUCCESS,
        {
            "": {"accuracy": {0: 0.5, 10: 0.7}},
            "train": {"loss": {0: 1.0, 10: 0.4}},
            "validation": {"loss": {0: 1.2, 10: 0.6}},
        },
    ),
    (
        "t1",
        "g-a",  # a repeat of t0's values: the same session group
        {"lr": 0.1, "opt": "adam", "layers": 2, "dropout": True},
        api_pb2.STATUS_SUCCESS,
        {
            "": {"accuracy": {0: 0.4, 12: 0.9}},
            "train": {"loss": {0: 1.1, 12: 0.2}},
            "validation": {"loss": {0: 1.0, 12: 0.8}},
        },
    ),
    (
        "t2",
        "g-b",
        {"lr": 0.01, "opt": "sgd", "layers": 4, "dropout": False},
        api_pb2.STATUS_FAILURE,
        {"": {"accuracy": {0: 0.3, 5: 0.35}}, "train": {"loss": {0: 2.0, 5: 1.5}}},
    ),
    (
        "t3",
        "g-c",
        {"lr": 0.001, "opt": "sgd-momentum", "layers": 8, "dropout": True},
        None,  # no end info: still running, or its end is unknown
        {"": {"accuracy": {0: 0.6, 20: 0.95}}, "validation": {"loss": {0: 0.9, 20: 0.3}}},
    ),
    (
        "t4",
        "g-d",
        {"lr": 0.05, "opt": "adam", "layers": 4},  # no dropout value: a missing hparam
        api_pb2.STATUS_SUCCESS,
        {"train": {"loss": {0: 0.8, 3: 0.7}}},  # no accuracy: a missing metric
    ),
]


def start_pb(values: dict[str, object], trial: str, start: float = WALL) -> summary_pb2.Summary:
    """A trial's session start summary, as ``hp.hparams`` writes it."""
    return _pb(summary_v2.hparams_pb(values, trial_id=trial, start_time_secs=start))


def write_official(root: Path, *, with_experiment: bool = True) -> Path:
    """A logdir as TensorBoard's official hparams API writes it: the experiment (domains,
    metrics with groups, dataset types) in the root run, each trial's start info (trial id =
    group) and end info in its run, its metrics as scalars in it and its sub-runs."""
    logdir = root / ("official" if with_experiment else "official-inferred")
    hparams = [
        hp.HParam("lr", hp.RealInterval(0.0001, 1.0), display_name="learning rate"),
        hp.HParam("opt", hp.Discrete(["adam", "sgd", "sgd-momentum"]), description="**optimizer**"),
        hp.HParam("layers", hp.IntInterval(1, 8)),
        hp.HParam("dropout", hp.Discrete([False, True])),
        hp.HParam("unused", hp.Discrete(["x", "y"])),
    ]
    metrics = [
        hp.Metric("accuracy", display_name="Accuracy"),
        hp.Metric("loss", group="train", dataset_type=hp.Metric.TRAINING),
        hp.Metric("loss", group="validation", dataset_type=hp.Metric.VALIDATION),
    ]
    if with_experiment:
        root_run = Writer(logdir)
        root_run.summary(_pb(summary_v2.hparams_config_pb(hparams, metrics, WALL - 100)))
        root_run.close()
    for k, (run, trial, values, status, series) in enumerate(OFFICIAL_TRIALS):
        w = Writer(logdir / run)
        w.summary(_pb(summary_v2.hparams_pb(values, trial_id=trial, start_time_secs=WALL + k)))
        for tag, points in series.get("", {}).items():
            w.scalars(tag, points)
        if status is not None:
            w.summary(session_end_pb(status, WALL + 100 + k), 99)
        w.close()
        for group, tags in series.items():
            if not group:
                continue
            sub = Writer(logdir / run / group)
            for tag, points in tags.items():
                sub.scalars(tag, points)
            sub.close()
    return logdir


#: tensorboardX trials: (sub-run name, hparams, metrics).
TBX_TRIALS: list[tuple[str, dict[str, object], dict[str, float]]] = [
    ("1700000001.5", {"lr": 0.1, "bsize": 32, "opt": "adam", "aug": True},
     {"hparam/accuracy": 0.8, "hparam/loss": 0.3}),
    ("1700000002.5", {"lr": 0.01, "bsize": 64, "opt": "sgd", "aug": False},
     {"hparam/accuracy": 0.7, "hparam/loss": 0.5}),
    ("1700000003.5", {"lr": 0.001, "bsize": 32, "opt": "adam", "aug": False},
     {"hparam/accuracy": 0.9, "hparam/loss": 0.1}),
    ("1700000004.5", {"lr": 0.1, "bsize": 128, "opt": "rmsprop", "aug": True},
     {"hparam/accuracy": 0.6, "hparam/loss": 0.9}),
]  # fmt: skip


def write_tensorboardx(root: Path) -> Path:
    """A logdir as tensorboardX's (and PyTorch's) ``add_hparams`` writes it: a sub-run per call
    under the writer's run, each with its own experiment, start and end info, and its metrics
    as scalars; the writer's own run has training scalars."""
    logdir = root / "tbx"
    with SummaryWriter(str(logdir / "exp")) as w:
        for step in range(3):
            w.add_scalar("train/loss", 1.0 / (step + 1), step)
        for name, values, metrics in TBX_TRIALS:
            w.add_hparams(values, metrics, name=name)
    return logdir
