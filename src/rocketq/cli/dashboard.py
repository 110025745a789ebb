"""``rocketq dashboard``: serve the web dashboard (:mod:`rocketq.dashboard`) with uvicorn.

Binds 127.0.0.1:8080 by default (``--host``/``--port``; port 0 = OS-assigned). When
listening it prints ONE JSON line ``{"dashboard": "http://host:port"}`` (also written to
``--ready-file``), like the server commands. ``--users FILE`` turns the login on (a
rocketmq-dashboard ``users.properties``: ``name=password`` lines). A cluster with ACL or TLS
on: the same ``--access-key``/``--secret-key``/``--security-token`` (or ``ROCKETMQ_*``
environment variables) and ``--tls``/``--tls-config`` as every rocketq command
(:mod:`rocketq.cli._security`), carried by the admin's ClientConfig. Needs the extra
``rocketq[dashboard]``; without it the command exits with a message naming the extra.
SIGINT/SIGTERM stop it cleanly (uvicorn's handlers), then the admin is closed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import socket
import sys
from typing import Any

from rocketq.cli._security import add_security_options, client_config_from_args

__all__ = ["register"]

log = logging.getLogger("rocketq.cli.dashboard")

_NEEDED = ("starlette", "jinja2", "uvicorn", "multipart")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("dashboard", help="serve the web dashboard (needs rocketq[dashboard])")
    p.add_argument(
        "-n", "--namesrv-addr", default=None, help="name servers, ';'-separated (else NAMESRV_ADDR)"
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("-p", "--port", type=int, default=8080, help="listen port (0 = OS-assigned; default 8080)")
    p.add_argument("--users", default=None, help="user file (name=password lines): turns the login on")
    p.add_argument("--ready-file", default=None, help="also write the ready line to this file")
    p.add_argument("--log-level", default="INFO")
    add_security_options(p)  # a secured cluster: credentials and TLS, as every admin command
    p.set_defaults(func=_cmd_dashboard)


def _cmd_dashboard(args: argparse.Namespace) -> int:
    missing = [m for m in _NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"rocketq dashboard needs {', '.join(missing)}: pip install 'rocketq[dashboard]'", file=sys.stderr
        )
        return 2
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    import uvicorn

    from rocketq.admin import Admin
    from rocketq.dashboard.app import create_app
    from rocketq.dashboard.auth import load_users
    from rocketq.errors import RocketqError

    try:
        users = load_users(args.users) if args.users else None
        admin = Admin(args.namesrv_addr, client_config=client_config_from_args(args))
    except RocketqError as exc:
        print(f"rocketq dashboard: {exc}", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        sock.close()
        admin.close()
        print(f"rocketq dashboard: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    # listening before uvicorn starts: a client that reads the ready line waits in the backlog
    sock.listen(128)
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        create_app(admin, users=users), log_level=args.log_level.lower(), access_log=False
    )
    server = uvicorn.Server(config)
    line = json.dumps({"dashboard": f"http://{host}:{port}"})
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(line + "\n")
        os.replace(tmp, args.ready_file)
    print(line, flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        admin.close()
    return 0
