"""TensorBoard's own HTTP routes over boardd's stores, so TensorBoard's UI runs on boardd.

Each route is a thin encoder over :mod:`boardd.data` in TensorBoard's answer shapes. The same
routes answer under ``/data``, ``/experiment/{name}/data`` (one experiment, its own run
names) and both again under ``/tensorboard`` (where TensorBoard's UI is served, and whence it
asks relative to its page).
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route

from boardd.api.deferred import Endpoint, deferred
from boardd.api.routing import indexed_router
from boardd.api.tensorboard import core
from boardd.api.tensorboard.answers import CACHED_FIRST, cached_first
from boardd.api.tensorboard.scope import EXPERIMENT_PARAM
from boardd.plugins.projector import tensorboard_routes as projector
from boardd.plugins.scalars import tensorboard_routes as scalars

#: The mount points of the data routes.
PREFIXES = ("", "/tensorboard")


def _plugin(module: str, name: str) -> Endpoint:
    """The handler ``name`` of a plugin's TensorBoard routes (``boardd.plugins.<module>``),
    imported by its first request (:mod:`boardd.api.deferred`): the scalars plugin, which a
    TensorBoard page asks first, is imported with the app; the other plugins after the
    daemon's first answer."""
    return deferred(f"boardd.plugins.{module}.tensorboard_routes", name)


def _cached(path: str, module: str, name: str) -> Route:
    """A GET route of a deferred plugin handler that looks in the cache first."""
    return Route(path, cached_first(_plugin(module, name)), methods=["GET"])


def _any(path: str, module: str, name: str) -> Route:
    """A GET-or-POST route of a deferred plugin handler (TensorBoard's UI posts its queries)."""
    return Route(path, _plugin(module, name), methods=["GET", "POST"])


def data_routes() -> list[BaseRoute]:
    """The routes under a ``data`` mount (a GET route answered by ``answer()`` alone looks in
    the cache first: :func:`~boardd.api.tensorboard.answers.cached_first`)."""
    get = ["GET"]
    post = ["POST"]
    return [
        Route("/environment", core.environment, methods=get),
        Route("/runs", cached_first(core.runs), methods=get),
        Route("/plugins_listing", cached_first(core.plugins_listing), methods=get),
        Route("/experiments", core.empty_list, methods=get),
        Route("/experiment_runs", core.empty_list, methods=get),
        Route("/window_properties", core.window_properties, methods=get),
        Route("/notifications", core.notifications, methods=get),
        Route("/logdir", core.logdir, methods=get),
        Route("/plugin_entry.html", core.plugin_entry, methods=get),
        Route("/plugin/debugger-v2/runs", core.no_debugger_runs, methods=get),
        Route("/plugin/scalars/tags", cached_first(scalars.tags), methods=get),
        Route("/plugin/scalars/scalars", cached_first(scalars.scalars), methods=get),
        Route("/plugin/scalars/scalars_multirun", scalars.scalars_multirun, methods=post),
        # custom scalars (the layout a writer describes, its regex-matched scalars)
        _cached("/plugin/custom_scalars/layout", "custom_scalars", "layout"),
        _cached("/plugin/custom_scalars/scalars", "custom_scalars", "scalars"),
        _cached("/plugin/custom_scalars/download_data", "custom_scalars", "download_data"),
        # graphs (a run's graph, a tagged step's graphs and metadata)
        _cached("/plugin/graphs/info", "graphs", "info"),
        _cached("/plugin/graphs/graph", "graphs", "graph"),
        _cached("/plugin/graphs/run_metadata", "graphs", "run_metadata"),
        # mesh (add_mesh: each mesh's parts, their data)
        _cached("/plugin/mesh/tags", "mesh", "tags"),
        _cached("/plugin/mesh/meshes", "mesh", "meshes"),
        _cached("/plugin/mesh/data", "mesh", "data"),
        # the projector (add_embedding: files beside the event files, never cached)
        Route("/plugin/projector/runs", projector.runs, methods=get),
        Route("/plugin/projector/info", projector.info, methods=get),
        Route("/plugin/projector/tensor", projector.tensor, methods=get),
        Route("/plugin/projector/metadata", projector.metadata, methods=get),
        Route("/plugin/projector/bookmarks", projector.bookmarks, methods=get),
        Route("/plugin/projector/sprite_image", projector.sprite_image, methods=get),
        *(
            Route(f"/plugin/projector/{name}", projector.page_file(name), methods=get)
            for name in projector.PAGE_FILES
        ),
        # histograms, distributions, images, audio, text, pr_curves
        _cached("/plugin/histograms/tags", "histograms", "tags"),
        _cached("/plugin/histograms/histograms", "histograms", "histograms"),
        _cached("/plugin/distributions/tags", "histograms", "tags"),
        _cached("/plugin/distributions/distributions", "histograms", "distributions"),
        _cached("/plugin/images/tags", "images", "image_tags"),
        _cached("/plugin/images/images", "images", "images"),
        Route("/plugin/images/individualImage", _plugin("images", "individual_image"), methods=get),
        _cached("/plugin/audio/tags", "images", "audio_tags"),
        _cached("/plugin/audio/audio", "images", "audio"),
        Route("/plugin/audio/individualAudio", _plugin("images", "individual_audio"), methods=get),
        _cached("/plugin/text/tags", "text", "tags"),
        _cached("/plugin/text/text", "text", "text"),
        _cached("/plugin/pr_curves/tags", "pr_curves", "tags"),
        _cached("/plugin/pr_curves/pr_curves", "pr_curves", "pr_curves"),
        # the hparams dashboard (and the hparams columns of Time Series' runs table)
        _any("/plugin/hparams/experiment", "hparams", "experiment"),
        _any("/plugin/hparams/session_groups", "hparams", "session_groups"),
        _any("/plugin/hparams/metric_evals", "hparams", "metric_evals"),
        _any("/plugin/hparams/download_data", "hparams", "download_data"),
        # the Time Series dashboard
        _cached("/plugin/timeseries/tags", "timeseries", "tags"),
        _any("/plugin/timeseries/timeSeries", "timeseries", "time_series"),
        Route("/plugin/timeseries/imageData", _plugin("timeseries", "image_data"), methods=get),
    ]


def routes() -> list[BaseRoute]:
    """Every TensorBoard data route, at each mount point."""
    inner = indexed_router(data_routes())
    out: list[BaseRoute] = []
    for prefix in PREFIXES:
        out.append(Mount(f"{prefix}/data", app=inner))
        out.append(Mount(f"{prefix}/experiment/{{{EXPERIMENT_PARAM}}}/data", app=inner))
    return out


def cached_paths() -> frozenset[str]:
    """The data routes (under a ``data`` mount) that look in the cache first: their hits are
    answered before routing (:class:`~boardd.api.tensorboard.answers.CachedAnswers`)."""
    return frozenset(
        r.path for r in data_routes() if isinstance(r, Route) and r.endpoint in CACHED_FIRST
    )
