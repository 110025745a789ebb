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


def version_text() -> str:
    """``rocketq --version``: the release, then which build runs (compiled with mypyc, naming the
    modules loaded from extensions, or pure Python and why) and the servers' event loop."""
    from rocketq import __version__, _build
    from rocketq.common.event_loop import describe_server_loop

    return (
        f"rocketq {__version__} (Apache RocketMQ 4.9.7 protocol, Python {sys.version.split()[0]})\n"
        f"build: {_build.state().describe()}\n"
        f"server event loop: {describe_server_loop()}"
    )


class _VersionAction(argparse.Action):
    """Like argparse's ``version`` action, but builds the text only when asked (it imports the hot set)."""

    def __init__(
        self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(version_text() + "\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketq", description="rocketq: RocketMQ in pure Python")
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="show the version, which build runs (compiled or pure) and exit",
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
