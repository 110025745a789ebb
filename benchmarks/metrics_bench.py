"""Send throughput with broker metrics off and on (issue #26).

Runs the producer scenarios of ``producer_bench`` (100-byte bodies) against two embedded
clusters in turn: one without metrics, one serving Prometheus metrics
(``metricsExporterType=PROM``) while a scraper reads ``/metrics`` every second for the whole
run, as Prometheus would. The broker's hot path records send/pull latencies either way
(one histogram observation per request); what "on" adds is the scrape-time collection.
Rounds alternate off/on ``--rounds`` times and the best of each is kept, to damp the noise
of a shared machine.

    python benchmarks/metrics_bench.py [--seconds 3] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request

from producer_bench import BODY, TOPIC, async_in_flight, batches, sync_one

from rocketq.client import Message, Producer, ProducerConfig
from rocketq.testing.cluster import EmbeddedCluster


def _scraper(addr: str, stop: threading.Event, counts: list[int]) -> None:
    while not stop.wait(1.0):
        with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as resp:
            resp.read()
        counts[0] += 1


def run(metrics: bool, seconds: float) -> dict[str, float]:
    conf = {"metricsExporterType": "PROM", "metricsPromExporterPort": "0"} if metrics else {}
    with EmbeddedCluster(broker_conf=conf) as cluster:
        cluster.create_topic(TOPIC, 8)
        stop = threading.Event()
        scrapes = [0]
        scraper = None
        if metrics:
            ready = cluster.store_dir / f"{cluster.broker_names[0]}.ready"
            addr = json.loads(ready.read_text())["metrics"]
            scraper = threading.Thread(target=_scraper, args=(addr, stop, scrapes), daemon=True)
            scraper.start()
        cfg = ProducerConfig(producer_group="MetricsBench", send_msg_timeout_ms=10_000)
        try:
            with Producer(namesrv_addr=cluster.namesrv_addr, config=cfg) as p:
                p.send(Message(TOPIC, BODY))
                out = {
                    "sync, 1 thread": sync_one(p, seconds),
                    "batch of 32": batches(p, seconds),
                    "async, 1000 in flight": async_in_flight(p, seconds),
                }
        finally:
            stop.set()
            if scraper is not None:
                scraper.join(15)
        if metrics:
            out["scrapes"] = float(scrapes[0])
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    best: dict[bool, dict[str, float]] = {False: {}, True: {}}
    for _ in range(args.rounds):
        for on in (False, True):
            for name, rate in run(on, args.seconds).items():
                best[on][name] = max(best[on].get(name, 0.0), rate)
            time.sleep(0.5)
    print(f"{'scenario':<24}{'metrics off':>14}{'metrics on':>14}{'change':>9}")
    for name in best[False]:
        off, on = best[False][name], best[True][name]
        print(f"{name:<24}{off:>14,.0f}{on:>14,.0f}{(on - off) / off:>+9.1%}")
    print(f"scrapes during the 'on' runs (best round): {best[True].get('scrapes', 0):.0f}")


if __name__ == "__main__":
    main()
