"""What the demo needs besides rocketq: Java 17+ and the ``spark`` extra (pyspark, pyarrow).

Each check returns ``None`` when fine, else a message telling the user what to do.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess

__all__ = ["JAVA_HELP", "MIN_JAVA", "java_problem", "java_version", "spark_problem"]

#: Spark 4 runs on Java 17 or 21.
MIN_JAVA = 17

JAVA_HELP = (
    "Spark needs Java 17 or newer (Spark 4 runs on Java 17/21). Install one and make it the "
    "default, or point JAVA_HOME at it, e.g.:\n"
    "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless\n"
    "  Fedora/RHEL:   sudo dnf install -y java-17-openjdk-headless\n"
    "  macOS:         brew install openjdk@17\n"
    "  any OS:        https://adoptium.net (Temurin 17), then export JAVA_HOME=/path/to/jdk\n"
    "Then run `make demo` again."
)


def _java_binary() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_version(java: str) -> int | None:
    """The major version ``java -version`` reports (``1.8.0_x`` -> 8, ``17.0.15`` -> 17)."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def java_problem() -> str | None:
    """``None`` when a Java >= 17 is found (JAVA_HOME first, then PATH), else what to do."""
    java = _java_binary()
    if java is None:
        where = "JAVA_HOME/bin/java" if os.environ.get("JAVA_HOME") else "`java` on the PATH"
        return f"Java was not found ({where}).\n{JAVA_HELP}"
    version = java_version(java)
    if version is None:
        return f"could not run `{java} -version`.\n{JAVA_HELP}"
    if version < MIN_JAVA:
        return f"{java} is Java {version}.\n{JAVA_HELP}"
    return None


def spark_problem() -> str | None:
    """``None`` when pyspark and pyarrow are importable, else how to install them."""
    missing = [name for name in ("pyspark", "pyarrow", "numpy") if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the demo needs {', '.join(missing)} (the 'spark' extra of rocketq): "
        "run `pip install -e '.[spark]'` in the project's virtualenv (make demo does this)."
    )
