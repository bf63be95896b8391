"""Logdirs with checkpoints and hparams as users write them, ingested into a real store, and a
real lineage service over a real lineage.sqlite."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.plugins.hparams import summary_v2 as hp

from boardd.config import ExperimentSpec
from boardd.lineage import LineageService
from tests.conftest import WALL, ingest
from tests.hparams_logdirs import FAILURE, curve, session_end_pb, write_run

#: The tensorboardX trials: run name → (hparams, metrics).
TRIALS: dict[str, tuple[dict[str, Any], dict[str, float]]] = {
    "lr0.1": ({"lr": 0.1, "batch": 32, "opt": "adam", "augment": True}, {"hparam/acc": 0.75}),
    "lr0.01": ({"lr": 0.01, "batch": 64, "opt": "sgd", "augment": False}, {"hparam/acc": 0.8}),
}
#: The run written with TensorBoard's hparams API (a failed session).
OFFICIAL = "official"
OFFICIAL_HPARAMS = {"units": 64, "optimizer": "adam"}

CHECKPOINT_BYTES = bytes(range(256)) * 16


@dataclass
class TrainingLogdir:
    """A written logdir: its path, and each run's checkpoint files (absolute paths)."""

    path: Path
    checkpoints: dict[str, list[Path]] = field(default_factory=dict)
    #: Files in run directories that are not checkpoints (must not be recorded).
    others: list[Path] = field(default_factory=list)


def write_training_logdir(root: Path) -> TrainingLogdir:
    """Runs as PyTorch users write them with tensorboardX (scalars, then ``add_hparams``: a
    timestamped sub-run with the session), checkpoints beside the event files and in a
    ``checkpoints/`` directory below; and a run written with TensorBoard's hparams API whose
    session failed, with a safetensors checkpoint."""
    from tensorboardX import SummaryWriter

    logdir = root / "runs"
    made = TrainingLogdir(logdir)
    for k, (run, (hparams, metrics)) in enumerate(TRIALS.items()):
        directory = logdir / run
        with SummaryWriter(str(directory)) as writer:
            for step in range(0, 50, 10):
                writer.add_scalar("train/loss", 2.0 - step / 50, step, walltime=WALL + step)
            writer.add_hparams(hparams, metrics, name=f"{WALL + 100 * k:.6f}")
        (directory / "checkpoints").mkdir()
        files = [directory / "model-40.pt", directory / "checkpoints" / "epoch=4.ckpt"]
        for f in files:
            f.write_bytes(CHECKPOINT_BYTES)
        made.checkpoints[run] = files
        note = directory / "notes.txt"
        note.write_text("not a checkpoint\n")
        made.others.append(note)
    write_run(
        logdir,
        OFFICIAL,
        [hp.hparams_pb(OFFICIAL_HPARAMS, start_time_secs=WALL)],
        {"loss": curve(0.5)},
        start=WALL,
        end=session_end_pb(FAILURE, WALL + 60),
        end_wall=WALL + 60,
    )
    safetensors = logdir / OFFICIAL / "model.safetensors"
    safetensors.write_bytes(CHECKPOINT_BYTES)
    made.checkpoints[OFFICIAL] = [safetensors]
    return made


def records_in(path: str | Path) -> int:
    """The records of an event file as TensorBoard's own loader reads them (the oracle)."""
    return sum(1 for _ in RawEventFileLoader(str(path)).Load())


@dataclass
class Populated:
    """An ingested logdir and a lineage service over it."""

    spec: ExperimentSpec
    logdir: TrainingLogdir
    service: LineageService

    def read(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(store)`` on a read-only store of the lineage file."""
        return self.service.read(fn)


@pytest.fixture
def populated(tmp_path: Path) -> Iterator[Populated]:
    """The training logdir, ingested, its lineage refreshed once."""
    logdir = write_training_logdir(tmp_path)
    spec = ExperimentSpec("exp", logdir.path, tmp_path / "store.sqlite")
    ingest(logdir.path, spec.db, experiment=spec.name)
    service = LineageService(tmp_path / "state" / "lineage.sqlite", [spec])
    service.start()
    try:
        service.refresh_now()
        yield Populated(spec, logdir, service)
    finally:
        service.close()
