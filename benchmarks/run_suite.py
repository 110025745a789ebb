"""Side-by-side benchmarks: rocketq vs Redis Streams vs NATS JetStream (issue #9). ``make bench``.

    .venv/bin/python benchmarks/run_suite.py            # full run (~10 min), writes benchmarks/results/
    .venv/bin/python benchmarks/run_suite.py --quick    # every workload tiny, into a temp dir
    .venv/bin/python benchmarks/run_suite.py --quick --systems rocketq --out /tmp/x   # CI smoke test
    .venv/bin/python benchmarks/run_suite.py --report-only   # re-render REPORT.md + PNG from results.json

Workload 7 (the Spark connector against Parquet) runs ``benchmarks/spark_bench.py`` after the
peers (not with ``--quick`` unless ``--spark``); without pyspark or Java 17+ it is reported as
missing.

Peers are found on PATH (or /usr/sbin), or through ``REDIS_SERVER`` / ``NATS_SERVER``; a peer
that is missing is reported in the output and in REPORT.md. Exit status: 0 when every
requested system ran every workload, 1 when something was missing or failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.suite.common import FULL, QUICK, Sizes, Variant
from benchmarks.suite.report import load_results, render_markdown, write_chart, write_results
from benchmarks.suite.runner import SYSTEMS, run_suite

RESULTS = Path(__file__).resolve().parent / "results"
SPARK_BENCH = Path(__file__).resolve().parent / "spark_bench.py"


def run_spark(out: Path, quick: bool = False) -> str | None:
    """Workload 7: ``spark_bench.py --json out/spark.json``; None when it ran, else what went wrong
    (also written to ``spark.json`` so the report shows it). ``quick``: 20,000 messages, one run each."""
    from rocketq.demo.environment import java_problem

    path = out / "spark.json"
    out.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # never report an earlier run's numbers
    missing = (
        "pyspark is not installed (pip install 'rocketq[spark]')"
        if importlib.util.find_spec("pyspark") is None
        else java_problem()
    )
    if missing:
        path.write_text(json.dumps({"missing": missing}), encoding="utf-8")
        return f"MISSING spark (workload 7): {missing}"
    # quick: enough rows that a run's worker CPU shows in /proc's 10 ms ticks
    sizes = ["--messages", "100000", "--repeat", "1", "--warmup", "0"] if quick else []
    proc = subprocess.run(
        [sys.executable, str(SPARK_BENCH), "--json", str(path), *sizes], check=False, timeout=3600
    )
    if proc.returncode != 0 or not path.exists():
        error = f"spark_bench.py exited with status {proc.returncode}"
        path.write_text(json.dumps({"error": error}), encoding="utf-8")
        return f"FAILED spark (workload 7): {error}"
    return None


def _render(out: Path, chart: bool) -> Path | None:
    if not (out / "results.json").exists():
        print(f"no results.json in {out}: run the suite first (no REPORT.md written)")
        return None
    data, ms = load_results(out / "results.json")
    if chart:
        write_chart(ms, out / "throughput.png")
    report = out / "REPORT.md"
    report.write_text(render_markdown(data, ms, out), encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="every workload tiny, 1 round (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5; --quick: 1)")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}"
    )
    parser.add_argument("--variants", default="default,durable", help="default,durable or one of them")
    parser.add_argument("--out", type=Path, default=None, help="output dir (default benchmarks/results)")
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG (matplotlib not needed)")
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="py-spy hot spots (default: on unless --quick)",
    )
    parser.add_argument("--profile-only", action="store_true", help="only profile, then re-render the report")
    parser.add_argument("--report-only", action="store_true", help="only re-render from results.json")
    # internal: one round of rocketq for the rocketq-pure system (suite/runner.py starts it)
    parser.add_argument("--child-of-suite", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes-json", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--spark",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="workload 7, the Spark connector vs Parquet (default: on unless --quick)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}")
    variants = [Variant(v.strip()) for v in args.variants.split(",") if v.strip()]
    sizes = QUICK if args.quick else dataclasses.replace(FULL, rounds=5)
    if args.rounds is not None:
        if args.rounds < 1:
            parser.error("--rounds must be >= 1")
        sizes = dataclasses.replace(sizes, rounds=args.rounds)
    out: Path = args.out or (Path(tempfile.mkdtemp(prefix="rocketq-bench-")) if args.quick else RESULTS)
    profile = (not args.quick) if args.profile is None else args.profile

    if args.report_only:
        print(f"report: {_render(out, not args.no_chart)}")
        return 0
    if args.child_of_suite:
        sizes = Sizes(**json.loads(args.sizes_json))
        result = run_suite(
            sizes,
            systems=["rocketq"],
            variants=variants,
            say=lambda line: print(line.replace(" rocketq ", " rocketq-pure ", 1)),
        )
        write_results(result, out)
        return 0
    ok = True
    if not args.profile_only:
        print(f"benchmarks: {', '.join(systems)}; {sizes.rounds} round(s); output in {out}")
        result = run_suite(sizes, systems=systems, variants=variants)
        write_results(result, out)
        ok = not result.missing and not result.failures
        for system, why in result.missing.items():
            print(f"MISSING {system}: {why}")
        for failure in result.failures:
            print(f"FAILED {failure}")
        if (not args.quick) if args.spark is None else args.spark:
            print("workload 7: Spark connector vs Parquet (benchmarks/spark_bench.py)")
            problem = run_spark(out, quick=args.quick)
            if problem:
                print(problem)
                ok = False
    if profile or args.profile_only:
        from benchmarks.suite.profiling import profile_rocketq

        print("profiling rocketq (py-spy) under workloads 1, 3 and 4a")
        profile_rocketq(out, sizes)
    report = _render(out, not args.no_chart)
    print(f"report: {report}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
