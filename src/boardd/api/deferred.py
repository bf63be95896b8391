"""Endpoints whose module is imported by their first request.

``boardd serve`` answers its first request before it has imported the code of routes nobody
has asked for yet: TensorBoard's plugins other than scalars, the hparams and lineage API. Their
modules (and the data code only they use) are a part of what imports and the app cost before
the first answer (docs/performance.md). A :func:`deferred` endpoint names its handler by module and
attribute, imports it at its first call, and hands every call to it. The daemon imports them
all in the background right after its first answer (:func:`load_all`), so a first click on
another tab does not wait for them either.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import Response

#: An endpoint: a Starlette request (and, for boardd's declared routes, the parsed query and
#: the route) to a response.
Endpoint = Callable[..., Awaitable[Response]]

#: Every deferred endpoint's (module, attribute), for load_all() and the tests.
DEFERRED: dict[tuple[str, str], None] = {}
_lock = threading.Lock()


def resolve(module: str, name: str) -> Endpoint:
    """The handler ``name`` of ``module``, imported now if it was not yet."""
    target: Endpoint = getattr(importlib.import_module(module), name)
    return target


def deferred(module: str, name: str) -> Endpoint:
    """An endpoint that calls ``module``'s ``name``, importing ``module`` at the first call."""
    with _lock:
        DEFERRED[(module, name)] = None
    resolved: list[Endpoint] = []

    async def endpoint(*args: Any) -> Response:
        if not resolved:
            resolved.append(resolve(module, name))
        return await resolved[0](*args)

    endpoint.__name__ = endpoint.__qualname__ = name
    return endpoint


def load_all() -> None:
    """Imports the module of every deferred endpoint made so far (the daemon's warm-up)."""
    with _lock:
        targets = list(DEFERRED)
    for module, name in targets:
        resolve(module, name)
