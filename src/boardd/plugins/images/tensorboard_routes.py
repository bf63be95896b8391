"""TensorBoard's images and audio plugins: ``tags``, the entries of a series (``images``,
``audio``: each step's wall time, step and the query of its blob) and the blobs themselves
(``individualImage``, ``individualAudio``: streamed, never cached whole)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.params import integer, not_found, param, run_and_tag
from boardd.api.tensorboard.scope import Reader, Series
from boardd.api.tensorboard.series_routes import stream_blob, tag_index
from boardd.data.kinds import BLOB_SEQUENCES
from boardd.data.plugin_metadata import AUDIO_MEDIA_TYPES, audio_media_type, image_media_type
from boardd.data.series import BlobStep, Bounds

IMAGES = "images"
AUDIO = "audio"
#: Steps per series each route returns unless --samples-per-plugin says otherwise.
DEFAULT_SAMPLES = 10
#: An image step's first two blobs are its width and height (as text), then its images.
IMAGE_HEADER = 2


def _steps(
    reader: Reader, plugin: str, run: str, tag: str, samples: int | None
) -> tuple[Series, list[BlobStep]]:
    found = reader.one(BLOB_SEQUENCES, plugin, run, tag)
    if found is None:
        what = "image" if plugin == IMAGES else plugin
        raise not_found(f"No {what} data for run={run!r}, tag={tag!r}")
    (sequence,) = found.handle.provider.read_blob_sequences(
        found.handle.spec.name,
        [found.info],
        Bounds(downsample=samples),
    )
    return found, sequence.steps


def _blob_key(request: Request) -> str:
    key = param(request, "blob_key")
    if key is None:
        raise ApiError(400, "blob_key= is required")
    return key


async def image_tags(request: Request) -> Response:
    """``/data/plugin/images/tags``: ``samples`` is the most images any step has."""

    def build(reader: Reader) -> bytes:
        return tb_json(
            tag_index(
                reader,
                BLOB_SEQUENCES,
                IMAGES,
                lambda s: {"samples": s.info.max_length - IMAGE_HEADER},
            )
        )

    return await answer(request, build)


async def images(request: Request) -> Response:
    """``/data/plugin/images/images?run=&tag=&sample=``: the steps with a ``sample``-th image,
    each ``{wall_time, step, query}`` (``query``: the ``individualImage`` query of that
    image)."""
    run, tag = run_and_tag(request)
    sample = integer(request, "sample", 0)
    samples = sampling_hint(request, IMAGES, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        _, steps = _steps(reader, IMAGES, run, tag, samples)
        index = sample + IMAGE_HEADER
        return tb_json(
            [
                {
                    "wall_time": p.wall_time,
                    "step": p.step,
                    "query": urlencode({"blob_key": p.keys[index]}),
                }
                for p in steps
                if len(p.keys) > index
            ]
        )

    return await answer(request, build)


async def individual_image(request: Request) -> Response:
    """``/data/plugin/images/individualImage?blob_key=``: the image's bytes."""
    return await stream_blob(request, _blob_key(request), image_media_type)


async def audio_tags(request: Request) -> Response:
    """``/data/plugin/audio/tags``: ``samples`` is the most clips any step has."""

    def build(reader: Reader) -> bytes:
        return tb_json(
            tag_index(reader, BLOB_SEQUENCES, AUDIO, lambda s: {"samples": s.info.max_length})
        )

    return await answer(request, build)


async def audio(request: Request) -> Response:
    """``/data/plugin/audio/audio?run=&tag=&sample=``: the steps with a ``sample``-th clip,
    each ``{wall_time, step, label, contentType, query}``."""
    run, tag = run_and_tag(request)
    sample = integer(request, "sample", 0)
    samples = sampling_hint(request, AUDIO, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        found, steps = _steps(reader, AUDIO, run, tag, samples)
        media_type = audio_media_type(found.info.plugin_content)
        return tb_json(
            [
                {
                    "wall_time": p.wall_time,
                    "label": "",
                    "step": p.step,
                    "contentType": media_type,
                    "query": urlencode({"blob_key": p.keys[sample], "content_type": media_type}),
                }
                for p in steps
                if len(p.keys) > sample
            ]
        )

    return await answer(request, build)


async def individual_audio(request: Request) -> Response:
    """``/data/plugin/audio/individualAudio?blob_key=&content_type=``: the clip's bytes, as
    the content type its listing named (one the audio plugin serves)."""
    media_type = param(request, "content_type")
    if media_type is None:
        raise ApiError(400, "content_type= is required")
    if media_type not in AUDIO_MEDIA_TYPES:
        raise ApiError(400, f"Illegal mime type {media_type!r}")
    return await stream_blob(request, _blob_key(request), media_type)
