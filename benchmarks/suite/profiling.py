"""Profile rocketq's broker and client with py-spy under workloads 1, 3 and 4.

For each workload a fresh measuring window runs (as in the suite) while two ``py-spy record``
processes sample the broker process and this (client) process at :data:`RATE` Hz, in
non-blocking mode, only the thread holding the GIL (``--gil``: where the Python CPU time goes), one frame per function (``--function``). py-spy's
raw (collapsed-stack) output is kept under ``<out>/profile/`` and reduced to the functions
with the most *self* samples (on top of the stack) and the rocketq functions with the most
*total* samples (anywhere on the stack; entry points on more than 85 % of the stacks left out). The reduction goes to ``<out>/profile.json``,
which :mod:`.report` renders.

The drain's pre-publishing happens before the samplers attach, so only the drain is sampled.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from .common import Meter, Sizes, Variant, Workload
from .peers import RocketqServer
from .rocketq_bench import RocketqBench
from .runner import wait_quiet

__all__ = ["ENTRY_POINT_SHARE", "PROFILED", "RATE", "find_py_spy", "profile_rocketq", "reduce_collapsed"]

RATE = 200
#: Functions on more than this share of the samples are left out of the "total" list.
ENTRY_POINT_SHARE = 0.85
PROFILED = (Workload.PUBLISH_ONE, Workload.PUBLISH_ASYNC, Workload.DRAIN_ONE)
_FRAME = re.compile(r"^(?P<name>.*) \((?P<path>.*?)(?::\d+)?\)$")


def find_py_spy() -> str | None:
    """py-spy next to this interpreter (the venv) or on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def _short(frame: str) -> str:
    """``name (…/site-packages/rocketq/x/y.py:12)`` -> ``name (rocketq/x/y.py)``."""
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match.group("path")
    for marker in ("/site-packages/", "/src/", "/benchmarks/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        path = "/".join(path.split("/")[-2:])
    return f"{match.group('name')} ({path})"


def reduce_collapsed(
    text: str, top: int = 15
) -> tuple[int, list[tuple[str, float]], list[tuple[str, float]]]:
    """(samples, top self %, top rocketq total %) of py-spy's raw collapsed stacks."""
    self_counts: Counter[str] = Counter()
    total_counts: Counter[str] = Counter()
    samples = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(f) for f in stack.split(";") if f]
        if not frames:
            continue
        samples += count
        self_counts[frames[-1]] += count
        for frame in set(frames):
            if "rocketq/" in frame:
                total_counts[frame] += count
    if samples == 0:
        return 0, [], []

    def pct(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(name, 100.0 * n / samples) for name, n in counter.most_common(top)]

    # entry points (main, the event loop's protocol callback, thread run loops) sit on nearly
    # every stack and say nothing about where the time goes
    for name, n in list(total_counts.items()):
        if n > ENTRY_POINT_SHARE * samples:
            del total_counts[name]
    return samples, pct(self_counts), pct(total_counts)


def _version(py_spy: str) -> str:
    out = subprocess.run([py_spy, "--version"], capture_output=True, text=True, check=False, timeout=10)
    return out.stdout.strip().removeprefix("py-spy ")


def _spy(py_spy: str, pid: int, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--function",
            "--nonblocking",
            "--gil",
            "--full-filenames",
            "--output",
            str(out),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stop_spy(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err.decode(errors="replace")


def profile_rocketq(out_dir: Path, sizes: Sizes, say: Callable[[str], None] = print) -> Path:
    """Sample broker and client under workloads 1, 3 and 4a; write ``profile.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "profile.json"
    py_spy = find_py_spy()
    if py_spy is None:
        path.write_text(
            json.dumps({"error": "py-spy is not installed (pip install py-spy)"}), encoding="utf-8"
        )
        say("MISSING py-spy: no profile")
        return path
    if sizes.publish_seconds >= 1.0:
        # longer windows than the suite's, for enough samples per function
        sizes = dataclasses.replace(sizes, publish_seconds=8.0)
    raw_dir = out_dir / "profile"
    raw_dir.mkdir(exist_ok=True)
    profiles: list[dict[str, object]] = []
    server = RocketqServer(Variant.DEFAULT)
    with server:
        bench = RocketqBench(server.cluster)
        try:
            for workload in PROFILED:
                if workload is Workload.DRAIN_ONE:
                    bench.prepare_drain(sizes)
                if sizes.quiet_wait_s > 0:
                    wait_quiet(sizes, say)
                outs = {
                    "broker": raw_dir / f"w{workload.short}_broker.txt",
                    "client": raw_dir / f"w{workload.short}_client.txt",
                }
                spies = {
                    "broker": _spy(py_spy, server.pid, outs["broker"]),
                    "client": _spy(py_spy, os.getpid(), outs["client"]),
                }
                time.sleep(1.0)  # let both samplers attach
                m = Meter(server.pid)
                try:
                    if workload is Workload.PUBLISH_ONE:
                        bench.publish_one(m, sizes)
                    elif workload is Workload.PUBLISH_ASYNC:
                        bench.publish_async(m, sizes)
                    else:
                        bench.drain(m, sizes, 1)
                finally:
                    errors = {role: _stop_spy(proc) for role, proc in spies.items()}
                rate = m.measurement("rocketq", Variant.DEFAULT, workload, 0).throughput
                for role, raw in outs.items():
                    if not raw.exists():
                        raise RuntimeError(f"py-spy wrote no {role} profile: {errors[role][-2000:]}")
                    samples, selfs, totals = reduce_collapsed(raw.read_text(encoding="utf-8"))
                    profiles.append(
                        {
                            "workload": workload.value,
                            "role": role,
                            "samples": samples,
                            "msgs_per_s": rate,
                            "self": selfs,
                            "total": totals,
                        }
                    )
                    head = ", ".join(f"{name.split(' (')[0]} {p:.0f}%" for name, p in selfs[:4])
                    say(f"  profile {workload.short} {role}: {samples} samples; top self: {head}")
        finally:
            bench.close()
    path.write_text(
        json.dumps({"py_spy": _version(py_spy), "rate": RATE, "profiles": profiles}, indent=1),
        encoding="utf-8",
    )
    return path
