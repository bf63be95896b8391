"""TensorBoard's core routes: environment, runs, the plugin listing and the small ones the UI
asks for at start-up."""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

import boardd
from boardd.api.app_state import state_of
from boardd.api.errors import ApiError
from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.params import param
from boardd.api.tensorboard.scope import Reader, Scope, scope_of


def _tensorboard_version() -> str:
    """The version of the installed TensorBoard whose UI is served (its UI shows it), else
    boardd's."""
    from importlib import metadata

    try:
        return metadata.version("tensorboard")
    except metadata.PackageNotFoundError:
        return boardd.__version__


def _data_location(scope: Scope) -> str:
    if not scope.prefixed and scope.handles:
        return str(scope.handles[0].spec.logdir)
    return ",".join(f"{h.spec.name}:{h.spec.logdir}" for h in scope.handles)


async def environment(request: Request) -> Response:
    """``/data/environment``: TensorBoard's fields; ``debug`` says who answers."""
    scope = scope_of(request)
    body = {
        "version": _tensorboard_version(),
        "data_location": _data_location(scope),
        "window_title": state_of(request).window_title,
        "experiment_name": "",
        "experiment_description": "",
        "creation_time": 0,
        "debug": {"data_provider": f"boardd {boardd.__version__}", "flags": {}},
    }
    return Response(tb_json(body), media_type="application/json")


async def runs(request: Request) -> Response:
    """``/data/runs``: run names, by the start of their first event (runs without one last),
    then by name, across experiments as TensorBoard orders the runs of a ``--logdir_spec``."""

    def build(reader: Reader) -> bytes:
        found = reader.runs()
        found.sort(key=lambda r: (math.inf if r[1].start_time is None else r[1].start_time, r[0]))
        return tb_json([name for name, _ in found])

    return await answer(request, build)


async def empty_list(request: Request) -> Response:
    """``/data/experiments``, ``/data/experiment_runs``: TensorBoard without a database
    answers an empty list."""
    return Response(b"[]", media_type="application/json")


async def no_debugger_runs(request: Request) -> Response:
    """``/data/plugin/debugger-v2/runs``: no run has debugger data (boardd does not read
    tfdbg2's files), ``{}`` as TensorBoard answers on such a logdir. The Debugger V2 tab asks
    it when opened, inactive or not: a 404 there was an error in the browser's console."""
    return Response(b"{}", media_type="application/json")


async def window_properties(request: Request) -> Response:
    """``/data/window_properties``: TensorBoard's ``--window_title``."""
    body = {"window_title": state_of(request).window_title}
    return Response(tb_json(body), media_type="application/json")


async def notifications(request: Request) -> Response:
    """``/data/notifications``: none (TensorBoard redirects to a file it does not ship)."""
    return Response(tb_json({"notifications": []}), media_type="application/json")


async def logdir(request: Request) -> Response:
    """``/data/logdir``."""
    return Response(
        tb_json({"logdir": _data_location(scope_of(request))}), media_type="application/json"
    )


def _plugin(
    tab_name: str,
    element: str | None = None,
    *,
    mechanism: str = "CUSTOM_ELEMENT",
    disable_reload: bool = False,
    module_path: str | None = None,
) -> dict[str, Any]:
    loading: dict[str, Any] = {"type": mechanism}
    if element is not None:
        loading["element_name"] = element
    if module_path is not None:
        loading["module_path"] = module_path
    return {
        "disable_reload": disable_reload,
        "enabled": False,
        "remove_dom": False,
        "tab_name": tab_name,
        "loading_mechanism": loading,
    }


#: TensorBoard's plugins in its order, with what its UI reads of each, and the stored plugins
#: whose data enables each one that boardd serves (None: boardd does not serve it, so it is
#: listed disabled, as TensorBoard lists a plugin without data).
PLUGINS: list[tuple[str, dict[str, Any], frozenset[str] | None]] = [
    ("timeseries", _plugin("Time Series", mechanism="NG_COMPONENT"),
     frozenset({"scalars", "histograms", "images"})),
    ("scalars", _plugin("scalars", "tf-scalar-dashboard"), frozenset({"scalars"})),
    ("custom_scalars", _plugin("Custom Scalars", "tf-custom-scalar-dashboard"),
     frozenset({"custom_scalars"})),
    ("images", _plugin("images", "tf-image-dashboard"), frozenset({"images"})),
    ("audio", _plugin("audio", "tf-audio-dashboard"), frozenset({"audio"})),
    ("debugger-v2", _plugin("Debugger V2", mechanism="NG_COMPONENT"), None),
    ("graphs", _plugin("graphs", "tf-graph-dashboard", disable_reload=True),
     frozenset({"graphs", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model",
                "graph_tagged_run_metadata"})),
    ("distributions", _plugin("distributions", "tf-distribution-dashboard"),
     frozenset({"histograms"})),
    ("histograms", _plugin("histograms", "tf-histogram-dashboard"), frozenset({"histograms"})),
    ("text", _plugin("text", "tf-text-dashboard"), frozenset({"text"})),
    ("pr_curves", _plugin("PR Curves", "tf-pr-curve-dashboard"), frozenset({"pr_curves"})),
    ("profile_redirect", _plugin("Profile", "tf-profile-redirect-dashboard"), None),
    ("hparams", _plugin("hparams", "tf-hparams-dashboard"), frozenset({"hparams"})),
    ("mesh", _plugin("mesh", "mesh-dashboard"), frozenset({"mesh"})),
    ("wit_redirect", _plugin("What-If Tool", "tf-wit-redirect-dashboard"), None),
    ("projector", _plugin("projector", mechanism="IFRAME", disable_reload=True,
                          module_path="/data/plugin/projector/index.js"), None),
]  # fmt: skip


async def plugins_listing(request: Request) -> Response:
    """``/data/plugins_listing``: every plugin of TensorBoard's UI, each enabled exactly when
    the addressed logdirs hold data it shows (and boardd serves it)."""

    def build(reader: Reader) -> bytes:
        present: set[str] = set()
        for _, provider, exp_id in reader.experiments():
            present.update(provider.plugins(exp_id))
        out = {}
        for name, entry, data in PLUGINS:
            out[name] = {**entry, "enabled": bool(data and data & present)}
        # The projector's data are files beside the event files, not stored series (the
        # listing is remade at each commit; add_embedding's writer commits events too).
        from boardd.plugins.projector import tensorboard_routes as projector

        out["projector"]["enabled"] = projector.has_embeddings(reader)
        return tb_json(out)

    return await answer(request, build)


#: The plugins TensorBoard's UI loads as a module in an iframe (``plugin_entry.html``), with
#: their module's path under ``/data/plugin/NAME``.
MODULE_PLUGINS = {"projector": "/index.js"}


async def plugin_entry(request: Request) -> Response:
    """``/data/plugin_entry.html?name=NAME``: the page TensorBoard's UI opens in an iframe for
    a plugin loaded as a module (the projector): it imports the module and renders it."""
    name = param(request, "name", "")
    if name not in {entry for entry, _, _ in PLUGINS}:
        raise ApiError(404, f"no plugin {name!r}")
    module = MODULE_PLUGINS.get(name)
    if module is None:
        raise ApiError(400, "Plugin is not module loadable")
    script = f"import({json.dumps('.' + module)}).then((m) => void m.render());"
    page = (
        "\n<!DOCTYPE html>\n"
        f'<head><base href="plugin/{name}/" /></head>\n'
        f'<body><script type="module">{script}</script></body>\n'
    )
    return Response(page.encode("utf-8"), media_type="text/html; charset=utf-8")


def sampling_hint(request: Request, plugin: str, default: int) -> int | None:
    """How many points per series a route of ``plugin`` returns: ``--samples-per-plugin``'s
    number for it (None: ``all``, no limit), else TensorBoard's default for the route."""
    sampling = state_of(request).sampling
    if plugin in sampling:
        return sampling[plugin]
    if "*" in sampling:
        return sampling["*"]
    return default
