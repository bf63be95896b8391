"""Real hparams logdirs for tests (and the benchmark): event files written as users write them.

- :func:`write_official`: TensorBoard's official hparams API (``tensorboard.plugins.hparams``:
  ``HParam`` with ``IntInterval`` / ``RealInterval`` / ``Discrete`` domains, ``Metric`` with
  groups and display names, ``hparams_config``, ``hparams(..., trial_id=...)`` for repeated
  trials of one session group), written with TensorBoard's own ``EventFileWriter``; metrics as
  scalars in the session run and in its sub-runs ``train`` and ``validation``; missing metrics,
  a session missing an hparam, a failed session and one still running (no end info).
- :func:`write_tensorboardx`: tensorboardX ``SummaryWriter.add_hparams`` for several trials (a
  timestamped sub-run per call, each with its own experiment summary), next to the training
  loop's own scalars.
- :func:`write_inferred`: sessions without any experiment summary (TensorBoard infers it):
  string/bool/float/int hparams, an hparam some sessions lack, metrics in sub-runs, missing
  metrics, a session without end info, and a run that is no session.
- :func:`write_rules` and :func:`write_rules_tensorboardx`: the small logdirs whose values the
  rule tests of the data layer, the store and the API assert (five official trials; four
  ``add_hparams`` calls under one run); :class:`RunWriter` and :func:`start_pb` for tests that
  write sessions commit by commit.

TensorFlow is not installed: ``tensorboard.plugins.hparams.api`` imports it (for its Keras
callback), so the same functions are taken from ``summary_v2``, which ``api`` re-exports
(``hparams_pb`` and ``hparams_config_pb`` are the protobuf forms of ``hparams`` and
``hparams_config``, which only add TensorFlow's summary writer). The session end info is built
as TensorBoard's ``summary.session_end_pb`` builds it (that module imports TensorFlow too).
Every value is deterministic; wall times are fixed except tensorboardX's (it stamps its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import summary_v2 as hp
from tensorboard.plugins.scalar import summary_v2 as scalar_summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

#: The wall time the logdirs start at.
WALL = 1_700_000_000.0

SUCCESS = api_pb2.STATUS_SUCCESS
FAILURE = api_pb2.STATUS_FAILURE
UNKNOWN = api_pb2.STATUS_UNKNOWN

HParamValue = float | int | str | bool


@dataclass
class HparamsLogdir:
    """A written logdir: its path, every run TensorBoard lists (to wait for its load), and the
    session runs with their group and status (None: no end info)."""

    path: Path
    runs: set[str] = field(default_factory=set)
    #: session run → session group name.
    groups: dict[str, str] = field(default_factory=dict)
    #: session run → the status its end info says (None: no end info, still running).
    statuses: dict[str, int | None] = field(default_factory=dict)


def session_end_pb(status: int, end_time_secs: float) -> summary_pb2.Summary:
    """The ``_hparams_/session_end_info`` summary, as TensorBoard's
    ``hparams.summary.session_end_pb`` builds it."""
    data = plugin_data_pb2.HParamsPluginData(
        session_end_info=plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=end_time_secs)
    )
    summary = summary_pb2.Summary()
    summary.value.add(
        tag=hp_metadata.SESSION_END_INFO_TAG,
        metadata=hp_metadata.create_summary_metadata(data),
    )
    return summary


class RunWriter:
    """One event file of one run (``logdir/run``; ``run`` "." is the logdir itself), written
    with TensorBoard's ``EventFileWriter``."""

    def __init__(self, logdir: Path, run: str = ".") -> None:
        directory = logdir / run if run != "." else logdir
        directory.mkdir(parents=True, exist_ok=True)
        self._writer = EventFileWriter(str(directory), max_queue_size=10_000, flush_secs=3600)

    def summary(self, summary: summary_pb2.Summary, step: int = 0, wall: float = WALL) -> None:
        self._writer.add_event(event_pb2.Event(step=step, wall_time=wall, summary=summary))

    def scalars(
        self,
        tag: str,
        points: Iterable[tuple[int, float]] | Mapping[int, float],
        start: float = WALL,
    ) -> None:
        """Scalars as ``tf.summary.scalar`` writes them (a float32 tensor, plugin scalars), at
        wall time ``start + step``; ``points``: (step, value) pairs or a step → value map."""
        pairs = points.items() if isinstance(points, Mapping) else points
        for step, value in pairs:
            self.summary(scalar_summary.scalar_pb(tag, value), step=step, wall=start + step)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def write_run(
    logdir: Path,
    run: str,
    summaries: Sequence[summary_pb2.Summary] = (),
    scalars: Mapping[str, Sequence[tuple[int, float]]] | None = None,
    *,
    start: float = WALL,
    end: summary_pb2.Summary | None = None,
    end_wall: float = WALL,
) -> None:
    """Writes a run (one event file): ``summaries`` at step 0, each scalar series, then
    ``end`` (a session's end info) at ``end_wall``."""
    writer = RunWriter(logdir, run)
    for summary in summaries:
        writer.summary(summary, wall=start)
    for tag, points in (scalars or {}).items():
        writer.scalars(tag, points, start)
    if end is not None:
        writer.summary(end, step=0, wall=end_wall)
    writer.close()


def curve(final: float, steps: int = 5, every: int = 10) -> list[tuple[int, float]]:
    """A deterministic series ending at ``final``: (0, final + steps), …, (last, final)."""
    return [(i * every, final + (steps - 1 - i)) for i in range(steps)]


# -- (a) the official API -----------------------------------------------------------------------

OFFICIAL_HPARAMS = [
    hp.HParam("learning_rate", hp.RealInterval(1e-4, 1e-1), display_name="learning rate"),
    hp.HParam("layers", hp.IntInterval(1, 8), description="hidden **layers**"),
    hp.HParam("optimizer", hp.Discrete(["adam", "rmsprop", "sgd"])),
    hp.HParam("batch_norm", hp.Discrete([False, True])),
    hp.HParam("dropout", hp.Discrete([0.0, 0.25, 0.5])),
]
OFFICIAL_METRICS = [
    hp.Metric("score", display_name="Score"),
    hp.Metric("loss", group="train", display_name="train loss", dataset_type=hp.Metric.TRAINING),
    hp.Metric(
        "loss",
        group="validation",
        display_name="validation loss",
        dataset_type=hp.Metric.VALIDATION,
    ),
    hp.Metric(
        "accuracy",
        group="validation",
        display_name="Accuracy",
        description="top-1 *accuracy*",
        dataset_type=hp.Metric.VALIDATION,
    ),
]
#: Session groups (trial ids) of the official logdir: hparams and how many repeated trials.
OFFICIAL_GROUPS: dict[str, tuple[dict[str, HParamValue], int]] = {
    "alpha": (
        {
            "learning_rate": 0.001,
            "layers": 2,
            "optimizer": "adam",
            "batch_norm": True,
            "dropout": 0.0,
        },
        3,
    ),
    "beta": (
        {
            "learning_rate": 0.01,
            "layers": 4,
            "optimizer": "sgd",
            "batch_norm": False,
            "dropout": 0.25,
        },
        3,
    ),
    "gamma": (
        {
            "learning_rate": 0.1,
            "layers": 8,
            "optimizer": "rmsprop",
            "batch_norm": True,
            "dropout": 0.5,
        },
        2,
    ),
    # No dropout: a session group with a missing hparam.
    "delta": ({"learning_rate": 0.0003, "layers": 1, "optimizer": "sgd", "batch_norm": False}, 1),
    "epsilon": (
        {
            "learning_rate": 0.05,
            "layers": 3,
            "optimizer": "adam",
            "batch_norm": False,
            "dropout": 0.5,
        },
        4,
    ),
}
#: Sessions with no validation accuracy (a metric missing from one session of a group).
OFFICIAL_NO_ACCURACY = {"beta/trial_2"}
#: Sessions (a whole group) that never log the score.
OFFICIAL_NO_SCORE = {"delta/trial_0"}
#: Sessions that failed, and the one still running (no end info).
OFFICIAL_FAILED = {"beta/trial_1", "epsilon/trial_3"}
OFFICIAL_RUNNING = {"gamma/trial_1"}


def write_official(root: Path) -> HparamsLogdir:
    """An experiment written with TensorBoard's official hparams API: the experiment summary
    (``hparams_config``) in the root run, a run per session ``<group>/trial_<n>`` (repeated
    trials share a ``trial_id``, so a session group has several sessions) with
    ``session_start_info`` (``hparams``), the metric ``score`` in the session run, ``loss`` in
    its sub-run ``train``, ``loss`` and ``accuracy`` in its sub-run ``validation``, and its
    ``session_end_info``."""
    logdir = root / "official"
    made = HparamsLogdir(logdir, {"."})
    write_run(
        logdir,
        ".",
        [hp.hparams_config_pb(OFFICIAL_HPARAMS, OFFICIAL_METRICS, time_created_secs=WALL)],
    )
    index = 0
    for g, (name, (hparams, trials)) in enumerate(OFFICIAL_GROUPS.items()):
        for trial in range(trials):
            session = f"{name}/trial_{trial}"
            start = WALL + 1000 * index
            index += 1
            # Distinct deterministic values: group g, trial t.
            base = 1.0 + g + 0.125 * trial
            summaries = [hp.hparams_pb(hparams, trial_id=name, start_time_secs=start)]
            scalars = {} if session in OFFICIAL_NO_SCORE else {"score": curve(10 * base)}
            end = None
            made.statuses[session] = None
            if session not in OFFICIAL_RUNNING:
                status = FAILURE if session in OFFICIAL_FAILED else SUCCESS
                made.statuses[session] = status
                end = session_end_pb(status, start + 60)
            write_run(
                logdir, session, summaries, scalars, start=start, end=end, end_wall=start + 60
            )
            write_run(logdir, f"{session}/train", (), {"loss": curve(base / 4)}, start=start)
            validation = {"loss": curve(base / 2)}
            if session not in OFFICIAL_NO_ACCURACY:
                validation["accuracy"] = curve(0.5 + base / 10, every=20)
            write_run(logdir, f"{session}/validation", (), validation, start=start)
            made.runs |= {session, f"{session}/train", f"{session}/validation"}
            made.groups[session] = name
    return made


# -- (b) tensorboardX add_hparams ---------------------------------------------------------------

#: The trials of the tensorboardX logdir: hparams, metrics (one lacks hparam/accuracy).
TBX_TRIALS: list[tuple[dict[str, HParamValue], dict[str, float]]] = [
    (
        {"lr": 0.1, "batch": 32, "opt": "adam", "augment": True},
        {"hparam/accuracy": 0.75, "hparam/loss": 0.5},
    ),
    (
        {"lr": 0.01, "batch": 64, "opt": "sgd", "augment": False},
        {"hparam/accuracy": 0.8, "hparam/loss": 0.25},
    ),
    (
        {"lr": 0.001, "batch": 16, "opt": "adam", "augment": False},
        {"hparam/accuracy": 0.625, "hparam/loss": 1.5},
    ),
    ({"lr": 0.05, "batch": 128, "opt": "rmsprop", "augment": True}, {"hparam/loss": 0.75}),
    (
        {"lr": 0.2, "batch": 32, "opt": "sgd", "augment": True},
        {"hparam/accuracy": 0.875, "hparam/loss": 0.375},
    ),
]


def write_tensorboardx(root: Path) -> HparamsLogdir:
    """Several trials, each a training run ``trial_<k>`` (its own scalars) that ends with
    tensorboardX ``add_hparams``: a timestamped sub-run ``trial_<k>/<time>`` holding an
    experiment summary, the session start and end info and the metrics, as
    ``torch.utils.tensorboard`` writes them too. The timestamps are fixed (``name=``)."""
    from tensorboardX import SummaryWriter

    logdir = root / "tbx"
    made = HparamsLogdir(logdir)
    for k, (hparams, metrics) in enumerate(TBX_TRIALS):
        run = f"trial_{k}"
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(0, 50, 10):
                w.add_scalar("train/loss", 2.0 - step / 50 - k / 10, step, walltime=WALL + step)
            stamp = f"{WALL + 100 * k:.6f}"
            w.add_hparams(hparams, metrics, name=stamp)
        session = f"{run}/{stamp}"
        made.runs |= {run, session}
        made.statuses[session] = SUCCESS
    return made


# -- (c) no experiment summary: inferred --------------------------------------------------------

#: Sessions of the inferred logdir: hparams, (final loss, final eval/acc or None), end status.
INFERRED_SESSIONS: dict[str, tuple[dict[str, HParamValue], tuple[float | None, float | None]]] = {
    "run_a": ({"lr": 0.1, "units": 64, "act": "relu", "residual": True, "seed": 1}, (0.5, 0.9)),
    "run_b": ({"lr": 0.01, "units": 128, "act": "gelu", "residual": False}, (0.25, 0.8)),
    "run_c": ({"lr": 0.3, "units": 32, "act": "relu", "residual": False, "seed": 2}, (0.75, None)),
    "run_d": ({"lr": 0.001, "units": 256, "act": "tanh", "residual": True}, (None, 0.7)),
    "run_e": ({"lr": 0.02, "units": 64, "act": "gelu", "residual": True, "seed": 3}, (0.125, 0.95)),
}
#: The session without end info, and the failed one.
INFERRED_RUNNING = {"run_e"}
INFERRED_FAILED = {"run_c"}


def write_inferred(root: Path) -> HparamsLogdir:
    """Sessions (``hparams`` without ``hparams_config``) with string/bool/float/int hparams and
    ``seed`` in some only; the metric ``loss`` in the session run and ``acc`` in its sub-run
    ``eval`` (each missing from one session); ``run_e`` without end info; and a run
    ``baseline`` with scalars of its own that is no session."""
    logdir = root / "inferred"
    made = HparamsLogdir(logdir, {"baseline"})
    write_run(logdir, "baseline", (), {"loss": curve(3.0)})
    for i, (session, (hparams, (loss, acc))) in enumerate(INFERRED_SESSIONS.items()):
        start = WALL + 500 * i
        summaries = [hp.hparams_pb(hparams, start_time_secs=start)]
        scalars = {"loss": curve(loss)} if loss is not None else {}
        end = None
        made.statuses[session] = None
        if session not in INFERRED_RUNNING:
            status = FAILURE if session in INFERRED_FAILED else SUCCESS
            made.statuses[session] = status
            end = session_end_pb(status, start + 30)
        write_run(logdir, session, summaries, scalars, start=start, end=end, end_wall=start + 30)
        made.runs.add(session)
        if acc is not None:
            write_run(logdir, f"{session}/eval", (), {"acc": curve(acc, every=5)}, start=start)
            made.runs.add(f"{session}/eval")
        made.groups[session] = hp._derive_session_group_name(None, hparams)
    return made


BUILDERS = {"official": write_official, "tbx": write_tensorboardx, "inferred": write_inferred}


def experiment_config(
    hparams: Sequence[hp.HParam], metrics: Sequence[hp.Metric]
) -> summary_pb2.Summary:
    """``hparams_config`` as a summary (for callers building their own experiments)."""
    return hp.hparams_config_pb(list(hparams), list(metrics), time_created_secs=WALL)


# -- (d) the rule tests' small logdirs -----------------------------------------------------------
# The data layer's, the store's and the API's tests (tests/data/test_hparams_rules.py's
# docstring lists their groups and values): five official trials (two of one group, a missing
# hparam and metric, metrics in sub-runs, one without end info), with or without the experiment
# summary; and four tensorboardX add_hparams calls under one writer's run.

#: The rule tests' official trials: (run, trial id, hparams, status or None, metrics by
#: run-relative group: {tag: {step: value}}).
RULES_TRIALS: list[
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
    return hp.hparams_pb(values, trial_id=trial, start_time_secs=start)


def write_rules(root: Path, *, with_experiment: bool = True) -> Path:
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
        root_run = RunWriter(logdir)
        root_run.summary(hp.hparams_config_pb(hparams, metrics, WALL - 100))
        root_run.close()
    for k, (run, trial, values, status, series) in enumerate(RULES_TRIALS):
        w = RunWriter(logdir, run)
        w.summary(start_pb(values, trial, WALL + k))
        for tag, points in series.get("", {}).items():
            w.scalars(tag, points)
        if status is not None:
            w.summary(session_end_pb(status, WALL + 100 + k), 99)
        w.close()
        for group, tags in series.items():
            if not group:
                continue
            sub = RunWriter(logdir, f"{run}/{group}")
            for tag, points in tags.items():
                sub.scalars(tag, points)
            sub.close()
    return logdir


#: tensorboardX trials: (sub-run name, hparams, metrics).
RULES_TBX_TRIALS: list[tuple[str, dict[str, object], dict[str, float]]] = [
    ("1700000001.5", {"lr": 0.1, "bsize": 32, "opt": "adam", "aug": True},
     {"hparam/accuracy": 0.8, "hparam/loss": 0.3}),
    ("1700000002.5", {"lr": 0.01, "bsize": 64, "opt": "sgd", "aug": False},
     {"hparam/accuracy": 0.7, "hparam/loss": 0.5}),
    ("1700000003.5", {"lr": 0.001, "bsize": 32, "opt": "adam", "aug": False},
     {"hparam/accuracy": 0.9, "hparam/loss": 0.1}),
    ("1700000004.5", {"lr": 0.1, "bsize": 128, "opt": "rmsprop", "aug": True},
     {"hparam/accuracy": 0.6, "hparam/loss": 0.9}),
]  # fmt: skip


def write_rules_tensorboardx(root: Path) -> Path:
    """A logdir as tensorboardX's (and PyTorch's) ``add_hparams`` writes it: a sub-run per call
    under the writer's run, each with its own experiment, start and end info, and its metrics
    as scalars; the writer's own run has training scalars."""
    from tensorboardX import SummaryWriter

    logdir = root / "tbx"
    with SummaryWriter(str(logdir / "exp")) as w:
        for step in range(3):
            w.add_scalar("train/loss", 1.0 / (step + 1), step)
        for name, values, metrics in RULES_TBX_TRIALS:
            w.add_hparams(values, metrics, name=name)
    return logdir
