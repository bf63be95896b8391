"""The types boardd registers in the lineage store for what it sees in logdirs, and the stable
keys (external ids) of the records it keeps there.

Every record boardd derives has an external id starting with :data:`KEY_PREFIX`; that is how
the populator tells its own records from a user's (which it never writes). Keys name things by
what outlives a logdir store's rebuild: experiment name, run name, absolute file path.
"""

from __future__ import annotations

import fnmatch
from typing import Any

#: The ContextType of a watched logdir (one context per experiment).
EXPERIMENT = "Experiment"
#: The ExecutionType of a run (a directory of event files).
TRAINING_RUN = "TrainingRun"
#: The ArtifactType of an event file.
EVENT_FILE = "EventFile"
#: The ArtifactType of a checkpoint file in a run's directory.
CHECKPOINT = "Checkpoint"

#: Every external id boardd gives its own records starts with this.
KEY_PREFIX = "boardd:"

#: File names that look like checkpoints (issue 15 §3), as fnmatch patterns.
CHECKPOINT_PATTERNS = ("*.ckpt*", "checkpoint", "*.pt", "*.pth", "*.safetensors", "saved_model.pb")

#: type name → kind → property name → PropertyType name (MLMD's enum: INT, DOUBLE, STRING…).
PROPERTIES: dict[str, dict[str, str]] = {
    EXPERIMENT: {"logdir": "STRING"},
    TRAINING_RUN: {
        "experiment": "STRING",
        "run": "STRING",
        "start_time": "INT",
        "end_time": "INT",
        "last_step": "INT",
        "status": "STRING",
    },
    EVENT_FILE: {"run": "STRING", "size": "INT", "records": "INT", "counted_bytes": "INT"},
    CHECKPOINT: {"run": "STRING", "size": "INT", "mtime": "INT"},
}
#: Which kind of type each name is.
KINDS = {
    EXPERIMENT: "context",
    TRAINING_RUN: "execution",
    EVENT_FILE: "artifact",
    CHECKPOINT: "artifact",
}


def is_checkpoint(name: str) -> bool:
    """Whether a file name looks like a checkpoint."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in CHECKPOINT_PATTERNS)


def experiment_key(experiment: str) -> str:
    """The external id of an experiment's context."""
    return f"{KEY_PREFIX}experiment:{experiment}"


def run_key(experiment: str, run: str) -> str:
    """The external id of a run's execution."""
    return f"{KEY_PREFIX}run:{experiment}/{run}"


def file_key(path: str) -> str:
    """The external id of an event file's or a checkpoint's artifact (its absolute path)."""
    return f"{KEY_PREFIX}file:{path}"


def is_ours(external_id: str) -> bool:
    """Whether a record's external id marks it as derived by boardd."""
    return external_id.startswith(KEY_PREFIX)


def type_message(name: str, pb2: Any) -> Any:
    """The type message (ArtifactType, ExecutionType or ContextType) boardd registers."""
    message = {
        "context": pb2.ContextType,
        "execution": pb2.ExecutionType,
        "artifact": pb2.ArtifactType,
    }[KINDS[name]]()
    message.name = name
    for prop, kind in PROPERTIES[name].items():
        message.properties[prop] = pb2.PropertyType.Value(kind)
    return message
