"""One JVM running Kafka Streams' assignors (``oracle/``) for the whole test session."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.oracle import Oracle, OracleError, build_oracle
from tests.support.oracle_corpus import generated_corpus


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    """Kafka Streams' assignors in one JVM; a case's ``assignor`` field picks one (default HATA)."""
    try:
        started = time.monotonic()
        jar = build_oracle()
        built_s = time.monotonic() - started
        instance = Oracle(jar)
    except OracleError as e:
        pytest.fail(f"cannot build/start the Kafka Streams assignor oracle: {e}", pytrace=False)
    if built_s > 1:
        print(f"\nassignor oracle built in {built_s:.1f}s")
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture(scope="session")
def corpus() -> list[dict[str, Any]]:
    """The generated contract cases (committed, tests/support/drawn_cases.py), shared by the differential tests."""
    return generated_corpus()
