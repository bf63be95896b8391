"""TensorBoard's projector plugin: ``runs`` (the runs with embeddings), ``info`` (a run's
configuration), ``tensor`` (an embedding's points, float32), ``metadata`` (its labels, TSV),
``bookmarks``, ``sprite_image``; and the projector's own page (``index.js``,
``projector_binary.html``, ``projector_binary.js``) from the installed ``tensorboard`` package.

The embeddings are files beside the event files (:mod:`boardd.plugins.projector.data`), read
when asked for from local logdirs (never cached as answers: they change without a commit)."""

from __future__ import annotations

import importlib.util
import mimetypes
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import tb_json
from boardd.api.tensorboard.params import optional_integer, required
from boardd.api.tensorboard.scope import Reader, scope_of
from boardd.data.plugin_metadata import image_media_type

if TYPE_CHECKING:
    from boardd.plugins.projector.data import RunConfig

# The plugin's data module (and protocol buffers) is imported by the handlers: not on the start
# path.

#: The projector's page files, in the installed tensorboard package.
PAGE_FILES = ("index.js", "projector_binary.html", "projector_binary.js")


def configs(reader: Reader, *, shapes: bool = True) -> dict[str, RunConfig]:
    """The runs (outer names) of the addressed local logdirs that have embeddings to show
    (``shapes``: :func:`boardd.plugins.projector.data.find_configs`)."""
    from boardd.plugins.projector import data as data_projector

    found: dict[str, RunConfig] = {}
    for handle, provider, exp_id in reader.experiments():
        logdir = handle.spec.logdir
        if not isinstance(logdir, Path):
            continue  # a remote logdir: its embeddings are not read
        runs = [r.name for r in provider.runs(exp_id)]
        found_here = data_projector.find_configs(
            logdir,
            runs,
            shapes=shapes,
            recent=provider.plugin_state("projector", data_projector.RecentTensors),
        )
        for run, entry in found_here.items():
            found[reader.scope.outer(handle, run)] = entry
    return found


def has_embeddings(reader: Reader) -> bool:
    """Whether any addressed local logdir has embeddings to show (plugins_listing: the
    configurations only, not the points)."""
    return bool(configs(reader, shapes=False))


async def _answer(request: Request, build: Callable[[Reader], Response]) -> Response:
    """``build``'s answer, made in the thread pool (file reads), never cached."""
    from boardd.data.errors import DataError
    from boardd.plugins.projector.data import ProjectorError

    scope = scope_of(request)

    def run() -> Response:
        try:
            return build(Reader(scope))
        except ProjectorError as exc:
            raise ApiError(400, str(exc)) from None
        except (OSError, ValueError) as exc:
            raise DataError(f"projector: {exc}") from None

    return await run_in_threadpool(run)


def _entry(reader: Reader, run: str, *, shapes: bool = False) -> RunConfig:
    entry = configs(reader, shapes=shapes).get(run)
    if entry is None:
        raise ApiError(400, f'Unknown run: "{run}"')
    return entry


async def runs(request: Request) -> Response:
    """``/data/plugin/projector/runs``: the runs with embeddings."""
    return await _answer(
        request, lambda reader: Response(tb_json(list(configs(reader))), media_type=_JSON)
    )


async def info(request: Request) -> Response:
    """``/data/plugin/projector/info?run=``: the run's configuration (proto3 JSON)."""
    run = required(request, "run")

    def build(reader: Reader) -> Response:
        from google.protobuf import json_format

        config = _entry(reader, run, shapes=True).config
        return Response(tb_json(json_format.MessageToDict(config)), media_type=_JSON)

    return await _answer(request, build)


def _name_and_rows(request: Request) -> tuple[str, str, int | None]:
    run = required(request, "run")
    name = required(request, "name")
    rows = optional_integer(request, "num_rows", minimum=1)
    return run, name, rows


async def tensor(request: Request) -> Response:
    """``/data/plugin/projector/tensor?run=&name=[&num_rows=]``: the embedding's points as
    little-endian float32, row by row (its first ``num_rows`` rows)."""
    run, name, rows = _name_and_rows(request)

    def build(reader: Reader) -> Response:
        from boardd.plugins.projector import data as data_projector

        inner = reader.scope.inner(run)
        recent = (
            inner[0].provider.plugin_state("projector", data_projector.RecentTensors)
            if inner is not None
            else None
        )
        points = data_projector.read_tensor(_entry(reader, run), name, recent)
        if rows:
            points = points[:rows]
        return Response(points.astype("<f4").tobytes(), media_type="application/octet-stream")

    return await _answer(request, build)


async def metadata(request: Request) -> Response:
    """``/data/plugin/projector/metadata?run=&name=[&num_rows=]``: the embedding's labels."""
    run, name, rows = _name_and_rows(request)

    def build(reader: Reader) -> Response:
        from boardd.plugins.projector import data as data_projector

        text = data_projector.read_metadata(_entry(reader, run), name, rows)
        return Response(text.encode("utf-8"), media_type="text/plain; charset=utf-8")

    return await _answer(request, build)


async def bookmarks(request: Request) -> Response:
    """``/data/plugin/projector/bookmarks?run=&name=``: the embedding's bookmarks (JSON)."""
    run, name = required(request, "run"), required(request, "name")

    def build(reader: Reader) -> Response:
        from boardd.plugins.projector import data as data_projector

        body = data_projector.read_file(_entry(reader, run), name, "bookmarks")
        return Response(body, media_type=_JSON)

    return await _answer(request, build)


async def sprite_image(request: Request) -> Response:
    """``/data/plugin/projector/sprite_image?run=&name=``: the embedding's sprite image."""
    run, name = required(request, "run"), required(request, "name")

    def build(reader: Reader) -> Response:
        from boardd.plugins.projector import data as data_projector

        body = data_projector.read_file(_entry(reader, run), name, "sprite")
        return Response(body, media_type=image_media_type(body[:16]))

    return await _answer(request, build)


def page_folder() -> Path | None:
    """The installed tensorboard package's projector page folder, or None."""
    try:
        spec = importlib.util.find_spec("tensorboard")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "plugins" / "projector" / "tf_projector_plugin"
        if path.is_dir():
            return path
    return None


def page_file(name: str) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint serving one of the projector's page files (404 without the package)."""

    async def serve(request: Request) -> Response:
        folder = page_folder()
        if folder is None or not (folder / name).is_file():
            raise ApiError(404, f'{name}: pip install "boardd[tensorboard]" for the projector')
        body = await run_in_threadpool((folder / name).read_bytes)
        media = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return Response(body, media_type=media, headers={"cache-control": "no-cache"})

    serve.__name__ = f"projector_{name.replace('.', '_')}"
    return serve


_JSON = "application/json"
