"""Loading streamlet's C extensions, and refusing one built from another version of its source.

An editable install builds `streamlet._record_batch` and `streamlet._record_encoder` once; a `git pull` that changes
their C source leaves the old build in place until the next `pip install -e .`. An old build can lack a function
the Python side now calls, or take other arguments, and would crash every worker. So `setup.py` compiles the SHA-256
of the C source into each module (`SOURCE_SHA256`), and a module whose hash is not that of the source beside it is
not used: streamlet warns once and takes the pure-Python path (aiokafka's decoder and batch builder), which is
slower but the same. An install without the sources (a wheel) has nothing to compare with and uses its build.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
from pathlib import Path
from types import ModuleType

log = logging.getLogger("streamlet.native")

#: where `setup.py` finds the C sources, relative to the `streamlet` package
NATIVE_SOURCES = Path(__file__).resolve().parent.parent / "_native"


def source_sha256(source: Path) -> str:
    """The hash `setup.py` compiles into the module built from `source`."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


@functools.cache
def load_native(name: str, source: str, *, sources: Path = NATIVE_SOURCES) -> ModuleType | None:
    """The C extension `name` (e.g. "streamlet._record_batch") if it is built from `sources / source`; None when
    it is not built (no C compiler at install) or was built from another version of that source. Cached: the two
    modules that use the decoder hash its source and warn once between them."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    path = sources / source
    if not path.is_file():
        return module  # installed without its sources: nothing to compare with
    built = getattr(module, "SOURCE_SHA256", None)
    if built != source_sha256(path):
        log.warning(
            "%s was built from another version of %s (%s): using the pure-Python path instead, which is slower; "
            "`pip install -e .` rebuilds it",
            name,
            path,
            "built before its source hash was recorded" if built is None else f"built from {str(built)[:12]}",
        )
        return None
    return module
