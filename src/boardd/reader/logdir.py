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
    runs, problems = walk(logdir)
    return Discovery({run: [Path(p) for p in paths] for run, paths in runs.items()}, problems)


def walk(logdir: str | os.PathLike[str]) -> tuple[dict[str, list[str]], list[DiscoveryProblem]]:
    """:func:`discover` in plain strings (paths as ``os.path.join`` makes them): the daemon's
    rescan at 10,000 runs.

    One ``scandir`` per directory and nothing else for a plain one: names, kinds and run names
    come from the directory entries. Only a symlinked directory is ``stat``-ed (a loop needs a
    symlink), and its ancestors' identities then, once each.
    """
    root = os.fspath(logdir)
    problems: list[DiscoveryProblem] = []
    try:
        st = os.stat(root)
    except OSError as exc:
        problems.append(DiscoveryProblem(root, _reason(exc)))
        return {}, problems
    identities: dict[str, tuple[int, int]] = {root: (st.st_dev, st.st_ino)}
    # Each pending directory: its path, its run name, and its ancestors (itself first, as a
    # linked list of paths) whose identities tell a loop.
    pending: list[tuple[str, str, _Chain]] = [(root, ROOT_RUN, (root, None))]
    runs: dict[str, list[str]] = {}
    while pending:
        directory, run, chain = pending.pop()
        files: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=True):
                            path = entry.path
                            if entry.is_symlink() and _loops(entry, chain, identities):
                                problems.append(DiscoveryProblem(path, "symlink loop: skipped"))
                                continue
                            child = name if run == ROOT_RUN else f"{run}/{name}"
                            pending.append((path, child, (path, chain)))
                        elif EVENT_FILE_MARKER in name and entry.is_file(follow_symlinks=True):
                            files.append(entry.path)
                    except OSError as exc:
                        problems.append(DiscoveryProblem(entry.path, _reason(exc)))
        except OSError as exc:
            problems.append(DiscoveryProblem(directory, _reason(exc)))
            continue
        if files:
            files.sort()  # one directory's: by name
            runs[run] = files
    return dict(sorted(runs.items())), problems


#: A directory and its ancestors: (path, the parent's chain), None above the logdir.
_Chain = tuple[str, "_Chain | None"]


def _loops(
    entry: os.DirEntry[str], chain: _Chain | None, identities: dict[str, tuple[int, int]]
) -> bool:
    """Whether the symlinked directory ``entry`` is one of its ancestors (``chain``); raises
    :class:`OSError` when its target cannot be examined."""
    st = entry.stat(follow_symlinks=True)  # the one is_dir() made, cached
    key = identities[entry.path] = (st.st_dev, st.st_ino)
    while chain is not None:
        ancestor, chain = chain
        known = identities.get(ancestor)
        if known is None:
            ast = os.stat(ancestor)
            known = identities[ancestor] = (ast.st_dev, ast.st_ino)
        if known == key:
            return True
    return False


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
