"""Which build of rocketq runs: the mypyc-compiled hot set, or pure Python (and why).

rocketq is one typed Python codebase. ``setup.py`` may compile a chosen *hot set* of its modules with
mypyc (``HOT_MODULES`` below is the one list both the build and this module read); everything else is
always interpreted. This module decides, once per process and before any hot module is imported
(``rocketq/__init__.py`` calls :func:`activate` first thing), which build the process runs.

Invariants:

- **All or nothing.** mypyc compiles the hot set into one shared library (``rocketq__mypyc``) whose
  modules call each other's C functions directly, so a compiled module next to an interpreted one of the
  same set would read uninitialised native state. Either every hot module loads from its extension, or
  every hot module loads from its ``.py``: the compiled build is chosen only when the shared library and
  an extension for every hot module are present and the manifest the build wrote matches the sources.
- **No stale extension shadows an edit.** The build records a SHA-256 of each hot module's source in
  ``_compiled_manifest.json``; an edited source (or a missing manifest) selects pure Python, with the
  reason, until the extensions are rebuilt (``make`` rebuilds them).
- ``ROCKETQ_PURE_PYTHON=1`` forces pure Python even when a valid compiled build is present.

When pure Python is chosen while extensions are present, a meta-path finder placed first on
``sys.meta_path`` loads each hot module from its ``.py`` file (the default finders prefer extensions).
This module imports only the standard library: ``setup.py`` loads it by path, without the package.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: Environment variable forcing the interpreted build (any value but "", "0", "false", "no").
PURE_ENV = "ROCKETQ_PURE_PYTHON"
#: The mypyc group name; the shared library is the top-level extension ``rocketq__mypyc``.
GROUP_NAME = "rocketq"
SHARED_LIB = f"{GROUP_NAME}__mypyc"
#: Written next to the package's ``__init__`` by the build: the hot modules and their source hashes.
MANIFEST_NAME = "_compiled_manifest.json"

#: The modules mypyc compiles, chosen by profile (broker send/pull path, frame and record codecs, the
#: message codec, the store's append/read path and its SYNC_FLUSH group commit, the client's send
#: preparation, queue choice and receive path, the producer's auto-batch accumulator and its
#: per-message futures). Header classes (headers*.py) and the reflective body codecs stay
#: interpreted: they rely on dataclass field metadata mypyc does not keep.
HOT_MODULES: tuple[str, ...] = (
    "rocketq.protocol.frame",
    "rocketq.protocol.message_id",
    "rocketq.protocol.java_properties",
    "rocketq.protocol.java",
    "rocketq.protocol.message",
    "rocketq.remoting.helper",
    "rocketq.remoting.server",
    "rocketq.remoting.client",
    "rocketq.remoting.connection",
    "rocketq.namesrv.namesrv",
    "rocketq.broker.processors.send",
    "rocketq.broker.processors.pull",
    "rocketq.broker.processors.reply",
    "rocketq.broker.long_polling",
    "rocketq.broker.stats",
    "rocketq.broker.store.commit_log",
    "rocketq.broker.store.consume_queue",
    "rocketq.broker.store.mapped_file",
    "rocketq.broker.store.message_store",
    "rocketq.broker.store.read_path",
    "rocketq.broker.store.message_ext_broker_inner",
    "rocketq.broker.store.index",
    "rocketq.broker.store.status",
    "rocketq.broker.store.flush_service",
    "rocketq.common.histogram",
    "rocketq.client.consumer.process_queue",
    "rocketq.client.consumer.consume_concurrently",
    "rocketq.client.consumer.listener",
    "rocketq.client.consumer.offset_store",
    "rocketq.client.consumer.stats",
    "rocketq.client.impl.pull_api_wrapper",
    "rocketq.client.consumer.push",
    "rocketq.client.send_prep",
    "rocketq.client.latency",
    "rocketq.client.batch_future",
    "rocketq.client.produce_accumulator",
)


def env_flag(value: str | None) -> bool:
    """An on/off environment variable's value: set and not "", "0", "false" or "no"."""
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def package_dir() -> Path:
    """The directory holding the ``rocketq`` package."""
    return Path(__file__).resolve().parent


def source_path(module: str, root: Path | None = None) -> Path:
    """The ``.py`` file of hot module *module* under the directory holding ``rocketq`` (*root*)."""
    base = package_dir().parent if root is None else root
    return base.joinpath(*module.split(".")).with_suffix(".py")


def _extension_path(stem: Path) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = stem.with_name(stem.name + suffix)
        if candidate.is_file():
            return candidate
    return None


def stray_extensions(root: Path, modules: Sequence[str] = HOT_MODULES) -> list[Path]:
    """Extension files under *root*'s ``rocketq`` package whose module is not in *modules*: left behind by
    an earlier build when a module leaves the hot set. The default finders prefer an extension to the
    ``.py`` next to it, so such a file would shadow its source in every build; the in-place build
    deletes them."""
    hot = {source_path(module, root).with_suffix("") for module in modules}
    # the longest suffix first: "frame.cpython-311-x86_64-linux-gnu.so" also ends with ".so"
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)
    strays: list[Path] = []
    for candidate in (root / "rocketq").rglob("*"):
        suffix = next((s for s in suffixes if candidate.name.endswith(s)), None)
        if suffix is not None and candidate.with_name(candidate.name[: -len(suffix)]) not in hot:
            strays.append(candidate)
    return sorted(strays)


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_digests(root: Path, modules: Sequence[str] = HOT_MODULES) -> dict[str, str]:
    """The hot modules' source hashes (sources under *root*), by module."""
    return {module: source_digest(source_path(module, root)) for module in modules}


def write_manifest(
    package: Path,
    root: Path,
    modules: Sequence[str] = HOT_MODULES,
    digests: Mapping[str, str] | None = None,
) -> Path:
    """Record the hot modules' source hashes in *package*'s manifest (the build). *digests* are
    the hashes taken before compiling began (the build passes them: a source edited while mypyc
    ran then reads as stale, never as built); without them the sources under *root* are hashed now."""
    manifest = dict(digests) if digests is not None else source_digests(root, modules)
    target = package / MANIFEST_NAME
    target.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return target


@dataclass(frozen=True)
class BuildState:
    """The build this process runs: ``compiled`` and, when pure, ``reason``; ``extensions_present``
    says whether compiled extensions exist on disk (a forced or stale fallback has them)."""

    compiled: bool
    reason: str
    extensions_present: bool

    def describe(self) -> str:
        """One line for ``rocketq --version`` and the benchmark report. Imports the hot set, so the
        line reports what actually loaded: the compiled build names the modules whose code comes from
        an extension."""
        for module in HOT_MODULES:
            importlib.import_module(module)
        compiled = loaded_compiled_modules()
        if self.compiled:
            return f"compiled with mypyc, {len(compiled)} of {len(HOT_MODULES)} hot modules: {', '.join(compiled)}"
        if compiled:  # all-or-nothing is violated: say so rather than hide it
            return f"MIXED: pure Python ({self.reason}) but compiled: {', '.join(compiled)}"
        return f"pure Python ({self.reason})"


def detect(environ: Mapping[str, str] | None = None, root: Path | None = None) -> BuildState:
    """Decide the build from the files on disk under *root* (the directory holding ``rocketq``,
    this package's by default) and the environment (no import side effects)."""
    env = os.environ if environ is None else environ
    root = package_dir().parent if root is None else root
    shared = _extension_path(root / SHARED_LIB)
    missing = [m for m in HOT_MODULES if _extension_path(source_path(m, root).with_suffix("")) is None]
    present = shared is not None or len(missing) < len(HOT_MODULES)
    if env_flag(env.get(PURE_ENV)):
        return BuildState(False, f"forced by {PURE_ENV}={env.get(PURE_ENV)}", present)
    if not present:
        return BuildState(False, "no compiled extensions built", False)
    if shared is None or missing:
        what = SHARED_LIB if shared is None else ", ".join(missing)
        return BuildState(False, f"incomplete compiled build, missing: {what}", True)
    manifest_file = root / "rocketq" / MANIFEST_NAME
    try:
        recorded = json.loads(manifest_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return BuildState(False, f"compiled build has no readable {MANIFEST_NAME}", True)
    stale = [
        m
        for m in HOT_MODULES
        if not source_path(m, root).is_file() or recorded.get(m) != source_digest(source_path(m, root))
    ]
    if stale:
        return BuildState(False, f"stale compiled build, sources changed since: {', '.join(stale)}", True)
    return BuildState(True, "", True)


class _PureSourceFinder(importlib.abc.MetaPathFinder):
    """Loads every hot module from its ``.py`` file, ahead of the extension the default finder prefers."""

    def __init__(self, modules: Sequence[str]) -> None:
        self._modules = frozenset(modules)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._modules:
            return None
        source = source_path(fullname)
        return importlib.util.spec_from_file_location(
            fullname, source, loader=importlib.machinery.SourceFileLoader(fullname, str(source))
        )


_state: BuildState | None = None


def activate() -> BuildState:
    """Decide this process's build once; when pure Python is chosen over present extensions, install
    the finder that loads the hot modules from source. Called by ``rocketq/__init__.py``."""
    global _state
    if _state is None:
        state = detect()
        early = [m for m in HOT_MODULES if m in sys.modules]
        if early:  # cannot happen through ``import rocketq``; guards an unusual embedding
            raise ImportError(f"rocketq hot modules imported before rocketq itself: {early}")
        if not state.compiled and state.extensions_present:
            sys.meta_path.insert(0, _PureSourceFinder(HOT_MODULES))
        _state = state
    return _state


def state() -> BuildState:
    """The build this process runs (decided by :func:`activate`)."""
    return activate()


def loaded_compiled_modules() -> list[str]:
    """The hot modules imported so far whose code comes from an extension (short names)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return [
        m.removeprefix("rocketq.")
        for m in HOT_MODULES
        if m in sys.modules and str(getattr(sys.modules[m], "__file__", "")).endswith(suffixes)
    ]
