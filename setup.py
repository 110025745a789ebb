"""Build hook: compile rocketq's hot set with mypyc when it can, and stay pure Python when it cannot.

The project metadata lives in pyproject.toml; this file only adds the optional mypyc extensions.

- ``pip install .`` (a wheel build): compiles ``rocketq._build.HOT_MODULES`` when mypy/mypyc is
  importable (the in-tree backend ``build_backend/rocketq_build.py`` asks for it only when a C compiler
  is on PATH). Every extension is ``optional``: a failing compiler leaves a pure-Python install.
- ``pip install -e .`` (an editable install) stays pure: an extension next to the source you edit would
  shadow the edit. ``make`` builds the extensions in place instead (``python setup.py build_ext
  --inplace`` with ``ROCKETQ_COMPILE=require``), and rebuilds when a hot source changes.
- ``ROCKETQ_COMPILE``: ``0`` never compiles; ``1`` compiles also for editable installs; ``require``
  compiles and fails the build loudly when mypyc or the compiler fails (what ``make`` uses, so a hot
  module that stops compiling breaks ``make test``).
- ``MYPYC_OPT_LEVEL`` (default 3) is passed to the C compiler; intermediate C goes to ``build/mypyc``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"


def _load_build_module() -> Any:
    spec = importlib.util.spec_from_file_location("_rocketq_build", SRC / "rocketq" / "_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks the module up while building the class
    spec.loader.exec_module(module)
    return module


_build = _load_build_module()
MODE = os.environ.get("ROCKETQ_COMPILE", "auto").strip().lower()
REQUIRED = MODE == "require"
EDITABLE = any(arg in ("editable_wheel", "develop") for arg in sys.argv)
# Metadata-only runs (egg_info, dist_info: pip asks for them before building) skip mypyc.
BUILDS = any(
    arg in ("build", "build_ext", "bdist_wheel", "install", "editable_wheel", "develop") for arg in sys.argv
)


def _say(message: str) -> None:
    print(f"rocketq build: {message}", file=sys.stderr)


#: the hot sources' hashes as they were when compilation began (written to the manifest)
DIGESTS: dict[str, str] = {}


def _extensions() -> list[Any]:
    if not BUILDS:
        return []
    if MODE in ("0", "no", "false", "pure"):
        _say("ROCKETQ_COMPILE=0: pure Python")
        return []
    if EDITABLE and MODE not in ("1", "require"):
        _say("editable install: pure Python (make builds the extensions in place)")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        if REQUIRED:
            raise
        _say("mypyc not available: pure Python")
        return []
    paths = [str(_build.source_path(m, SRC).relative_to(HERE)) for m in _build.HOT_MODULES]
    # hashed before mypyc reads them: a source edited during the build then reads as stale
    DIGESTS.update(_build.source_digests(SRC))
    # The hot modules are fully typed; the rest of the package (and third-party packages, which an
    # isolated build environment does not have) is only followed for types, silently.
    options = ["--ignore-missing-imports", "--follow-imports=silent", "--no-warn-unused-ignores"]
    try:
        extensions = mypycify(
            options + paths,
            opt_level=os.environ.get("MYPYC_OPT_LEVEL", "3"),
            target_dir=str(Path("build") / "mypyc"),
            group_name=_build.GROUP_NAME,
        )
    except (Exception, SystemExit) as exc:
        if REQUIRED:
            raise
        _say(f"mypyc failed ({exc!r}): pure Python")
        return []
    for extension in extensions:
        extension.optional = not REQUIRED
    return list(extensions)


class BuildExtWithManifest(build_ext):
    """build_ext that records the compiled sources' hashes, so a later edit is detected as stale."""

    def run(self) -> None:
        if self.inplace:
            for stray in _build.stray_extensions(SRC):
                stray.unlink()
                _say(f"removed {stray.relative_to(HERE)}: its module left the hot set")
        super().run()
        if not self.extensions:
            return
        package = SRC / "rocketq" if self.inplace else Path(self.build_lib) / "rocketq"
        package.mkdir(parents=True, exist_ok=True)
        _say(f"wrote {_build.write_manifest(package, SRC, digests=DIGESTS or None)}")


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExtWithManifest})
