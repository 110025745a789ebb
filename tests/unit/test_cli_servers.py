"""The server commands' defaults (issue #21 items 6, 7): loopback binds unless asked
otherwise, and a size-rotated log file."""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.cli import servers
from rocketq.cli.main import build_parser


def test_namesrv_binds_loopback_by_default() -> None:
    assert build_parser().parse_args(["namesrv"]).host == "127.0.0.1"
    assert build_parser().parse_args(["namesrv", "--host", "0.0.0.0"]).host == "0.0.0.0"


@pytest.mark.parametrize(
    ("argv", "listen", "ip1"),
    [
        ([], "127.0.0.1", "127.0.0.1"),
        (["--host", "0.0.0.0"], "0.0.0.0", "127.0.0.1"),
        (["--set", "listenHost=0.0.0.0"], "0.0.0.0", None),
        (["--host", "10.1.2.3"], "10.1.2.3", "10.1.2.3"),
    ],
)
def test_broker_binds_loopback_unless_told(
    tmp_path: Path, argv: list[str], listen: str, ip1: str | None
) -> None:
    args = build_parser().parse_args(["broker", "--store", str(tmp_path), *argv])
    config = servers._broker_config(args, namesrv_addr=None, host=args.host)
    assert config.listen_host == listen
    if ip1 is not None:
        assert config.broker_ip1 == ip1


@pytest.fixture
def clean_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers = []
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers = saved
        root.setLevel(level)


@pytest.mark.usefixtures("clean_root_logger")
def test_log_file_rotates_by_size(tmp_path: Path) -> None:
    log_file = tmp_path / "broker.log"
    args = build_parser().parse_args(
        ["broker", "--log-file", str(log_file), "--log-max-mb", "0.01", "--log-backups", "2"]
    )
    servers._setup_logging(args)
    handlers = logging.getLogger().handlers
    assert [type(h) for h in handlers] == [logging.handlers.RotatingFileHandler]
    log = logging.getLogger("rocketq.test.rotation")
    for i in range(500):
        log.info("line %d %s", i, "x" * 100)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["broker.log", "broker.log.1", "broker.log.2"]
    assert all((tmp_path / f).stat().st_size <= 11 * 1024 for f in files)
