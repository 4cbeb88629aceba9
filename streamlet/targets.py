"""Worker targets: `package.module:attribute` or `path/to/file.py:attribute`, as the CLI and the experiment runner
take them. Its own module, below both: the runner checks a scenario's target without importing the CLI."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

from streamlet.errors import StreamletError


def load_target(spec: str) -> Any:
    """`package.module:attribute` or `path/to/file.py:attribute` -> the object (an App, a Topology, or a callable
    returning one). A file is what Faust users and `python app.py` users have at hand, so both spellings work."""
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise StreamletError(
            f"expected MODULE:ATTRIBUTE or FILE.py:ATTRIBUTE (e.g. examples.wordcount.app:app or "
            f"examples/wordcount/app.py:app), got {spec!r}"
        )
    if module_name.endswith(".py") or os.sep in module_name:
        module = _module_from_file(module_name)
    else:
        sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise StreamletError(f"cannot import {module_name!r}: {exc}") from exc
    try:
        target = getattr(module, attribute)
    except AttributeError:
        raise StreamletError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return target


def _module_from_file(path: str) -> Any:
    """Import a Python file as a module named after it, with its directory on sys.path (for its own imports)."""
    file = os.path.abspath(path)
    if not os.path.isfile(file):
        raise StreamletError(f"no such file: {path!r} (a worker target is MODULE:ATTRIBUTE or FILE.py:ATTRIBUTE)")
    name = os.path.splitext(os.path.basename(file))[0]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise StreamletError(f"cannot load {path!r} as a Python module (a worker target file must end in .py)")
    sys.path.insert(0, os.path.dirname(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        del sys.modules[name]
        raise StreamletError(f"cannot import {path!r}: {exc}") from exc
    return module
