"""Entry point of the ``rocketq`` command: a thin dispatcher over subcommand modules.

Each module listed in :data:`SUBCOMMAND_MODULES` exposes ``register(subparsers)``, which adds
its subcommands and sets ``func`` (``Callable[[argparse.Namespace], int]``) as a parser
default. Modules are imported when the parser is built; they import heavy packages lazily.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["SUBCOMMAND_MODULES", "build_parser", "main"]

#: Modules that contribute subcommands (add yours here).
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "rocketq.cli.servers",
    "rocketq.cli.topic",
    "rocketq.cli.group",
    "rocketq.cli.message",
    "rocketq.cli.cluster",
    "rocketq.cli.demo",
    "rocketq.cli.dashboard",
)


def build_parser() -> argparse.ArgumentParser:
    from rocketq import __version__

    parser = argparse.ArgumentParser(prog="rocketq", description="rocketq: RocketMQ in pure Python")
    parser.add_argument(
        "--version",
        action="version",
        version=f"rocketq {__version__} (Apache RocketMQ 4.9.7 protocol, Python {sys.version.split()[0]})",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args))


if __name__ == "__main__":
    sys.exit(main())
