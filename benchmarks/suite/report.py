"""Write a run's results: ``results.json`` (every round), ``REPORT.md`` and ``throughput.png``.

The Markdown report carries: the machine and server settings, any missing peer or failed
workload (up front), one table per variant with medians over the rounds (min-max of the
throughput beside it), the rocketq/peer ratios with the issue's targets, the Java reference
numbers, how each workload is implemented per system, and the profiler's hot spots when a
``profile.json`` sits beside it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .common import Measurement, Variant, Workload
from .peers import ONLOOP_SYSTEM
from .runner import SYSTEMS, Row, SuiteResult, summarize

__all__ = [
    "JAVA_REFERENCE",
    "TARGETS",
    "Target",
    "load_results",
    "render_markdown",
    "spark_section",
    "targets_table",
    "write_chart",
    "write_results",
]

#: Issue #9: a real Apache RocketMQ 4.9.7 broker + Java client on this machine class (msgs/s).
JAVA_REFERENCE: dict[Workload, float] = {
    Workload.PUBLISH_ONE: 6_022,
    Workload.PUBLISH_BATCH: 54_887,
    Workload.PUBLISH_ASYNC: 36_052,
    Workload.DRAIN_ONE: 54_573,
}


@dataclass(frozen=True)
class Target:
    """One of issue #27's targets: rocketq / Redis (same run, medians) must reach ``ratio``
    (``at_most``: a latency ratio must stay at or under it)."""

    level: str  # "Must" or "Aim"
    variant: Variant
    workload: Workload
    ratio: float
    at_most: bool = False


#: Issue #27's targets against Redis (same-run medians of `make bench`). Workload 6, fsync per
#: acknowledgement, is the durable variant's publish workloads against `appendfsync always`.
TARGETS: tuple[Target, ...] = (
    Target("Must", Variant.DEFAULT, Workload.PUBLISH_ONE, 0.7),
    Target("Must", Variant.DEFAULT, Workload.PUBLISH_BATCH, 0.6),
    Target("Must", Variant.DEFAULT, Workload.PUBLISH_ASYNC, 0.5),
    Target("Must", Variant.DEFAULT, Workload.DRAIN_ONE, 0.8),
    Target("Must", Variant.DEFAULT, Workload.DRAIN_GROUP, 0.6),
    Target("Must", Variant.DEFAULT, Workload.LATENCY, 1.5, at_most=True),
    Target("Must", Variant.DURABLE, Workload.PUBLISH_ONE, 0.8),
    Target("Must", Variant.DURABLE, Workload.PUBLISH_BATCH, 0.8),
    Target("Must", Variant.DURABLE, Workload.PUBLISH_ASYNC, 0.8),
    Target("Aim", Variant.DEFAULT, Workload.PUBLISH_ONE, 1.0),
    Target("Aim", Variant.DEFAULT, Workload.PUBLISH_BATCH, 1.0),
    Target("Aim", Variant.DEFAULT, Workload.PUBLISH_ASYNC, 1.0),
    Target("Aim", Variant.DEFAULT, Workload.DRAIN_ONE, 1.0),
    Target("Aim", Variant.DEFAULT, Workload.DRAIN_GROUP, 1.0),
    Target("Aim", Variant.DEFAULT, Workload.LATENCY, 1.0, at_most=True),
)
#: The rocketq builds of a run (``suite/runner.py``), in report order.
ROCKETQ_SYSTEMS = ("rocketq", "rocketq-pure")
#: Issue #9: Java end-to-end latency reference, ms.
JAVA_LATENCY_MS = {"p50": 0.9, "p99": 15.0}

_METHOD = """\
| workload | rocketq (this repo's client) | Redis Streams (redis-py + hiredis) | NATS JetStream (nats-py) |
| --- | --- | --- | --- |
| 1 publish, 1 per round trip | `Producer.send` | `XADD` | `await js.publish` (waits for PubAck) |
| 2 publish, batches of 32 | `Producer.send([32 messages])` (one MessageBatch) | pipeline of 32 `XADD` | 32 `js.publish_async` + gather |
| 3 publish, 1000 in flight | `send_async` with `auto_batch=True` (RocketMQ 5.x autoBatch idea: async sends leave as batches while up to two are in flight) + semaphore of 1,000 | pipeline of 1,000 `XADD` (redis-py cannot multiplex one connection) | `js.publish_async`, `publish_async_max_pending=1000` |
| 4 drain + ack | `PushConsumer`, listener batches of 32, CONSUME_SUCCESS (each pull answer's batch run on the I/O thread that read it: `consume_on_io_thread`, the default) | `XREADGROUP COUNT 32` over the 4 streams + pipelined `XACK` | pull consumer, `fetch(32)` + `msg.ack()` each |
| 4b group of 4 | 4 PushConsumers (own client instances) in one group | 4 consumers (own connections, threads) in one group | 4 connections bound to one durable pull consumer |
| 5 latency | PushConsumer (long polling); sync sends 1 ms apart | consumer thread in `XREADGROUP BLOCK`; `XADD` 1 ms apart | durable push subscription; `js.publish` 1 ms apart |
| A1 asyncio, 1 per round trip | `await AsyncProducer.send` (rocketq.aio, uvloop when installed) | `await XADD` (redis.asyncio) | as 1 (nats-py is asyncio) |
| A3 asyncio, 1000 in flight | `AsyncProducer.send_async` (a future, no task) + semaphore of 1,000, `auto_batch=True` | 1,000 `XADD` tasks over a pool of 64 connections (redis.asyncio) | as 3 |
| A4a/A4b asyncio drain | 1 / 4 `AsyncPushConsumer`s, coroutine listener, batches of 32 | 1 / 4 tasks, `XREADGROUP` + pipelined `XACK` (redis.asyncio) | as 4a/4b |

"4 queues" are 4 queues of one topic (rocketq), 4 stream keys (Redis) and 4 subjects of one
stream (NATS). All clients run in one Python process on the same machine as the server; only
one server runs at a time. Server CPU seconds are `utime+stime` of the server process over the
measured window (from `/proc/<pid>/stat`); peak RSS is the largest `VmRSS` sampled every 20 ms
during the window (for rocketq it includes the page-cache pages of its memory-mapped store
files). A drain's window starts when the consumers start (it includes group join / rebalance).
"other procs CPU s" is the CPU time every other process of the machine used during the window
(busy time from `/proc/stat` minus server and client): a noise indicator - on a quiet machine it
is near 0; rows where it is large were measured while something else competed for the 2 cores.
Before each server start the runner waits (up to 20 s) for other processes to use less than
0.3 cores.
"""


def write_results(result: SuiteResult, out_dir: Path) -> Path:
    """Write ``results.json`` (raw measurements, medians, context) and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "seconds": result.seconds,
        "sizes": {k: getattr(result.sizes, k) for k in result.sizes.__dataclass_fields__},
        "machine": result.machine,
        "missing": result.missing,
        "failures": result.failures,
        "servers": [
            {"system": s, "variant": v.value, "version": ver, "durability": note}
            for (s, v), (ver, note) in sorted(
                result.servers.items(), key=lambda kv: (kv[0][0], kv[0][1].value)
            )
        ],
        "measurements": [one.to_json() for one in result.measurements],
    }
    path = out_dir / "results.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def load_results(path: Path) -> tuple[dict[str, object], list[Measurement]]:
    """``results.json`` back as (context, measurements)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    by_value = {w.value: w for w in Workload}
    ms = []
    for raw in data["measurements"]:
        fields = dict(raw)
        fields.pop("throughput", None)
        fields["variant"] = Variant(fields["variant"])
        fields["workload"] = by_value[fields["workload"]]
        ms.append(Measurement(**fields))
    return data, ms


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def _lat(row: Row, key: str) -> str:
    return f"{row.latency_ms[key]:.2f}" if key in row.latency_ms else ""


def _table(rows: Sequence[Row]) -> list[str]:
    out = [
        "| workload | system | msgs/s (median) | min-max msgs/s | p50 ms | p99 ms | p999 ms "
        "| server CPU s | server CPU µs/msg | server peak RSS MiB | client CPU s | other procs CPU s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        out.append(
            f"| {r.workload.value} | {r.system} | **{_fmt_rate(r.throughput)}** "
            f"| {_fmt_rate(r.throughput_min)}-{_fmt_rate(r.throughput_max)} "
            f"| {_lat(r, 'p50')} | {_lat(r, 'p99')} | {_lat(r, 'p999')} "
            f"| {r.server_cpu_s:.2f} | {r.server_cpu_us_per_msg:.1f} | {r.server_peak_rss_mib:.0f} "
            f"| {r.client_cpu_s:.2f} | {r.other_cpu_s:.2f} |" + (f" {r.errors} errors" if r.errors else "")
        )
    return out


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"


def _ratios(rows: Sequence[Row], variant: Variant) -> list[str]:
    by = {(r.system, r.workload): r for r in rows if r.variant is variant}
    out = [
        "| workload | rocketq / Redis | rocketq / NATS | target (issue #9) | met? | rocketq / Java 4.9.7 reference |",
        "| --- | ---: | ---: | --- | --- | ---: |",
    ]
    for w in Workload:
        rq = by.get(("rocketq", w))
        if rq is None:
            continue
        redis_row, nats_row = by.get(("redis", w)), by.get(("nats", w))
        java = ""
        if w is Workload.LATENCY:
            p99 = rq.latency_ms.get("p99")
            redis_p99 = redis_row.latency_ms.get("p99") if redis_row else None
            nats_p99 = nats_row.latency_ms.get("p99") if nats_row else None
            target = "p99 <= 1.0x Redis" if variant is Variant.DEFAULT else ""
            met = ""
            if target and p99 is not None and redis_p99:
                met = "yes" if p99 <= redis_p99 else "no"
            if variant is Variant.DEFAULT and p99 is not None:
                java = f"p99 {_ratio(p99, JAVA_LATENCY_MS['p99'])}"
            out.append(
                f"| {w.value} (p99, lower is better) | {_ratio(p99, redis_p99)} | {_ratio(p99, nats_p99)} "
                f"| {target} | {met} | {java} |"
            )
            continue
        target = ">= 1.0x Redis" if variant is Variant.DEFAULT else ""
        met = ""
        if target and redis_row is not None:
            met = "yes" if rq.throughput >= redis_row.throughput else "no"
        if variant is Variant.DEFAULT and w in JAVA_REFERENCE:
            java = _ratio(rq.throughput, JAVA_REFERENCE[w])
        out.append(
            f"| {w.value} | {_ratio(rq.throughput, redis_row.throughput if redis_row else None)} "
            f"| {_ratio(rq.throughput, nats_row.throughput if nats_row else None)} | {target} | {met} | {java} |"
        )
        onloop = by.get((ONLOOP_SYSTEM, w))
        if onloop is not None:
            # the opt-in syncFlushOnLoop=true, Redis's appendfsync-always policy (no target of its own)
            out.append(
                f"| {w.value}, {ONLOOP_SYSTEM} (`syncFlushOnLoop=true`) "
                f"| {_ratio(onloop.throughput, redis_row.throughput if redis_row else None)} "
                f"| {_ratio(onloop.throughput, nats_row.throughput if nats_row else None)} | | | |"
            )
    return out


def _verdict(value: float | None, limit: float, at_most: bool) -> tuple[str, str]:
    if value is None:
        return "n/a", "n/a"
    ok = value <= limit if at_most else value >= limit
    return f"{value:.2f}x", "pass" if ok else "**miss**"


def targets_table(rows: Sequence[Row]) -> list[str]:
    """Issue #27's targets, one column pair per rocketq build present: the ratio and pass/miss."""
    builds = [s for s in ROCKETQ_SYSTEMS if any(r.system == s for r in rows)]
    if not builds:
        return []
    by = {(r.system, r.variant, r.workload): r for r in rows}
    out = [
        "| level | target | " + " | ".join(f"{b} | {b}: met?" for b in builds) + " |",
        "| --- | --- |" + " ---: | --- |" * len(builds),
    ]

    def ratio_to_redis(system: str, t: Target) -> float | None:
        mine, redis_row = by.get((system, t.variant, t.workload)), by.get(("redis", t.variant, t.workload))
        if mine is None or redis_row is None:
            return None
        if t.at_most:
            p99, redis_p99 = mine.latency_ms.get("p99"), redis_row.latency_ms.get("p99")
            return p99 / redis_p99 if p99 is not None and redis_p99 else None
        return mine.throughput / redis_row.throughput if redis_row.throughput else None

    for t in TARGETS:
        name = ("6 (fsync per ack): " if t.variant is Variant.DURABLE else "") + t.workload.value
        what = (
            f"{name}: p99 <= {t.ratio:.1f}x Redis"
            if t.at_most
            else f"{name} >= {t.ratio:.1f}x Redis"
            + (" `appendfsync always`" if t.variant is Variant.DURABLE else "")
        )
        cells = []
        for b in builds:
            cells += _verdict(ratio_to_redis(b, t), t.ratio, t.at_most)
        out.append(f"| {t.level} | {what} | " + " | ".join(cells) + " |")
        if t.variant is Variant.DURABLE and (ONLOOP_SYSTEM, t.variant, t.workload) in by:
            # the opt-in sync on the loop (Redis's policy), measured with the loaded build; the
            # Must is judged on the default row above (the native AIO group commit)
            cells = []
            for b in builds:
                cells += _verdict(
                    ratio_to_redis(ONLOOP_SYSTEM, t) if b == "rocketq" else None, t.ratio, False
                )
            out.append(
                f"| Info | {what}, with `syncFlushOnLoop=true` ({ONLOOP_SYSTEM}; opt-in, not judged) | "
                + " | ".join(cells)
                + " |"
            )
        if t.level == "Must" and t.workload is Workload.DRAIN_GROUP:
            cells = []
            for b in builds:
                one, four = by.get((b, t.variant, Workload.DRAIN_ONE)), by.get((b, t.variant, t.workload))
                value = four.throughput / one.throughput if one and four and one.throughput else None
                cells += _verdict(value, 1.0, False)
            out.append("| Must | 4b >= 4a (4b / 4a of the same build) | " + " | ".join(cells) + " |")
    for w, ref in JAVA_REFERENCE.items():
        cells = []
        for b in builds:
            mine = by.get((b, Variant.DEFAULT, w))
            cells += _verdict(mine.throughput / ref if mine else None, 1.0, False)
        out.append(
            f"| Must | {w.value} >= 1.0x the Java 4.9.7 reference ({ref:,.0f}/s) | "
            + " | ".join(cells)
            + " |"
        )
    return out


def _profile_section(profile_path: Path) -> list[str]:
    if not profile_path.exists():
        return []
    data = json.loads(profile_path.read_text(encoding="utf-8"))
    out = ["## Where rocketq spends its time (py-spy)", ""]
    if data.get("error"):
        out += [f"Profiling did not run: {data['error']}", ""]
        return out
    out += [
        f"py-spy {data.get('py_spy', '')} sampled the broker process and the client process at "
        f"{data.get('rate')} Hz (non-blocking; `--gil`: only the thread holding the GIL, i.e. where the "
        "process's Python CPU time goes) while each workload ran (publish windows of 8 s). "
        "*self* = the function itself was on top of the stack, *total* = anywhere on the stack; "
        "both in % of the process's samples (the total list leaves out entry points found on > 85 % of the stacks). Raw collapsed stacks (flamegraph input) are in "
        "`profile/`.",
        "",
    ]
    for entry in data["profiles"]:
        out += [
            f"### {entry['workload']} - {entry['role']} ({entry['samples']} samples, "
            f"{entry['msgs_per_s']:,.0f} msgs/s while profiled)",
            "",
            "| self % | function | | total % | function (rocketq code) |",
            "| ---: | --- | --- | ---: | --- |",
        ]
        selfs, totals = entry["self"], entry["total"]
        for i in range(max(len(selfs), len(totals))):
            s = selfs[i] if i < len(selfs) else ["", 0.0]
            t = totals[i] if i < len(totals) else ["", 0.0]
            s_pct = f"{s[1]:.1f}" if s[0] else ""
            t_pct = f"{t[1]:.1f}" if t[0] else ""
            out.append(f"| {s_pct} | `{s[0]}` | | {t_pct} | `{t[0]}` |")
        out.append("")
    return out


def spark_section(spark_path: Path) -> list[str]:
    """Workload 7 from ``spark.json`` (written by ``benchmarks/spark_bench.py --json``)."""
    if not spark_path.exists():
        return []
    data = json.loads(spark_path.read_text(encoding="utf-8"))
    out = ["## Workload 7: Spark batch read, connector vs Parquet", ""]
    if data.get("missing") or data.get("error"):
        kind = "MISSING" if data.get("missing") else "FAILED"
        out += [f"**{kind}**: {data.get('missing') or data.get('error')}", ""]
        return out
    best = data["best_rows_per_s"]
    median = data["median_rows_per_s"]
    out += [
        f"`benchmarks/spark_bench.py`: {data['messages']:,} messages of {data['body_size']} bytes in "
        f"{data['queues']} queues, read by a local[2] SparkSession (pyspark {data['pyspark']}) into the "
        f"`noop` sink, every column; the same rows saved once as Parquet and read the same way. "
        f"{data['warmup']} warm-up run(s) of each, then {data['repeat']} timed runs alternating "
        "connector / Parquet; the best and the median run of each. CPU seconds are medians over the timed runs, per process "
        "group (`/proc`: the Spark JVM, its Python workers, the rocketq server, this driver). "
        + (
            f"Spark JVM options: `{data['jvm_options']}` (Arrow Java's unchecked vector reads; only the "
            "connector's path reads Arrow vectors)."
            if data["jvm_options"]
            else "Spark JVM options: none (Arrow Java's checked vector reads)."
        )
        + {
            "unix": " Python workers on Unix domain sockets (`spark.python.unix.domain.socket.enabled`; "
            "only the connector's path has Python workers).",
            "tcp": " Python workers on TCP loopback (Spark's default).",
        }.get(data.get("python_worker_sockets", ""), ""),
        "",
        "| reader | rows/s (best) | rows/s (median) | wall s | Spark JVM CPU s | Python workers CPU s "
        "| rocketq server CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, cpu in data["median_cpu_s"].items():
        out.append(
            f"| {label} | {best[label]:,.0f} | {median[label]:,.0f} | {cpu.get('wall', 0):.2f} | {cpu.get('spark jvm', 0):.2f} | "
            f"{cpu.get('python workers', 0):.2f} | {cpu.get('rocketq server', 0):.2f} |"
        )
    out += [
        "",
        f"Ratio connector / Parquet: **{data['ratio']:.2f}x** of the best runs, "
        f"**{data['ratio_median']:.2f}x** of the median runs (issue #7 target: >= 0.5x).",
        "",
    ]
    return out


def render_markdown(data: dict[str, object], ms: Sequence[Measurement], out_dir: Path) -> str:
    """The whole ``REPORT.md`` text."""
    rows = summarize(ms)
    seconds = data.get("seconds")
    minutes = float(seconds) / 60 if isinstance(seconds, (int, float)) else 0.0
    machine = data.get("machine") or {}
    assert isinstance(machine, dict)
    sizes = data.get("sizes") or {}
    assert isinstance(sizes, dict)
    lines = [
        "# rocketq vs Redis Streams vs NATS JetStream",
        "",
        f"Generated {data.get('generated')} by `make bench` (`benchmarks/run_suite.py`) in "
        f"{minutes:.1f} min. Medians of {sizes.get('rounds')} rounds; "
        "each round starts a fresh server per system and variant, in the order rocketq (compiled when "
        "built), rocketq-onloop (durable only), rocketq-pure, Redis, NATS (A B C D A B C D ...). "
        "100-byte bodies, 4 queues / streams / subjects.",
        "",
        "![throughput and latency](throughput.png)",
        "",
    ]
    missing = data.get("missing") or {}
    failures = data.get("failures") or []
    assert isinstance(missing, dict)
    assert isinstance(failures, list)
    if missing:
        lines += ["## MISSING peers", ""]
        lines += [f"- **{k}**: {v}" for k, v in missing.items()]
        lines.append("")
    if failures:
        lines += ["## Failed workloads", ""]
        lines += [f"- `{f}`" for f in failures]
        lines.append("")
    lines += ["## Machine and servers", "", "| | |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    servers = data.get("servers") or []
    assert isinstance(servers, list)
    for s in servers:
        lines.append(f"| {s['system']} ({s['variant']}) | {s['version']}; {s['durability']} |")
    lines += [
        f"| sizes | publish windows {sizes.get('publish_seconds')} s after {sizes.get('warmup_seconds')} s "
        f"warm-up; drain {sizes.get('drain_messages'):,} messages; latency {sizes.get('latency_messages'):,} "
        f"messages {sizes.get('latency_interval_ms')} ms apart |",
        "",
        "## Results: default durability",
        "",
        "rocketq ASYNC_FLUSH, Redis AOF `appendfsync everysec`, NATS file storage (its default sync). "
        "p50/p99/p999 of workloads 1-2 are per call (round trip), of workload 5 end to end.",
        "",
        *_table([r for r in rows if r.variant is Variant.DEFAULT]),
        "",
        "## Results: workload 6, fsync before the acknowledgement",
        "",
        "rocketq SYNC_FLUSH, Redis `appendfsync always`, NATS file storage with `sync_interval: always` "
        "when the server supports it (see the servers table: Debian 12's nats-server 2.9.10 does not, so "
        "its durable row is NOT fsynced per message and is not a like-for-like comparison). "
        "`rocketq` acks once the group commit's sync, which the broker's loop submits through Linux "
        "native AIO and is woken by, completed, or, while the sends come one per sync and the disk is "
        "quick, the sync the loop makes itself (`syncFlushAdaptive`; the defaults, what the targets "
        "judge; without native AIO Java's GroupCommitService thread syncs); "
        f"`{ONLOOP_SYSTEM}` is the same build with the opt-in `syncFlushOnLoop=true`, every sync "
        "made on the broker's event loop as Redis makes it under `appendfsync always` (the like-for-like "
        "policy; a stalled disk then stalls the broker's network service too).",
        "",
        *_table([r for r in rows if r.variant is Variant.DURABLE]),
        "",
        "## Targets (issue #27), both builds",
        "",
        "`rocketq` is the build the harness loaded (the mypyc-compiled hot set when built; see the "
        "servers table), `rocketq-pure` the same workloads in a child process with "
        "`ROCKETQ_PURE_PYTHON=1` (client and server pure Python), alternating with it in every round. "
        "Ratios are same-run medians against Redis; the Java figures are issue #9's reference run.",
        "",
        *targets_table(rows),
        "",
        "## Ratios",
        "",
        "Default durability:",
        "",
        *_ratios(rows, Variant.DEFAULT),
        "",
        "With fsync:",
        "",
        *_ratios(rows, Variant.DURABLE),
        "",
        "Java reference (issue #9, Apache RocketMQ 4.9.7 + Java client, same machine class): "
        "6,022 sync sends/s, 54,887 msgs/s in batches of 32, 36,052 msgs/s async, 54,573 msgs/s drain, "
        "p50 0.9 ms / p99 15 ms end to end.",
        "",
        "## How each workload is run",
        "",
        _METHOD,
    ]
    lines += spark_section(out_dir / "spark.json")
    lines += _profile_section(out_dir / "profile.json")
    return "\n".join(lines).rstrip() + "\n"


def write_chart(ms: Sequence[Measurement], path: Path) -> None:
    """Two panels: median throughput per workload (log scale) and workload 5 latency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarize(ms)
    colors = {
        "rocketq": "#d1495b",
        ONLOOP_SYSTEM: "#f4845f",
        "rocketq-pure": "#8f2d56",
        "redis": "#00798c",
        "nats": "#edae49",
    }
    cats: list[tuple[Variant, Workload]] = [
        (r.variant, r.workload) for r in rows if r.workload is not Workload.LATENCY
    ]
    cats = list(dict.fromkeys(cats))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [3, 1]})
    systems = [s for s in SYSTEMS if any(r.system == s for r in rows)]
    width = 0.8 / max(1, len(systems))
    for i, system in enumerate(systems):
        by = {(r.variant, r.workload): r for r in rows if r.system == system}
        xs, ys, errs_lo, errs_hi = [], [], [], []
        for j, cat in enumerate(cats):
            r = by.get(cat)
            if r is None:
                continue
            xs.append(j + (i - (len(systems) - 1) / 2) * width)
            ys.append(r.throughput)
            errs_lo.append(r.throughput - r.throughput_min)
            errs_hi.append(r.throughput_max - r.throughput)
        ax1.bar(xs, ys, width, label=system, color=colors.get(system), yerr=[errs_lo, errs_hi], capsize=2)
    labels = [f"{w.short}{' fsync' if v is Variant.DURABLE else ''}" for v, w in cats]
    ax1.set_xticks(range(len(cats)), labels)
    ax1.set_yscale("log")
    ax1.set_ylabel("messages / s (median, log scale; bars show min-max)")
    ax1.set_title("Throughput by workload")
    ax1.legend()
    ax1.grid(axis="y", which="both", alpha=0.3)
    lat_rows = [r for r in rows if r.workload is Workload.LATENCY and r.variant is Variant.DEFAULT]
    keys = ["p50", "p99", "p999"]
    for i, r in enumerate(lat_rows):
        xs = [k + (i - (len(lat_rows) - 1) / 2) * width for k in range(len(keys))]
        ax2.bar(
            xs, [r.latency_ms.get(k, 0.0) for k in keys], width, label=r.system, color=colors.get(r.system)
        )
    ax2.set_xticks(range(len(keys)), keys)
    ax2.set_ylabel("ms")
    ax2.set_title("5: end-to-end latency, 1 msg/ms")
    ax2.legend()
    ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
