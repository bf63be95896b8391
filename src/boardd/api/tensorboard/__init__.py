"""TensorBoard's own HTTP routes over boardd's stores, so TensorBoard's UI runs on boardd.

Each route is a thin encoder over :mod:`boardd.data` in TensorBoard's answer shapes. The same
routes answer under ``/data``, ``/experiment/{name}/data`` (one experiment, its own run
names) and both again under ``/tensorboard`` (where TensorBoard's UI is served, and whence it
asks relative to its page).
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route

from boardd.api.tensorboard import core, scalars, timeseries
from boardd.api.tensorboard.common import EXPERIMENT_PARAM

#: The mount points of the data routes.
PREFIXES = ("", "/tensorboard")


def data_routes() -> list[BaseRoute]:
    """The routes under a ``data`` mount."""
    get = ["GET"]
    post = ["POST"]
    return [
        Route("/environment", core.environment, methods=get),
        Route("/runs", core.runs, methods=get),
        Route("/plugins_listing", core.plugins_listing, methods=get),
        Route("/experiments", core.empty_list, methods=get),
        Route("/experiment_runs", core.empty_list, methods=get),
        Route("/window_properties", core.window_properties, methods=get),
        Route("/notifications", core.notifications, methods=get),
        Route("/logdir", core.logdir, methods=get),
        Route("/plugin/scalars/tags", scalars.tags, methods=get),
        Route("/plugin/scalars/scalars", scalars.scalars, methods=get),
        Route("/plugin/scalars/scalars_multirun", scalars.scalars_multirun, methods=post),
        # timeseries helper
        Route("/plugin/timeseries/tags", timeseries.tags, methods=get),
        Route("/plugin/timeseries/timeSeries", timeseries.time_series, methods=[*get, *post]),
        Route("/plugin/timeseries/imageData", timeseries.image_data, methods=get),
    ]


def routes() -> list[BaseRoute]:
    """Every TensorBoard data route, at each mount point."""
    inner = data_routes()
    out: list[BaseRoute] = []
    for prefix in PREFIXES:
        out.append(Mount(f"{prefix}/data", routes=inner))
        out.append(Mount(f"{prefix}/experiment/{{{EXPERIMENT_PARAM}}}/data", routes=inner))
    return out
