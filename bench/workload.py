"""The benchmark workloads: deterministic tensorboardX logdirs, generated once and cached."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Bump whenever the bytes a spec produces change (event order, values, tag names...): a cached
# workload whose marker carries another version is regenerated.
WORKLOAD_VERSION = 1

MARKER_NAME = ".boardd-workload.json"
BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_CACHE = BENCH_DIR / ".cache"
# A fixed host part keeps file names (and so discovery order) identical on every machine.
EVENT_FILE_SUFFIX = "boardd-bench"


@dataclass(frozen=True)
class WorkloadSpec:
    """Shape of a workload: what each run holds. Every run has the same shape."""

    name: str
    runs: int
    scalar_tags: int
    scalar_steps: int
    histogram_steps: int
    histogram_samples: int
    image_steps: int
    image_size: int
    text_steps: int
    seed: int = 20_240_601
    base_wall_time: float = 1_700_000_000.0
    step_seconds: float = 0.1

    def events_per_run(self) -> int:
        """Events in one run's files: training file plus the hparams sub-run of add_hparams."""
        training = 1 + self.scalar_tags * self.scalar_steps
        training += self.histogram_steps + self.image_steps + self.text_steps
        # add_hparams: file_version, experiment, session start, session end, one metric scalar.
        return training + 5


STANDARD = WorkloadSpec(
    name="standard",
    runs=16,
    scalar_tags=16,
    scalar_steps=10_000,
    histogram_steps=500,
    histogram_samples=1_000,
    image_steps=50,
    image_size=32,
    text_steps=20,
)

SMALL = WorkloadSpec(
    name="small",
    runs=2,
    scalar_tags=4,
    scalar_steps=2_000,
    histogram_steps=100,
    histogram_samples=1_000,
    image_steps=10,
    image_size=32,
    text_steps=4,
)


@dataclass(frozen=True)
class Manifest:
    """What a generated workload holds, as recorded in its marker file."""

    path: Path
    spec: WorkloadSpec
    total_bytes: int
    events: int
    files: int

    @property
    def runs(self) -> int:
        """Run directories as TensorBoard counts them (each add_hparams adds a sub-run)."""
        return self.spec.runs * 2


def cache_root() -> Path:
    """Where workloads are cached: ``$BOARDD_BENCH_DIR`` if set, else ``bench/.cache``."""
    env = os.environ.get("BOARDD_BENCH_DIR")
    return Path(env) if env else DEFAULT_CACHE


def standard_workload(path: Path | None = None) -> Path:
    """Return the standard workload's logdir, generating it first if it is missing or stale."""
    return ensure_workload(STANDARD, path)


def small_workload(path: Path | None = None) -> Path:
    """Return the small workload's logdir (for quick checks), generating it if needed."""
    return ensure_workload(SMALL, path)


def ensure_workload(
    spec: WorkloadSpec, path: Path | None = None, *, force: bool = False, jobs: int | None = None
) -> Path:
    """Return the logdir of ``spec`` at ``path`` (default: the cache), generating it if needed.

    Generation happens in a sibling temporary directory that is renamed into place once
    complete, under a file lock, so concurrent callers never see a half-written workload.
    """
    target = Path(path) if path is not None else cache_root() / spec.name
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{target.name}.lock"):
        if not force and _is_current(target, spec):
            return target
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            manifest = _generate(spec, tmp, jobs=jobs)
            if target.exists():
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(
            f"workload {spec.name!r} ready at {target}: {manifest.total_bytes:,} bytes, "
            f"{manifest.events:,} events in {manifest.files} files",
            file=sys.stderr,
        )
    return target


def read_manifest(path: Path) -> Manifest:
    """Read the marker of a generated workload (raises FileNotFoundError if there is none)."""
    raw = json.loads((Path(path) / MARKER_NAME).read_text())
    return Manifest(
        path=Path(path),
        spec=WorkloadSpec(**raw["spec"]),
        total_bytes=int(raw["total_bytes"]),
        events=int(raw["events"]),
        files=int(raw["files"]),
    )


def event_files(logdir: Path) -> list[Path]:
    """All event files under ``logdir``, sorted by path."""
    return sorted(p for p in Path(logdir).rglob("*tfevents*") if p.is_file())


def _is_current(target: Path, spec: WorkloadSpec) -> bool:
    try:
        raw = json.loads((target / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return False
    if raw.get("version") != WORKLOAD_VERSION or raw.get("spec") != dataclasses.asdict(spec):
        return False
    # A truncated or partly deleted cache must not pass for the real thing.
    return bool(sum(p.stat().st_size for p in event_files(target)) == raw.get("total_bytes"))


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _generate(spec: WorkloadSpec, out: Path, *, jobs: int | None) -> Manifest:
    out.mkdir(parents=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, spec.runs))
    started = time.perf_counter()
    print(
        f"generating workload {spec.name!r} ({spec.runs} runs, {jobs} processes) in {out}",
        file=sys.stderr,
    )
    total_bytes = 0
    events = 0
    # fork keeps the already imported tensorboardX; each run draws from its own seeded RNG, so
    # the bytes do not depend on which process writes which run.
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes=jobs) as pool:
        tasks = [(spec, out, i) for i in range(spec.runs)]
        for done, (run_name, nbytes, nevents) in enumerate(
            pool.imap_unordered(_write_run_task, tasks), start=1
        ):
            total_bytes += nbytes
            events += nevents
            elapsed = time.perf_counter() - started
            print(
                f"  [{done:>2}/{spec.runs}] {run_name}: {nbytes / 1e6:6.1f} MB, "
                f"{nevents:,} events ({elapsed:.0f} s)",
                file=sys.stderr,
            )
    files = len(event_files(out))
    marker = {
        "version": WORKLOAD_VERSION,
        "spec": dataclasses.asdict(spec),
        "total_bytes": total_bytes,
        "events": events,
        "files": files,
        "generated_in_seconds": round(time.perf_counter() - started, 1),
    }
    (out / MARKER_NAME).write_text(json.dumps(marker, indent=2) + "\n")
    return Manifest(path=out, spec=spec, total_bytes=total_bytes, events=events, files=files)


def _write_run_task(task: tuple[WorkloadSpec, Path, int]) -> tuple[str, int, int]:
    spec, out, index = task
    return _write_run(spec, out, index)


class _EventFile:
    """One event file written record by record with tensorboardX's own RecordWriter.

    This is what tensorboardX's FileWriter does minus its queue and writer thread (which cost
    ~35 µs per event, an hour of CPU over the standard workload); the bytes are the same,
    except that wall times are ours to fix, which makes the workload reproducible.
    """

    def __init__(self, directory: Path, wall_time: float) -> None:
        from tensorboardX.proto import event_pb2
        from tensorboardX.record_writer import RecordWriter

        directory.mkdir(parents=True, exist_ok=True)
        name = f"events.out.tfevents.{int(wall_time)}.{EVENT_FILE_SUFFIX}"
        self.path = directory / name
        self._event_cls = event_pb2.Event
        self._writer = RecordWriter(str(self.path))
        self.events = 0
        self._write(self._event_cls(wall_time=wall_time, file_version="brain.Event:2"))

    def add_summary(self, summary: Any, step: int, wall_time: float) -> None:
        """Write one Event holding ``summary`` (as tensorboardX's ``add_summary`` builds it)."""
        self._write(self._event_cls(summary=summary, step=step, wall_time=wall_time))

    def _write(self, event: Any) -> None:
        # deterministic=True sorts map entries (hparams); nothing else changes.
        self._writer.write(event.SerializeToString(deterministic=True))
        self.events += 1

    def close(self) -> int:
        """Close the file and return its size in bytes."""
        self._writer.close()
        return self.path.stat().st_size


def _use_native_crc() -> None:
    """Make tensorboardX compute CRC32C in C instead of its pure-Python byte loop.

    Without the optional ``crc32c`` package tensorboardX checksums every byte in Python
    (minutes for 200 MB). google-crc32c computes the same function; checked here on sample data
    so a mismatch can never produce a workload with bad checksums.
    """
    import google_crc32c
    import tensorboardX.crc32c as tbx_crc
    import tensorboardX.record_writer as record_writer

    native = google_crc32c.value
    for sample in (b"", b"a", b"boardd benchmark workload", bytes(range(256)) * 3):
        if native(sample) != tbx_crc.crc32c(sample):
            print("warning: google-crc32c disagrees with tensorboardX; slow path", file=sys.stderr)
            return
    record_writer.crc32c = native


def _write_run(spec: WorkloadSpec, out: Path, index: int) -> tuple[str, int, int]:
    from tensorboardX import SummaryWriter
    from tensorboardX import summary as tbx_summary

    _use_native_crc()
    rng = np.random.default_rng([spec.seed, index])
    run_name = f"run_{index:02d}"
    run_dir = out / run_name
    t0 = spec.base_wall_time + index * 1_000.0
    steps = spec.scalar_steps

    # The exact bins add_histogram uses by default (bins="tensorflow"); write_to_disk=False
    # makes SummaryWriter create no file.
    probe = SummaryWriter(logdir=str(run_dir), write_to_disk=False)
    default_bins = probe.default_bins
    probe.close()

    tags = [f"train/metric_{j:02d}" for j in range(spec.scalar_tags)]
    values = _scalar_curves(rng, spec.scalar_tags, steps)
    hist_every = max(1, steps // max(1, spec.histogram_steps))
    image_every = max(1, steps // max(1, spec.image_steps))
    text_every = max(1, steps // max(1, spec.text_steps))

    events = 0
    nbytes = 0
    writer = _EventFile(run_dir, t0)
    scalar = tbx_summary.scalar
    for step in range(steps):
        wall = t0 + step * spec.step_seconds
        for tag, column in zip(tags, values, strict=True):
            writer.add_summary(scalar(tag, column[step]), step, wall)
        if step % hist_every == 0 and step // hist_every < spec.histogram_steps:
            samples = rng.normal(loc=step / steps, scale=1.0, size=spec.histogram_samples)
            hist = tbx_summary.histogram("weights/layer_0", samples, default_bins)
            writer.add_summary(hist, step, wall)
        if step % image_every == 0 and step // image_every < spec.image_steps:
            size = spec.image_size
            pixels = rng.integers(0, 256, size=(3, size, size), dtype=np.uint8)
            writer.add_summary(tbx_summary.image("samples/input", pixels), step, wall)
        if step % text_every == 0 and step // text_every < spec.text_steps:
            note = f"step {step}: **{run_name}** loss {values[0][step]:.4f}\n\n- sample note"
            writer.add_summary(tbx_summary.text("notes", note), step, wall)
    events += writer.events
    nbytes += writer.close()

    # What add_hparams(name="hparams") writes: a sub-run holding the experiment, the session
    # start/end and the metric as a scalar at step 0.
    hparams = {
        "lr": float(10 ** rng.uniform(-4.0, -2.0)),
        "opt": ("adam", "sgd", "adamw")[index % 3],
        "layers": 2 + index % 4,
    }
    metrics = {"hparam/loss": float(values[0][-1])}
    exp, ssi, sei = tbx_summary.hparams(hparams, metrics)
    for summary in (exp, ssi, sei):
        _canonical_plugin_content(summary)
    wall = t0 + steps * spec.step_seconds
    hp_writer = _EventFile(run_dir / "hparams", wall)
    for summary in (exp, ssi, sei):
        hp_writer.add_summary(summary, 0, wall)
    for tag, value in metrics.items():
        hp_writer.add_summary(scalar(tag, value), 0, wall)
    events += hp_writer.events
    nbytes += hp_writer.close()
    return run_name, nbytes, events


def _canonical_plugin_content(summary: Any) -> None:
    """Re-serialize hparams plugin content with sorted map entries.

    tensorboardX serializes the session's hparams map in hash order, which differs between
    processes; sorting keeps the workload byte-for-byte reproducible and means the same.
    """
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData

    for value in summary.value:
        data = value.metadata.plugin_data
        parsed = HParamsPluginData.FromString(data.content)
        data.content = parsed.SerializeToString(deterministic=True)


def _scalar_curves(rng: np.random.Generator, tags: int, steps: int) -> list[list[float]]:
    """Noisy decaying curves, one per tag, as float32 values (what simple_value stores)."""
    x = np.arange(steps, dtype=np.float64)
    scale = rng.uniform(0.5, 5.0, size=(tags, 1))
    tau = rng.uniform(steps / 20, steps / 2, size=(tags, 1))
    noise = rng.normal(0.0, 0.02, size=(tags, steps))
    curves = scale * np.exp(-x / tau) + noise * scale
    return [[float(v) for v in row.astype(np.float32)] for row in curves]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: generate (or find in the cache) a workload and print its size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="the small workload (quick checks)")
    parser.add_argument("--out", type=Path, help="logdir to write (default: the cache)")
    parser.add_argument("--force", action="store_true", help="regenerate even if cached")
    parser.add_argument("--jobs", type=int, help="writer processes (default: CPU count)")
    args = parser.parse_args(argv)
    spec = SMALL if args.small else STANDARD
    path = ensure_workload(spec, args.out, force=args.force, jobs=args.jobs)
    manifest = read_manifest(path)
    mib = manifest.total_bytes / 2**20
    print(f"{path}")
    print(
        f"{manifest.total_bytes:,} bytes ({mib:.1f} MiB), {manifest.events:,} events, "
        f"{manifest.files} event files, {manifest.runs} runs "
        f"({spec.runs} training runs + their hparams sub-runs)"
    )
    # Guard against a spec/generator mismatch going unnoticed.
    expected = spec.events_per_run() * spec.runs
    if manifest.events != expected:
        print(f"warning: expected {expected:,} events", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
