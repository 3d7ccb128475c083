"""``presidio-delink serve``: an HTTP JSON service beside Presidio's analyzer and
anonymizer, one more adapter over the library (the ``service`` extra: Starlette, uvicorn).

* :mod:`.handler`: the library calls behind each route (those ``delink`` makes);
* :mod:`.app`: the routes (read JSON, check it, hand it to a worker, write JSON);
* :mod:`.errors`: errors and their status codes, mapped once;
* :mod:`.workers`: worker processes forked from a parent that loaded everything once;
* :mod:`.server`: binding, uvicorn, draining on SIGTERM;
* :mod:`.openapi`: the OpenAPI description.

See ``docs/service.md``.
"""

from __future__ import annotations

__all__ = ["Handler", "ServiceConfig", "serve"]


def __getattr__(name: str) -> object:
    # Starlette and uvicorn load only when the service is used.
    if name == "Handler":
        from presidio_delink.service.handler import Handler

        return Handler
    if name in ("ServiceConfig", "serve"):
        from presidio_delink.service import server

        return getattr(server, name)
    raise AttributeError(name)
