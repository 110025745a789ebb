"""PEP 517 backend: setuptools, asking for mypy (which brings mypyc) only when rocketq will compile.

``pip install .`` builds in an isolated environment holding only the build requirements. mypy is
needed there only to compile the hot set (see ``setup.py``), and only when a C compiler can run the
result; without a compiler (or with ``ROCKETQ_COMPILE=0``) the build asks for setuptools alone and
installs pure Python. Everything else is setuptools' own ``build_meta``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sysconfig
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - this backend is setuptools' plus one hook

MYPY_REQUIREMENT = "mypy>=1.10"


def _will_compile() -> bool:
    if os.environ.get("ROCKETQ_COMPILE", "auto").strip().lower() in ("0", "no", "false", "pure"):
        return False
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(compiler)
    return bool(words) and shutil.which(words[0]) is not None


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    if _will_compile():
        requires.append(MYPY_REQUIREMENT)
    return requires
