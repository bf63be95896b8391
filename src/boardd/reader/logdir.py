"""Discovery of runs in a logdir: which directories hold event files, and which files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

#: A file belongs to a run when its name contains this (TensorBoard's rule).
EVENT_FILE_MARKER = "tfevents"

#: The name of the run whose event files sit directly in the logdir.
ROOT_RUN = "."


@dataclass(frozen=True, slots=True)
class DiscoveryProblem:
    """A directory or file that could not be examined, and why (never fatal)."""

    path: str
    reason: str


@dataclass(slots=True)
class Discovery:
    """The runs of a logdir, each with its event files in name order."""

    runs: dict[str, list[Path]] = field(default_factory=dict)
    problems: list[DiscoveryProblem] = field(default_factory=list)


def is_event_file(name: str) -> bool:
    """Whether a file name marks a TensorBoard event file."""
    return EVENT_FILE_MARKER in name


def run_name(logdir: Path, directory: Path) -> str:
    """The run a directory stands for: its path relative to the logdir, "." for the root."""
    rel = os.path.relpath(directory, logdir)
    return ROOT_RUN if rel == os.curdir else Path(rel).as_posix()


def discover(logdir: str | os.PathLike[str]) -> Discovery:
    """Walks ``logdir`` (following symlinks, never looping) and returns its runs and problems.

    Runs are sorted by name; each run's files by file name, which for TensorBoard's writers is
    creation order (the name embeds the creation time). A directory that cannot be read is
    reported in ``problems`` and skipped; so is a symlink back to one of its own ancestors.
    """
    root = Path(logdir)
    result = Discovery()
    try:
        st = root.stat()
    except OSError as exc:
        result.problems.append(DiscoveryProblem(str(root), _reason(exc)))
        return result
    # Each pending directory carries the identities of its ancestors: a symlink back to one of
    # them is a loop. Two links to the same directory elsewhere are two runs, as in TensorBoard.
    pending: list[tuple[Path, frozenset[tuple[int, int]]]] = [
        (root, frozenset({(st.st_dev, st.st_ino)}))
    ]
    runs: dict[str, list[Path]] = {}
    while pending:
        directory, ancestors = pending.pop()
        files: list[Path] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    _visit(entry, directory, ancestors, files, pending, result.problems)
        except OSError as exc:
            result.problems.append(DiscoveryProblem(str(directory), _reason(exc)))
            continue
        if files:
            files.sort(key=lambda p: p.name)
            runs[run_name(root, directory)] = files
    result.runs = dict(sorted(runs.items()))
    return result


def _visit(
    entry: os.DirEntry[str],
    directory: Path,
    ancestors: frozenset[tuple[int, int]],
    files: list[Path],
    pending: list[tuple[Path, frozenset[tuple[int, int]]]],
    problems: list[DiscoveryProblem],
) -> None:
    path = directory / entry.name
    try:
        if entry.is_dir(follow_symlinks=True):
            st = entry.stat(follow_symlinks=True)
            key = (st.st_dev, st.st_ino)
            if key in ancestors:
                problems.append(DiscoveryProblem(str(path), "symlink loop: skipped"))
                return
            pending.append((path, ancestors | {key}))
        elif is_event_file(entry.name) and entry.is_file(follow_symlinks=True):
            files.append(path)
    except OSError as exc:
        problems.append(DiscoveryProblem(str(path), _reason(exc)))


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
