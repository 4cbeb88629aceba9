"""The one place that says which aiokafka streamlet reaches into.

streamlet relies on aiokafka's private parts where it must; the main ones: the group consumer changes its manual
assignment in place (`kafka/group/consumer.py`), the restore consumer decodes record batches into columns
(`kafka/record_blocks.py`), the main consumer takes decoded batches instead of aiokafka's per-record
`ConsumerRecord` (`runtime/fetched_records.py`), the record collector hands the producer batches it encoded
itself (`kafka/produce_batches.py`), and the producer's sender refuses what a frozen process handed it before the
freeze (`kafka/freeze_gate.py`). Each is written against the aiokafka minor version pinned in pyproject.toml and
asks here (`require`) before it touches anything.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

import aiokafka

SUPPORTED_AIOKAFKA = "0.14."


def version_supported() -> bool:
    return str(getattr(aiokafka, "__version__", "")).startswith(SUPPORTED_AIOKAFKA)


def require(feature: str, sources: Iterable[tuple[Callable[..., object], Iterable[str]]]) -> None:
    """Fail at import, naming what is missing, unless this aiokafka is the pinned one and each function's source
    still holds the attributes `feature` uses."""
    missing = [
        f"{fn.__qualname__}: {name}" for fn, names in sources for name in names if name not in inspect.getsource(fn)
    ]
    if not version_supported() or missing:
        raise ImportError(
            f"{feature} needs aiokafka {SUPPORTED_AIOKAFKA}x (installed: {getattr(aiokafka, '__version__', '?')}; "
            f"missing: {', '.join(missing) or 'nothing'}): reinstall streamlet's pinned dependencies"
        )
