"""`ast.parse` with the garbage collector paused, for the test processes on Python before 3.11.8 (CPython gh-106905).

On 3.11.7 a collection that runs inside `ast.parse` can call a finalizer that parses too: an asyncio future whose
exception was never retrieved logs it on collection, and formatting its traceback parses the failing line (3.11's
carets). The nested parse corrupts the outer one's recursion count, which fails with "SystemError: AST constructor
recursion depth mismatch". Tests that leave such futures behind (aiokafka keeps a failed batch's drain waiter
unretrieved once its sender was fenced) then fail a later, unrelated test that parses source: pytest's assertion
rewriting, or the unit tests that read streamlet's sources. With the collector paused no finalizer runs inside a
parse; the garbage is collected after it.
"""

from __future__ import annotations

import ast
import functools
import gc
import sys
from typing import Any

FIXED_IN = (3, 11, 8)


def install() -> None:
    """Idempotent; nothing on a Python with the fix."""
    if sys.version_info >= FIXED_IN or getattr(ast.parse, "gc_paused", False):
        return
    parse = ast.parse

    @functools.wraps(parse)
    def parse_with_gc_paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return parse(*args, **kwargs)
        gc.disable()
        try:
            return parse(*args, **kwargs)
        finally:
            gc.enable()

    parse_with_gc_paused.gc_paused = True  # type: ignore[attr-defined]
    ast.parse = parse_with_gc_paused
