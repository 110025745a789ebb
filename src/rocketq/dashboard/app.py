"""The dashboard's ASGI application: Starlette routes, Jinja2 pages, a little vanilla JS.

``create_app(admin)`` builds the app over an :class:`~rocketq.admin.Admin`; every read and
write goes through :class:`~rocketq.dashboard.service.DashboardService` and so through the
admin API. Pages are server-rendered (``templates/``); forms post plain HTML forms and are
redirected back with a flash message (``?ok=`` / ``?err=``), so every action works without
JS. ``static/app.js`` only draws the live charts, polling ``/api/overview`` and
``/api/group/<group>`` every two seconds. JS and CSS ship inside the package: no CDN, no
build step. Mirrors the pages of rocketmq-dashboard (cluster, topic, consumer, producer,
message, DLQ, message trace).

Extension points: ``extra_nav`` adds navigation entries and ``extra_routes`` the routes
behind them. The admin is built
by the caller (``rocketq dashboard``: ``--access-key``/``--secret-key`` or the environment,
as every rocketq command), so ACL credentials reach every call through its
``client_config``; a refusal of them is shown as the error page with a hint, never a traceback.

Threading: handlers that call the admin run on Starlette's worker threads
(``run_in_threadpool``); the admin is thread-safe and owned by the caller.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from rocketq.admin import Admin, ResendMethod, message_to_json
from rocketq.dashboard.auth import COOKIE, SessionSigner, login_required, password_ok, same_origin_posts
from rocketq.dashboard.service import TOPIC_CATEGORIES, DashboardService
from rocketq.errors import IllegalArgumentError, RocketqError
from rocketq.protocol.codes import PermName
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC

__all__ = ["NavItem", "create_app"]

_HERE = Path(__file__).resolve().parent
_T = TypeVar("_T")


@dataclass(frozen=True)
class NavItem:
    """One navigation entry: its label and path."""

    label: str
    path: str


NAV: tuple[NavItem, ...] = (
    NavItem("Cluster", "/cluster"),
    NavItem("Topics", "/topics"),
    NavItem("Consumers", "/groups"),
    NavItem("Producers", "/producers"),
    NavItem("Messages", "/messages"),
    NavItem("DLQ", "/dlq"),
    NavItem("Trace", "/trace"),
)


#: how a refusal of the dashboard's credentials reads: the AclException texts of Java's
#: PlainAccessValidator ("No acl config for ...", "Check signature failed for accessKey=...",
#: "No accessKey is configured"), which a secured broker or name server answers as SYSTEM_ERROR
_ACL_REFUSAL = re.compile(r"accessKey|acl config|signature", re.IGNORECASE)


def _acl_refused(ctx: dict[str, Any]) -> bool:
    """Whether an error the page shows is a refusal of the dashboard's credentials."""
    texts = [ctx.get(k) for k in ("error", "flash_err", "progress_error", "track_error")]
    texts += [getattr(b, "error", None) for b in ctx.get("brokers", ())]
    return any(isinstance(t, str) and _ACL_REFUSAL.search(t) for t in texts)


def _ts(ms: int | None) -> str:
    if not ms or ms <= 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _ratio(text: str) -> str:
    """A disk ratio ("0.7266...") as a percentage; other text unchanged."""
    try:
        return f"{float(text) * 100:.1f} %"
    except ValueError:
        return text


def _parse_time(value: str | None) -> int | None:
    """A ``datetime-local`` field (server local time) as epoch ms; empty -> None."""
    if not value:
        return None
    try:
        return int(datetime.datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError as exc:
        raise IllegalArgumentError(f"not a date and time: {value!r}") from exc


def _int(value: object, name: str, default: int | None = None) -> int:
    if value in (None, "") and default is not None:
        return default
    try:
        return int(str(value))
    except ValueError as exc:
        raise IllegalArgumentError(f"{name} must be a number, got {value!r}") from exc


def _back(path: str, *, ok: str | None = None, err: str | None = None) -> RedirectResponse:
    if not path.startswith("/") or path.startswith("//"):
        path = "/"  # only this site's pages (no open redirect through a form's "back")
    params = {k: v for k, v in (("ok", ok), ("err", err)) if v}
    sep = "&" if "?" in path else "?"
    return RedirectResponse(path + (sep + urlencode(params) if params else ""), status_code=303)


def create_app(
    admin: Admin,
    *,
    users: dict[str, str] | None = None,
    secret: bytes | None = None,
    extra_nav: Sequence[NavItem] = (),
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The dashboard over ``admin``; ``users`` (name -> password) turns the login on."""
    service = DashboardService(admin)
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    env = templates.env
    env.filters["ts"] = _ts
    env.filters["ratio"] = _ratio
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.globals["nav"] = (*NAV, *extra_nav)
    env.globals["login_on"] = users is not None
    env.globals["categories"] = TOPIC_CATEGORIES
    signer = SessionSigner(secret)

    def page(request: Request, name: str, status_code: int = 200, **ctx: Any) -> Response:
        ctx.setdefault("flash_ok", request.query_params.get("ok"))
        ctx.setdefault("flash_err", request.query_params.get("err"))
        ctx["path"] = request.url.path
        ctx["acl_hint"] = _acl_refused(ctx)
        return templates.TemplateResponse(request, name, ctx, status_code=status_code)

    async def call(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        return await run_in_threadpool(fn, *args, **kwargs)

    async def action(request: Request, back: str, fn: Callable[[], str]) -> Response:
        """Run a write; back to ``back`` with its message, or with the error."""
        try:
            message = await call(fn)
        except RocketqError as exc:
            return _back(back, err=f"{type(exc).__name__}: {exc}")
        return _back(back, ok=message)

    # ------------------------------------------------------------------ cluster
    async def index(request: Request) -> Response:
        return RedirectResponse("/cluster", status_code=303)

    async def cluster(request: Request) -> Response:
        return page(request, "cluster.html", **await call(service.cluster))

    async def broker(request: Request) -> Response:
        addr = request.query_params.get("addr", "")
        return page(request, "broker.html", **await call(service.broker, addr))

    # ------------------------------------------------------------------ topics
    async def topics(request: Request) -> Response:
        category = request.query_params.get("category") or None
        rows = await call(service.topics, category)
        return page(request, "topics.html", rows=rows, category=category)

    async def topic_save(request: Request) -> Response:
        form = await request.form()
        topic = str(form.get("topic", "")).strip()
        queues_r = _int(form.get("read_queue_nums"), "read queues", 8)
        queues_w = _int(form.get("write_queue_nums"), "write queues", queues_r)
        perm = _int(form.get("perm"), "perm", int(PermName.PERM_READ | PermName.PERM_WRITE))
        order = form.get("order") == "on"
        back = str(form.get("back") or "/topics")

        def run() -> str:
            addrs = admin.create_topic(
                topic, read_queue_nums=queues_r, write_queue_nums=queues_w, perm=perm, order=order
            )
            return f"topic {topic} saved on {', '.join(addrs)}"

        return await action(request, back, run)

    async def topic_detail(request: Request) -> Response:
        topic = request.path_params["topic"]
        return page(request, "topic.html", **await call(service.topic, topic))

    async def topic_delete(request: Request) -> Response:
        topic = request.path_params["topic"]

        def run() -> str:
            admin.delete_topic(topic)
            return f"topic {topic} deleted"

        return await action(request, "/topics", run)

    async def topic_send(request: Request) -> Response:
        topic = request.path_params["topic"]
        form = await request.form()
        body = str(form.get("body", ""))
        tags = str(form.get("tags", "")).strip() or None
        keys = str(form.get("keys", "")).strip() or None

        def run() -> str:
            r = service.send_test_message(topic, body, tags, keys)
            return f"{r['status']}: msgId {r['msg_id']} on {r['queue']} at offset {r['queue_offset']}"

        return await action(request, f"/topic/{quote(topic, safe='')}", run)

    # ------------------------------------------------------------------ groups
    async def groups(request: Request) -> Response:
        return page(request, "groups.html", rows=await call(service.groups))

    async def group_create(request: Request) -> Response:
        form = await request.form()
        group = str(form.get("group", "")).strip()
        retries = _int(form.get("retry_max_times"), "retry max times", 16)

        def run() -> str:
            addrs = admin.create_group(group, retry_max_times=retries)
            return f"group {group} saved on {', '.join(addrs)}"

        return await action(request, "/groups", run)

    async def group_detail(request: Request) -> Response:
        group = request.path_params["group"]
        return page(request, "group.html", **await call(service.group, group))

    async def group_delete(request: Request) -> Response:
        group = request.path_params["group"]

        def run() -> str:
            admin.delete_group(group)
            return f"group {group} deleted"

        return await action(request, "/groups", run)

    async def group_reset(request: Request) -> Response:
        group = request.path_params["group"]
        form = await request.form()
        topic = str(form.get("topic", "")).strip()
        where = str(form.get("where", "time"))
        when = str(form.get("time", ""))

        def run() -> str:
            if where == "latest":
                ts = -1
            elif where == "earliest":
                ts = 0
            else:
                parsed = _parse_time(when)
                if parsed is None:
                    raise IllegalArgumentError("pick the time to reset the offsets to")
                ts = parsed
            result = admin.reset_offset_by_time(group, topic, ts, force=True)
            moved = ", ".join(
                f"{q.message_queue.broker_name}/{q.message_queue.queue_id}->{q.new_offset}"
                for q in result.queues
            )
            return f"offsets of {group} on {topic} reset ({result.mode.name}): {moved or 'no queue'}"

        return await action(request, f"/group/{quote(group, safe='')}", run)

    # ------------------------------------------------------------------ producers
    async def producers(request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        topic = request.query_params.get("topic", "").strip()
        rows = None
        error = None
        if group and topic:
            try:
                rows = await call(admin.producer_connections, group, topic)
            except RocketqError as exc:
                error = f"{type(exc).__name__}: {exc}"
        return page(request, "producers.html", group=group, topic=topic, rows=rows, error=error)

    # ------------------------------------------------------------------ messages
    async def messages(request: Request) -> Response:
        qp = request.query_params
        mode = qp.get("mode", "topic")
        topic = qp.get("topic", "").strip()
        rows = None
        error = None
        try:
            if mode == "id" and qp.get("id"):
                target = f"/message?id={quote(qp['id'].strip(), safe='')}"
                if topic:
                    target += f"&topic={quote(topic, safe='')}"
                return RedirectResponse(target, status_code=303)
            if mode == "key" and topic and qp.get("key"):
                rows = await call(service.messages_by_key, topic, qp["key"].strip())
            elif mode == "topic" and topic:
                count = _int(qp.get("count"), "count", 64)
                rows = await call(
                    service.messages_by_time,
                    topic,
                    _parse_time(qp.get("begin")),
                    _parse_time(qp.get("end")),
                    count,
                )
        except RocketqError as exc:
            error = f"{type(exc).__name__}: {exc}"
        return page(
            request,
            "messages.html",
            mode=mode,
            topic=topic,
            key=qp.get("key", ""),
            msg_id=qp.get("id", ""),
            begin=qp.get("begin", ""),
            end=qp.get("end", ""),
            rows=[message_to_json(m) for m in rows] if rows is not None else None,
            error=error,
        )

    async def message(request: Request) -> Response:
        msg_id = request.query_params.get("id", "").strip()
        topic = request.query_params.get("topic", "").strip() or None
        data = await call(service.message, msg_id, topic)
        return page(
            request,
            "message.html",
            m=message_to_json(data["msg"]),
            tracks=data["tracks"],
            track_error=data["track_error"],
        )

    async def message_resend(request: Request) -> Response:
        form = await request.form()
        msg_id = str(form.get("id", "")).strip()
        topic = str(form.get("topic", "")).strip() or None
        group = str(form.get("group", "")).strip()
        try:
            method = ResendMethod(str(form.get("method") or "direct"))
        except ValueError as exc:
            raise IllegalArgumentError(f"unknown resend method {form.get('method')!r}") from exc
        back = f"/message?id={quote(msg_id, safe='')}" + (f"&topic={quote(topic, safe='')}" if topic else "")

        def run() -> str:
            r = service.resend(msg_id, topic, group, method)
            if not r.ok:
                raise IllegalArgumentError(f"resend to {group} failed: {r.detail}")
            return f"resent to {group} ({r.method.value}): {r.detail}"

        return await action(request, back, run)

    # ------------------------------------------------------------------ DLQ
    async def dlq(request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        rows = None
        error = None
        if group:
            try:
                rows = [message_to_json(m) for m in await call(service.dlq, group)]
            except RocketqError as exc:
                error = f"{type(exc).__name__}: {exc}"
        return page(request, "dlq.html", group=group, rows=rows, error=error)

    async def dlq_resend(request: Request) -> Response:
        form = await request.form()
        group = str(form.get("group", "")).strip()
        one = str(form.get("msg_id", "")).strip()

        def run() -> str:
            results = service.resend_dlq(group, [one] if one else None)
            good = sum(1 for r in results if r.ok)
            if not results:
                raise IllegalArgumentError(f"no dead letter of {group} to resend")
            if good < len(results):
                raise IllegalArgumentError(f"resent {good} of {len(results)}: {results[-1].detail}")
            return f"resent {good} dead letter(s) to {group}"

        return await action(request, f"/dlq?group={quote(group, safe='')}", run)

    # ------------------------------------------------------------------ trace
    async def trace(request: Request) -> Response:
        qp = request.query_params
        msg_id = qp.get("id", "").strip()
        trace_topic = qp.get("trace_topic", "").strip() or RMQ_SYS_TRACE_TOPIC
        found: dict[str, Any] = {}
        error = None
        if msg_id:
            try:
                found = await call(service.trace, msg_id, trace_topic)
            except RocketqError as exc:
                error = f"{type(exc).__name__}: {exc}"
        return page(request, "trace.html", msg_id=msg_id, trace_topic=trace_topic, error=error, **found)

    # ------------------------------------------------------------------ live data
    async def api_overview(request: Request) -> Response:
        return JSONResponse(await call(service.overview))

    async def api_group(request: Request) -> Response:
        return JSONResponse(await call(service.group_lag, request.path_params["group"]))

    # ------------------------------------------------------------------ login
    async def login(request: Request) -> Response:
        nxt = request.query_params.get("next", "/cluster")
        if request.method == "GET":
            return page(request, "login.html", next=nxt, error=None)
        form = await request.form()
        user = str(form.get("username", ""))
        nxt = str(form.get("next") or "/cluster")
        if not nxt.startswith("/") or nxt.startswith("//"):
            nxt = "/cluster"
        if users is None or user not in users or not password_ok(users[user], str(form.get("password", ""))):
            return page(request, "login.html", status_code=401, next=nxt, error="wrong user name or password")
        response = RedirectResponse(nxt, status_code=303)
        response.set_cookie(COOKIE, signer.make(user), httponly=True, samesite="strict")
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    async def on_error(request: Request, exc: Exception) -> Response:
        text = f"{type(exc).__name__}: {exc}"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": text}, status_code=400)
        return page(request, "error.html", status_code=400, error=text)

    routes: list[BaseRoute] = [
        Route("/", index),
        Route("/cluster", cluster),
        Route("/broker", broker),
        Route("/topics", topics),
        Route("/topics", topic_save, methods=["POST"]),
        Route("/topic/{topic}", topic_detail),
        Route("/topic/{topic}/delete", topic_delete, methods=["POST"]),
        Route("/topic/{topic}/send", topic_send, methods=["POST"]),
        Route("/groups", groups),
        Route("/groups", group_create, methods=["POST"]),
        Route("/group/{group}", group_detail),
        Route("/group/{group}/delete", group_delete, methods=["POST"]),
        Route("/group/{group}/reset", group_reset, methods=["POST"]),
        Route("/producers", producers),
        Route("/messages", messages),
        Route("/message", message),
        Route("/message/resend", message_resend, methods=["POST"]),
        Route("/dlq", dlq),
        Route("/dlq/resend", dlq_resend, methods=["POST"]),
        Route("/trace", trace),
        Route("/api/overview", api_overview),
        Route("/api/group/{group}", api_group),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout),
        *extra_routes,
        Mount("/static", app=StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={RocketqError: on_error})
    app.state.service = service
    if users is not None:
        app.add_middleware(_Guard, wrap=lambda inner: login_required(inner, signer))
    app.add_middleware(_Guard, wrap=same_origin_posts)
    return app


class _Guard:
    """Starlette middleware around one of :mod:`rocketq.dashboard.auth`'s ASGI wrappers."""

    def __init__(self, app: Any, wrap: Callable[[Any], Any]) -> None:
        self._inner = wrap(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._inner(scope, receive, send)
