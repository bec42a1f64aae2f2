"""`hivelore dashboard`'s composition: the one router over this machine's stores, on loopback only."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.middleware.trustedhost import TrustedHostMiddleware

from hivelore import __version__
from hivelore.dashboard.routes import router
from hivelore.dashboard.services import LocalServices

LOCAL_HOSTS = ["127.0.0.1", "localhost"]


def create_app(folder: Path) -> FastAPI:
    """The dashboard of `folder`'s chain. Only requests addressed to the loopback names are answered, so
    a web page that rebinds its own name to 127.0.0.1 cannot read the pages."""
    app = FastAPI(title="hivelore dashboard", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=LOCAL_HOSTS)
    app.include_router(router(LocalServices(folder)))
    return app
