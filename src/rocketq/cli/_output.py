"""Shared plumbing of the operator commands (topic, group, message, cluster).

Owns: the common options (``-n/--namesrv``, ``--json``, ``--timeout-ms``), opening an
:class:`~rocketq.admin.Admin`, rendering (rich tables for humans, JSON for machines),
progress bars for bulk operations, time parsing, and the error contract.

Contract (tested in tests/integration/test_cli.py):

* ``--json`` prints exactly one JSON document on stdout and nothing else there.
* Any error prints ONE line ``error: ...`` on stderr and exits 1 (argparse usage errors
  exit 2; Ctrl-C exits 130). Library log records are silenced unless logging was
  configured; ``ROCKETQ_DEBUG=1`` shows them and lets tracebacks through.
* Progress bars and notes go to stderr, so stdout stays parseable.
* The name server comes from ``-n`` or else the ``NAMESRV_ADDR`` environment variable
  (``;``-separated), as for mqadmin. Credentials and TLS: :mod:`rocketq.cli._security`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from rocketq.admin import DEFAULT_TIMEOUT_MS, Admin
from rocketq.cli._security import add_security_options, client_config_from_args
from rocketq.errors import BrokerError, RocketqError
from rocketq.protocol.codes import ResponseCode

__all__ = [
    "NO_BROKER",
    "AdminCommand",
    "Output",
    "add_admin_command",
    "add_common_options",
    "add_target_options",
    "format_ms",
    "parse_timestamp",
    "run_admin_command",
]

#: ``(args, admin, out) -> exit status``; the body of one admin subcommand.
AdminCommand = Callable[[argparse.Namespace, Admin, "Output"], int]

_TIME_FORMATS = (
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d#%H:%M:%S:%f",  # mqadmin resetOffsetByTime: yyyy-MM-dd#HH:mm:ss:SSS
    "%Y-%m-%d",
)


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``-n/--namesrv``, ``--json`` and ``--timeout-ms`` on one subcommand."""
    parser.add_argument(
        "-n",
        "--namesrv",
        default=None,
        metavar="ADDR",
        help="name server address(es), ';'-separated (default: $NAMESRV_ADDR)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"timeout of each request in milliseconds (default {DEFAULT_TIMEOUT_MS})",
    )
    add_security_options(parser)


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """mqadmin's ``-c CLUSTER`` / ``-b BROKER_ADDR`` choice of brokers (default: every master)."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("-c", "--cluster", default=None, help="every master of this cluster")
    target.add_argument("-b", "--broker-addr", default=None, help="only this broker (ip:port)")


def add_admin_command(parser: argparse.ArgumentParser, body: AdminCommand) -> None:
    """Give one subcommand the common options and make it run ``body`` via :func:`run_admin_command`."""
    add_common_options(parser)
    parser.set_defaults(func=functools.partial(run_admin_command, body=body))


def parse_timestamp(text: str) -> int:
    """A point in time as epoch milliseconds.

    Accepts ``now``, ``latest`` or ``-1`` (-1: the end of each queue), ``earliest`` (0),
    an integer number of epoch milliseconds, or a local date-time such as
    ``2026-11-22T08:30:00``, ``2026-11-22 08:30:00`` or mqadmin's ``2026-11-22#08:30:00:000``.
    Raises ValueError otherwise.
    """
    value = text.strip()
    lower = value.lower()
    if lower in ("latest", "-1"):
        return -1
    if lower == "earliest":
        return 0
    if lower == "now":
        return round(_dt.datetime.now().timestamp() * 1000)
    if value.lstrip("-").isdigit():
        ms = int(value)
        if ms < -1:
            raise ValueError(f"invalid timestamp {text!r}")
        return ms
    for fmt in _TIME_FORMATS:
        try:
            # round, not int: t * 1000 of an exact millisecond can land just below it
            return round(_dt.datetime.strptime(value, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise ValueError(
        f"invalid time {text!r}: use epoch ms, 'now', 'latest', 'earliest' or YYYY-MM-DDTHH:MM:SS"
    )


def format_ms(ms: int) -> str:
    """Epoch milliseconds as a local ``YYYY-MM-DD HH:MM:SS.mmm`` ('-' for 0 or less)."""
    if ms <= 0:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


class Output:
    """Where a command writes: rich tables on stdout, or one JSON document with ``--json``."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        tty = sys.stdout.isatty()
        self.console = Console(
            file=sys.stdout, width=None if tty else 200, soft_wrap=not tty, highlight=False
        )
        self.err = Console(file=sys.stderr, highlight=False)

    def json(self, obj: Any) -> None:
        """Print ``obj`` (plain JSON data) as one document."""
        sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        *,
        title: str | None = None,
        caption: str | None = None,
    ) -> None:
        """An aligned table; numbers are right-aligned."""
        table = Table(title=title, caption=caption, show_edge=False, header_style="bold")
        numeric = [
            bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(columns))
        ]
        for name, right in zip(columns, numeric, strict=True):
            table.add_column(name, justify="right" if right else "left", overflow="fold")
        for row in rows:
            table.add_row(*("" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v) for v in row))
        self.console.print(table)

    def kv(self, mapping: Mapping[str, object], *, title: str | None = None) -> None:
        """A two-column key/value table."""
        self.table(["Key", "Value"], [(k, v) for k, v in mapping.items()], title=title)

    def line(self, text: str) -> None:
        """A plain line on stdout (human mode only)."""
        self.console.print(text, markup=False)

    def note(self, text: str) -> None:
        """A line on stderr (never mixed into JSON output)."""
        self.err.print(text, markup=False)

    @contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[[int, int], None]]:
        """A rich progress bar on stderr; yields ``update(done, total)``."""
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=False,
        ) as bar:
            task = bar.add_task(description, total=total)

            def update(done: int, new_total: int) -> None:
                bar.update(task, completed=done, total=new_total)

            yield update


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, BrokerError):
        text = f"{exc.remark or ''} (code {exc.code}" + (f", broker {exc.addr})" if exc.addr else ")")
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _explain(exc: BaseException, admin: Admin) -> str:
    """The one error line, with what a newcomer needs to know added to two baffling answers.

    * ``request type 105 not supported`` from the ``-n`` address: it is a broker's port;
    * ``No route info`` while the name server knows no broker at all: say so.
    """
    text = _one_line(exc)
    namesrv = ", ".join(admin.namesrv_addrs)
    if (
        isinstance(exc, BrokerError)
        and exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        and (exc.addr is None or exc.addr in admin.namesrv_addrs)
    ):
        return (
            f"{text}: {namesrv} is a broker, not a name server; "
            "give the name server's address with -n (default port 9876)"
        )
    no_route = isinstance(exc, BrokerError) and exc.code == ResponseCode.TOPIC_NOT_EXIST
    if no_route or "route info" in text.lower():
        try:
            registered = admin.cluster_info().broker_addr_table
        except (RocketqError, OSError):
            return text
        if not registered:
            return f"{text}; {NO_BROKER.format(namesrv=namesrv)}"
    return text


#: The error when a name server answers but knows no broker.
NO_BROKER = "no broker is registered with the name server {namesrv} (start one: rocketq broker -n {namesrv})"


def run_admin_command(args: argparse.Namespace, body: AdminCommand) -> int:
    """Open an Admin from the common options, run ``body``, map errors to one stderr line."""
    if os.environ.get("ROCKETQ_DEBUG") == "1":
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    elif not logging.getLogger().handlers:
        # library warnings (e.g. "name server unreachable") would add lines to the one-line error
        lib = logging.getLogger("rocketq")
        if not any(isinstance(h, logging.NullHandler) for h in lib.handlers):
            lib.addHandler(logging.NullHandler())
    try:
        with Admin(
            args.namesrv, timeout_ms=args.timeout_ms, client_config=client_config_from_args(args)
        ) as admin:
            try:
                return body(args, admin, Output(args.json))
            except (RocketqError, OSError, ValueError) as exc:
                if os.environ.get("ROCKETQ_DEBUG") == "1":
                    raise
                sys.stderr.write(f"error: {_explain(exc, admin)}\n")
                return 1
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except (RocketqError, OSError, ValueError) as exc:
        if os.environ.get("ROCKETQ_DEBUG") == "1":
            raise
        sys.stderr.write(f"error: {_one_line(exc)}\n")
        return 1
