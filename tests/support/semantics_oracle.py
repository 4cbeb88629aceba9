"""Kafka Streams' own TopologyTestDriver as an oracle (the Maven project in ``oracle/semantics``).

``SemanticsOracle()`` builds the jar once (reused while newer than its sources) and keeps one JVM that answers
cases (tests/support/semantics_cases.py) one JSON line at a time, as the assignor oracle does.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.oracle import REPO_ROOT, Oracle, OracleError, _require_tool

PROJECT = REPO_ROOT / "oracle" / "semantics"
POM = PROJECT / "pom.xml"
JAR = PROJECT / "target" / "streamlet-semantics-oracle.jar"
LIB_DIR = PROJECT / "target" / "lib"


def _is_fresh() -> bool:
    if not JAR.is_file() or not any(LIB_DIR.glob("kafka-streams-test-utils-*.jar")):
        return False
    sources = [POM, *(p for p in (PROJECT / "src").rglob("*") if p.is_file())]
    return all(src.stat().st_mtime <= JAR.stat().st_mtime for src in sources)


def build_semantics_oracle() -> Path:
    """Build the jar with Maven (offline first, then online) unless it is up to date; return its path."""
    _require_tool("java")
    if _is_fresh():
        return JAR
    mvn = _require_tool("mvn")
    (PROJECT / "target").mkdir(parents=True, exist_ok=True)
    with open(PROJECT / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_fresh():
            return JAR
        shutil.rmtree(LIB_DIR, ignore_errors=True)  # Maven only adds jars: an old Kafka's would stay on the path
        outputs = []
        for offline in (True, False):
            cmd = [mvn, "-q", "-B", *(["-o"] if offline else []), "-f", str(POM), "package"]
            proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
            if proc.returncode == 0 and JAR.is_file():
                JAR.touch()
                return JAR
            outputs.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        raise OracleError("building the semantics oracle failed:\n" + "\n".join(outputs)[-8000:])


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
