"""The modules the install compiles with mypyc, and loading their source instead when a build must not be used.

`setup.py` compiles `COMPILED_MODULES` into extension modules beside their sources (mypyc: the same code, typed,
as C; the per-record paths run about a fifth faster) and records each source's SHA-256 in `MANIFEST`. Python
imports an extension before a `.py` of the same name, so two cases would silently run the wrong code:
- the source changed after the build (a `git pull` or an edit in an editable install): the old build would run;
- a test or a user wants the pure-Python modules (`STREAMLET_PURE_PYTHON=1`; CI runs the unit tier so too).
In both, `install()` puts a finder first on `sys.meta_path` that loads those modules from their `.py` files.
A stale build also warns once: `pip install -e .` rebuilds it.

No module of `streamlet` may be imported before `install()`: `streamlet/__init__.py` calls it first.

mypyc ignores `raise ... from ...`: a compiled module assigns the error's `__cause__` before raising it
(tests/unit/test_compiled.py checks). Node closures name themselves through `runtime.failing_node.raised_in`,
not through frame locals, which compiled functions lack.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

#: modules on the per-record path that mypyc compiles (setup.py reads this tuple)
COMPILED_MODULES = (
    "streamlet.state.timestamped",
    "streamlet.state.record_cache",
    "streamlet.state.caching_store",
    "streamlet.runtime.partitioner",
    "streamlet.runtime.record_collector",
    "streamlet.runtime.failing_node",
    "streamlet.runtime.stream_processors",
    "streamlet.runtime.stream_aggregation",
    "streamlet.runtime.processor_graph",
    "streamlet.kafka.serialization",
)
#: mypyc's shared library of the group: every compiled module needs it
GROUP = "streamlet._mypyc"
#: written by setup.py beside the package's modules: {module: SHA-256 of the source it was compiled from}
MANIFEST = "_compiled_sources.json"
PURE_PYTHON_ENV = "STREAMLET_PURE_PYTHON"

PACKAGE_DIR = Path(__file__).resolve().parent
log = logging.getLogger("streamlet.compiled")


def source_path(module: str, package_dir: Path = PACKAGE_DIR) -> Path:
    return package_dir.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def built(module: str, package_dir: Path = PACKAGE_DIR) -> bool:
    """Whether an extension module of that name is beside its source."""
    base = package_dir.joinpath(*module.split(".")[1:])
    return any(base.with_name(base.name + suffix).exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def from_source(
    environ: Mapping[str, str], package_dir: Path = PACKAGE_DIR, modules: Sequence[str] = COMPILED_MODULES
) -> tuple[dict[str, Path], list[str]]:
    """(modules to load from their source: module -> .py, why the build is not used). Modules with no build
    need nothing: Python finds their source anyway."""
    present = [m for m in modules if built(m, package_dir)]
    if not present:
        return {}, []
    if environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return {m: source_path(m, package_dir) for m in present}, []
    try:
        manifest = json.loads((package_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        manifest = {}
    group_built = built(GROUP + "__mypyc", package_dir)
    reasons: list[str] = []
    for module in present:
        path = source_path(module, package_dir)
        if not group_built:
            reasons.append(f"{module}: its shared library {GROUP}__mypyc is not built")
        elif module not in manifest:
            reasons.append(f"{module}: built without a recorded source hash")
        elif manifest[module] != source_sha256(path):
            reasons.append(f"{module}: built from another version of {path.name}")
    # all or none: compiled modules of one group call each other natively, past a module loaded from source
    return ({m: source_path(m, package_dir) for m in present} if reasons else {}), reasons


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the given modules as their `.py` files, ahead of the path finder (which prefers extensions)."""

    def __init__(self, sources: Mapping[str, Path]) -> None:
        self.sources = dict(sources)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


def install(environ: Mapping[str, str] = os.environ) -> None:
    """Load from source what must not run compiled (see the module's docstring); idempotent."""
    if any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        return
    sources, reasons = from_source(environ)
    if reasons:
        log.warning(
            "compiled modules not used, their pure-Python source is (slower, the same behaviour); "
            "`pip install -e .` rebuilds them: %s",
            "; ".join(reasons),
        )
    if sources:
        sys.meta_path.insert(0, _SourceFinder(sources))


if __name__ == "__main__":  # scripts/_venv.sh: the sources whose change needs a rebuild
    print(*(source_path(m) for m in COMPILED_MODULES))
