"""The README's Python blocks run as pasted, in order, against a real embedded cluster
(issue #20): the Quick start, then the wallet, in one namespace, as a reader pasting them into
one interpreter would. The Spark block runs in tests/spark/test_readme_spark.py.

Only the name server address is changed (the README's ``127.0.0.1:9876`` -> the cluster's
OS-assigned port); a block that stops running, or stops doing what its comments say, fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
README_NAMESRV = "127.0.0.1:9876"


def readme_blocks(*, spark: bool) -> list[str]:
    """The README's ```python blocks in order: the Spark ones or all the others."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
    return [b for b in blocks if ("rocketq.spark" in b) == spark]


def run_blocks(blocks: list[str], namesrv: str, namespace: dict[str, Any]) -> None:
    for n, block in enumerate(blocks, 1):
        code = compile(block.replace(README_NAMESRV, namesrv), f"README.md python block {n}", "exec")
        exec(code, namespace)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(store_dir=tmp_path / "store") as c:
        yield c


def test_readme_python_blocks_run_in_order(
    cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = readme_blocks(spark=False)
    assert len(blocks) >= 3 and all(README_NAMESRV in b for b in blocks[:2])
    ns: dict[str, Any] = {"__name__": "__readme__"}
    printed: list[str] = []

    def saw(text: str) -> bool:
        printed.append(capsys.readouterr().out)
        return text in "".join(printed)

    try:
        run_blocks(blocks, cluster.namesrv_addr, ns)
        # the Quick start's consumer prints what the producer sent; the wallet's notifier
        # prints each user's balances in the order they were sent
        wait_until(lambda: saw("TopicTest") and saw("b'hello'"), 30, "the quick start message consumed")
        wait_until(lambda: saw("bob: balance is 20"), 30, "the wallet events consumed")
        wait_until(lambda: saw("alice: balance is 50"), 30, "the wallet events consumed")
        out = "".join(printed)
        assert out.index("alice: balance is 100") < out.index("alice: balance is 50")
        # the transactional and request/reply blocks (they end before the next block runs)
        assert "order event COMMIT_MESSAGE" in out
        assert "reply b'price of sku-42'" in out and "reply b'price of sku-7'" in out
        # the asyncio quick start ran to its end on its own loop
        assert "push consumer got b'hello async'" in out
        assert "lite pull consumer got" in out
        assert "aio order event COMMIT_MESSAGE" in out
        assert "aio reply b'price of sku-9'" in out
        assert "aio bulk sent 1000" in out
        # the example test of the Tests section, with the plugin's fixtures
        names = iter(range(1000))
        ns["test_round_trip"](cluster, lambda prefix="t": f"{prefix}_readme_{next(names)}")
    finally:
        for name in ("notifier", "consumer", "producer"):
            if name in ns:
                ns[name].shutdown()
