"""The side-by-side benchmark suite: rocketq vs Redis Streams vs NATS JetStream (issue #9).

Layout:

* :mod:`.common` - sizes, the :class:`~.common.Meter` that times one measured window and
  reads the server's CPU seconds and RSS from ``/proc``, the result records.
* :mod:`.peers` - finds, starts and stops ``redis-server`` and ``nats-server -js`` (and an
  :class:`~rocketq.testing.cluster.EmbeddedCluster`) as child processes on free loopback
  ports with temporary data directories.
* :mod:`.rocketq_bench`, :mod:`.redis_bench`, :mod:`.nats_bench` - the same workloads for
  each system, written the way a Python user of that system would write them.
* :mod:`.runner` - rounds (A B C A B C ...), medians; :mod:`.report` - Markdown + PNG;
  :mod:`.profiling` - py-spy on the rocketq broker and client under workloads 1, 3 and 4.

Entry point: ``benchmarks/run_suite.py`` (``make bench``).
"""

from __future__ import annotations

__all__: list[str] = []
