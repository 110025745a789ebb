"""rocketq.dashboard: a web UI for operators, over :mod:`rocketq.admin` only.

``rocketq dashboard -n ADDR [--port 8080]`` serves it (:mod:`rocketq.cli.dashboard`);
:func:`create_app` builds the ASGI app for embedding or tests. It needs the optional extra
``rocketq[dashboard]`` (Starlette, Jinja2, uvicorn, python-multipart); importing
:mod:`rocketq.dashboard.app` without them raises ImportError, while this package and the
rest of rocketq import fine. Mirrors the operator pages of rocketmq-dashboard.
"""

from __future__ import annotations

__all__: list[str] = []
