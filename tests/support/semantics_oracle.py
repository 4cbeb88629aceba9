"""Kafka Streams' own TopologyTestDriver as an oracle (the Maven project in ``oracle/semantics``).

``SemanticsOracle()`` builds the jar once (reused while newer than its sources) and keeps one JVM that answers
cases (tests/support/semantics_cases.py) one JSON line at a time, as the assignor oracle does.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.oracle import REPO_ROOT, Oracle, build_maven_jar

PROJECT = REPO_ROOT / "oracle" / "semantics"
JAR = PROJECT / "target" / "streamlet-semantics-oracle.jar"
LIB_DIR = PROJECT / "target" / "lib"


def build_semantics_oracle() -> Path:
    """The semantics oracle's jar, built if needed (`build_maven_jar`); return its path."""
    return build_maven_jar(PROJECT, JAR, "semantics oracle")


def kafka_streams_classpath() -> str | None:
    """`$STREAMLET_KAFKA_STREAMS_CLASSPATH`, else the jars of the built oracle: kafka-streams (KAFKA_VERSION) and its
    dependencies, RocksDB's too (a topology's changelog topics are only known once Kafka built its stores)."""
    configured = os.environ.get("STREAMLET_KAFKA_STREAMS_CLASSPATH")
    if configured:
        return configured
    build_semantics_oracle()
    jars = sorted(LIB_DIR.glob("*.jar"))
    if not any(j.name.startswith("kafka-streams-") for j in jars):
        return None
    return os.pathsep.join(str(j) for j in jars)


class SemanticsOracle(Oracle):
    """One JVM running ``io.streamlet.semantics.SemanticsOracle``: ``run(case)`` returns its output."""

    def __init__(self, timeout_s: float = 120.0) -> None:
        super().__init__(jar=build_semantics_oracle(), timeout_s=timeout_s)
