"""tests/support/ast_parse_guard.py: CPython gh-106905 reproduced, and the guard the test processes install."""

from __future__ import annotations

import ast
import asyncio
import gc
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.ast_parse_guard import FIXED_IN

pytestmark = pytest.mark.skipif(sys.version_info >= FIXED_IN, reason="CPython fixed gh-106905 in 3.11.8")


def _parse_while_a_failed_future_is_collected(parse: Callable[[str], Any], source: str) -> None:
    """A future whose exception nobody retrieved, in a reference cycle, and a collection due inside the parse:
    collecting it calls the loop's exception handler, which formats the traceback as logging would."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda _loop, context: traceback.format_exception(context["exception"]))
    gc.collect()
    future = loop.create_future()
    try:
        {}["missing"]
    except KeyError as exc:
        future.set_exception(exc)
    cycle: list[Any] = [future]
    cycle.append(cycle)
    del future, cycle
    threshold = gc.get_threshold()
    gc.set_threshold(gc.get_count()[0] + 50)  # due once the parse builds its nodes
    try:
        parse(source)
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
        loop.close()


def test_a_collection_inside_a_parse_breaks_it_unless_the_collector_is_paused() -> None:
    source = Path(ast.__file__).read_text()
    unguarded = ast.parse.__wrapped__  # type: ignore[attr-defined]  # tests/conftest.py installed the guard
    with pytest.raises(SystemError, match="AST constructor recursion depth mismatch"):
        _parse_while_a_failed_future_is_collected(unguarded, source)
    _parse_while_a_failed_future_is_collected(ast.parse, source)
