"""The projector's embeddings: what tensorboardX's and PyTorch's ``add_embedding`` write beside
the event files (``projector_config.pbtxt`` naming TSV files of points, labels, a sprite).

They are files of the logdir, not event data: they are read from a local logdir when asked
for, never stored. Every file an embedding names must resolve inside the folder of the
configuration naming it, as TensorBoard requires. Embeddings in TensorFlow checkpoints are
not read (TensorBoard needs TensorFlow for them too)."""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from google.protobuf import text_format

from boardd.proto.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

log = logging.getLogger(__name__)

CONFIG_FILE = "projector_config.pbtxt"
#: Where TensorFlow's plugin-asset writer puts a run's configuration.
ASSETS = Path("plugins") / "org_tensorflow_tensorboard_projector"


class RunConfig(NamedTuple):
    """A run's projector configuration and the file it was read from."""

    config: ProjectorConfig
    path: Path


class ProjectorError(ValueError):
    """A request the configuration cannot answer (TensorBoard's 400s)."""


def run_folder(logdir: Path, run: str) -> Path:
    return logdir if run == "." else logdir / run


def _candidates(logdir: Path, runs: Iterable[str]) -> list[tuple[str, Path]]:
    """(run, folder that may hold its configuration), in TensorBoard's order: each run's
    folder, then its plugin-asset folder, then the logdir itself as run "." (the later one
    of a run wins)."""
    pairs = [(run, run_folder(logdir, run)) for run in runs]
    pairs += [(run, folder / ASSETS) for run, folder in pairs if (folder / ASSETS).is_dir()]
    if not any(run == "." for run, _ in pairs):
        pairs.append((".", logdir))
    return pairs


def find_configs(
    logdir: Path,
    runs: Iterable[str],
    *,
    shapes: bool = True,
    recent: RecentTensors | None = None,
) -> dict[str, RunConfig]:
    """The runs with embeddings to show, each with its configuration (tensor names without
    TensorFlow's ``:0``; with ``shapes``, each TSV embedding's shape filled in when its file
    gives it, which reads the file, kept in ``recent`` if given)."""
    found: dict[str, RunConfig] = {}
    for run, folder in _candidates(logdir, runs):
        path = folder / CONFIG_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("projector: %s cannot be read: %s", path, exc)
            continue
        config = ProjectorConfig()
        try:
            text_format.Parse(text, config)
        except text_format.ParseError as exc:
            log.warning("projector: %s is not a projector configuration: %s", path, exc)
            continue
        if not any(e.tensor_path for e in config.embeddings) and not config.model_checkpoint_path:
            continue
        for embedding in config.embeddings:
            if embedding.tensor_path and not embedding.tensor_name:
                embedding.tensor_name = os.path.basename(embedding.tensor_path)
        found[run] = RunConfig(config, path)
    for run, entry in list(found.items()):
        for embedding in entry.config.embeddings:
            embedding.tensor_name = embedding.tensor_name.removesuffix(":0")
            if shapes and embedding.tensor_path and not embedding.tensor_shape:
                try:
                    tensor = read_tensor(entry, embedding.tensor_name, recent)
                except (ProjectorError, OSError, ValueError) as exc:
                    log.warning("projector: run %r, %s: %s", run, embedding.tensor_name, exc)
                    continue
                embedding.tensor_shape.extend(tensor.shape[:2])
        if not entry.config.embeddings:
            del found[run]
    return found


def asset_path(entry: RunConfig, given: str) -> Path:
    """A file an embedding names, relative to its configuration's folder (or absolute, or
    starting with ~), resolved; ProjectorError when it resolves outside that folder."""
    folder = Path(os.path.realpath(entry.path.parent.expanduser()))
    candidate = Path(os.path.expanduser(given))
    resolved = Path(os.path.realpath(folder / candidate))
    if resolved != folder and folder not in resolved.parents:
        raise ProjectorError(f'Asset path "{given}" resolves outside the config directory')
    return resolved


def embedding(entry: RunConfig, name: str) -> EmbeddingInfo | None:
    """The configuration's embedding of that tensor name (with or without ``:0``)."""
    wanted = name if ":" in name else name + ":0"
    info: EmbeddingInfo
    for info in entry.config.embeddings:
        if (info.tensor_name if ":" in info.tensor_name else info.tensor_name + ":0") == wanted:
            return info
    return None


class RecentTensors:
    """The last few embedding tensors read, by (file, modification time, size): the projector
    asks for one tensor again and again while a user explores it. Owned by the experiment's
    data provider (:mod:`boardd.data.sqlite_provider`). Thread-safe."""

    def __init__(self, kept: int = 2) -> None:
        self.kept = kept
        self._lock = threading.Lock()
        self._tensors: OrderedDict[tuple[str, int, int], npt.NDArray[np.float32]] = OrderedDict()

    def get(self, key: tuple[str, int, int]) -> npt.NDArray[np.float32] | None:
        with self._lock:
            found = self._tensors.get(key)
            if found is not None:
                self._tensors.move_to_end(key)
            return found

    def put(self, key: tuple[str, int, int], tensor: npt.NDArray[np.float32]) -> None:
        with self._lock:
            self._tensors[key] = tensor
            while len(self._tensors) > self.kept:
                self._tensors.popitem(last=False)


def read_tensor(
    entry: RunConfig, name: str, recent: RecentTensors | None = None
) -> npt.NDArray[np.float32]:
    """The points of an embedding, as float32 [points, dimensions]: its TSV file (or, if that
    is not text, raw float32 of its ``tensor_shape``), kept in ``recent`` if given.
    ProjectorError when it has none."""
    info = embedding(entry, name)
    if info is None or not info.tensor_path:
        raise ProjectorError(
            f'Tensor "{name}" not found in checkpoint dir "{entry.config.model_checkpoint_path}"'
        )
    path = asset_path(entry, info.tensor_path)
    try:
        stat = path.stat()
    except OSError:
        raise ProjectorError(f'Tensor file "{path}" does not exist') from None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    cached = recent.get(key) if recent is not None else None
    if cached is not None:
        return cached
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        shape = list(info.tensor_shape)
        if len(shape) != 2:
            raise ProjectorError(f"Tensor must be 2D, got shape {shape}") from None
        tensor = np.fromfile(path, dtype="<f4").reshape(shape)
    else:
        rows = [[float(x) for x in line.split("\t")] for line in text.split("\n") if line]
        tensor = np.array(rows, dtype=np.float32)
    if recent is not None:
        recent.put(key, tensor)
    return tensor


def read_metadata(entry: RunConfig, name: str, rows: int | None) -> str:
    """An embedding's labels (TSV), its first ``rows`` rows (and its header row) at most."""
    info = embedding(entry, name)
    if info is None or not info.metadata_path:
        raise ProjectorError(
            f'No metadata file found for tensor "{name}" in the config file "{entry.path}"'
        )
    path = asset_path(entry, info.metadata_path)
    if not path.is_file():
        raise ProjectorError(f'"{path}" not found, or is not a file')
    parts = path.read_text(encoding="utf-8").split("\n")
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    header = 1 if lines and "\t" in lines[0] else 0
    if rows:
        lines = lines[: rows + header]
    return "".join(lines)


def read_file(entry: RunConfig, name: str, which: str) -> bytes:
    """An embedding's bookmarks (``which`` "bookmarks") or sprite image ("sprite")."""
    info = embedding(entry, name)
    given = None
    if info is not None:
        given = info.bookmarks_path if which == "bookmarks" else info.sprite.image_path
    if not given:
        what = "bookmarks" if which == "bookmarks" else "sprite image"
        raise ProjectorError(
            f'No {what} file found for tensor "{name}" in the config file "{entry.path}"'
        )
    path = asset_path(entry, given)
    if not path.is_file():
        raise ProjectorError(f'"{path}" not found, or is not a file')
    return path.read_bytes()
