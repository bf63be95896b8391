"""TensorBoard's own HTTP routes over boardd's stores, so TensorBoard's UI runs on boardd.

Each route is a thin encoder over :mod:`boardd.data` in TensorBoard's answer shapes. The same
routes answer under ``/data``, ``/experiment/{name}/data`` (one experiment, its own run
names) and both again under ``/tensorboard`` (where TensorBoard's UI is served, and whence it
asks relative to its page).
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route

from boardd.api.deferred import Endpoint, deferred
from boardd.api.routing import IndexedRouter
from boardd.api.tensorboard import core, projector, scalars
from boardd.api.tensorboard.common import CACHED_FIRST, EXPERIMENT_PARAM, cached_first

#: The mount points of the data routes.
PREFIXES = ("", "/tensorboard")


def _plugin(module: str, name: str) -> Endpoint:
    """The handler ``name`` of ``boardd.api.tensorboard.<module>``, imported by its first
    request (:mod:`boardd.api.deferred`): the scalars plugin, which a TensorBoard page asks
    first, is imported with the app; the other plugins after the daemon's first answer."""
    return deferred(f"boardd.api.tensorboard.{module}", name)


def data_routes() -> list[BaseRoute]:
    """The routes under a ``data`` mount (a GET route answered by ``answer()`` alone looks in
    the cache first: :func:`~boardd.api.tensorboard.common.cached_first`)."""
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
        Route("/plugin/scalars/tags", cached_first(scalars.tags), methods=get),
        Route("/plugin/scalars/scalars", cached_first(scalars.scalars), methods=get),
        Route("/plugin/scalars/scalars_multirun", scalars.scalars_multirun, methods=post),
        # custom scalars (the layout a writer describes, its regex-matched scalars)
        Route(
            "/plugin/custom_scalars/layout",
            cached_first(_plugin("custom_scalars", "layout")),
            methods=get,
        ),
        Route(
            "/plugin/custom_scalars/scalars",
            cached_first(_plugin("custom_scalars", "scalars")),
            methods=get,
        ),
        Route(
            "/plugin/custom_scalars/download_data",
            cached_first(_plugin("custom_scalars", "download_data")),
            methods=get,
        ),
        # graphs (a run's graph, a tagged step's graphs and metadata)
        Route("/plugin/graphs/info", cached_first(_plugin("graphs", "info")), methods=get),
        Route("/plugin/graphs/graph", cached_first(_plugin("graphs", "graph")), methods=get),
        Route(
            "/plugin/graphs/run_metadata",
            cached_first(_plugin("graphs", "run_metadata")),
            methods=get,
        ),
        # mesh (add_mesh: each mesh's parts, their data)
        Route("/plugin/mesh/tags", cached_first(_plugin("mesh", "tags")), methods=get),
        Route("/plugin/mesh/meshes", cached_first(_plugin("mesh", "meshes")), methods=get),
        Route("/plugin/mesh/data", cached_first(_plugin("mesh", "data")), methods=get),
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
        Route("/plugin/histograms/tags", cached_first(_plugin("histograms", "tags")), methods=get),
        Route(
            "/plugin/histograms/histograms",
            cached_first(_plugin("histograms", "histograms")),
            methods=get,
        ),
        Route(
            "/plugin/distributions/tags", cached_first(_plugin("histograms", "tags")), methods=get
        ),
        Route(
            "/plugin/distributions/distributions",
            cached_first(_plugin("histograms", "distributions")),
            methods=get,
        ),
        Route("/plugin/images/tags", cached_first(_plugin("images", "image_tags")), methods=get),
        Route("/plugin/images/images", cached_first(_plugin("images", "images")), methods=get),
        Route("/plugin/images/individualImage", _plugin("images", "individual_image"), methods=get),
        Route("/plugin/audio/tags", cached_first(_plugin("images", "audio_tags")), methods=get),
        Route("/plugin/audio/audio", cached_first(_plugin("images", "audio")), methods=get),
        Route("/plugin/audio/individualAudio", _plugin("images", "individual_audio"), methods=get),
        Route("/plugin/text/tags", cached_first(_plugin("text", "tags")), methods=get),
        Route("/plugin/text/text", cached_first(_plugin("text", "text")), methods=get),
        Route("/plugin/pr_curves/tags", cached_first(_plugin("pr_curves", "tags")), methods=get),
        Route(
            "/plugin/pr_curves/pr_curves",
            cached_first(_plugin("pr_curves", "pr_curves")),
            methods=get,
        ),
        # the hparams dashboard (and the hparams columns of Time Series' runs table)
        Route(
            "/plugin/hparams/experiment", _plugin("hparams", "experiment"), methods=[*get, *post]
        ),
        Route(
            "/plugin/hparams/session_groups",
            _plugin("hparams", "session_groups"),
            methods=[*get, *post],
        ),
        Route(
            "/plugin/hparams/metric_evals",
            _plugin("hparams", "metric_evals"),
            methods=[*get, *post],
        ),
        Route(
            "/plugin/hparams/download_data",
            _plugin("hparams", "download_data"),
            methods=[*get, *post],
        ),
        # the Time Series dashboard
        Route("/plugin/timeseries/tags", cached_first(_plugin("timeseries", "tags")), methods=get),
        Route(
            "/plugin/timeseries/timeSeries",
            _plugin("timeseries", "time_series"),
            methods=[*get, *post],
        ),
        Route("/plugin/timeseries/imageData", _plugin("timeseries", "image_data"), methods=get),
    ]


def routes() -> list[BaseRoute]:
    """Every TensorBoard data route, at each mount point."""
    inner = IndexedRouter(data_routes())
    out: list[BaseRoute] = []
    for prefix in PREFIXES:
        out.append(Mount(f"{prefix}/data", app=inner))
        out.append(Mount(f"{prefix}/experiment/{{{EXPERIMENT_PARAM}}}/data", app=inner))
    return out


def cached_paths() -> frozenset[str]:
    """The data routes (under a ``data`` mount) that look in the cache first: their hits are
    answered before routing (:class:`~boardd.api.tensorboard.common.CachedAnswers`)."""
    return frozenset(
        r.path for r in data_routes() if isinstance(r, Route) and r.endpoint in CACHED_FIRST
    )
