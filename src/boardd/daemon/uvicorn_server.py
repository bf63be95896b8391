"""uvicorn's server, imported without uvicorn's command line.

``import uvicorn`` runs uvicorn's ``__init__``, which imports ``uvicorn.main``: its command line
(click), the reloader and the multi-process supervisor (multiprocessing). A daemon that makes
its own ``Config`` and ``Server`` uses none of them, and they were about a tenth of
``boardd serve``'s start to its first answer (bench/bench_tensorboard.py; ~30 ms of ~270 ms of
CPU on the project's machine).

So, when nothing has imported uvicorn yet, the package is registered from its spec without
running its ``__init__``, and only the server's modules are imported. ``Config`` and ``Server``
are set on the package as ``__init__`` sets them (uvicorn's lifespan module imports ``Config``
from the package). Any other name asked of the package (``uvicorn.run``, ``uvicorn.main``,
``uvicorn.__version__``) runs the real ``__init__`` first, in the same module object: another
importer of uvicorn in this process sees the whole package, only later.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any


def _register_package() -> None:
    """Registers ``uvicorn`` without running its ``__init__`` (unless it is imported already)."""
    if "uvicorn" in sys.modules:
        return
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None:
        raise ImportError("uvicorn is not installed", name="uvicorn")
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.Lock()

    def complete(name: str) -> Any:
        # PEP 562: called for a name the module lacks. Once run, __init__ has set every name
        # it sets, and this hook is gone.
        with lock:
            if package.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(package)
        return getattr(package, name)

    package.__dict__["__getattr__"] = complete
    sys.modules["uvicorn"] = package


_register_package()

from uvicorn.config import Config  # noqa: E402  (after the package is registered)
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: E402
from uvicorn.server import Server  # noqa: E402

_package: types.ModuleType = sys.modules["uvicorn"]
if "__getattr__" in _package.__dict__:
    _package.Config = Config  # type: ignore[attr-defined]
    _package.Server = Server  # type: ignore[attr-defined]

__all__ = ["Config", "HttpToolsProtocol", "Server"]
