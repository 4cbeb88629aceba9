"""The semantics oracle's generated corpora: cases drawn once and committed (tests/support/drawn_cases.py), run
on Kafka Streams' TopologyTestDriver in batches and on streamlet's, compared record for record and by describe().

Each generated test used to draw its cases with `@given` as it ran them: about 20 ms of Hypothesis per case, a
quarter of the test's CPU, and one JVM round trip per case. Now the JVM answers a batch while this process runs the
previous one on streamlet. A difference is reported with the case's JSON (the smallest failing cases first, as
Hypothesis would have shrunk towards them); `echo '<case>' | java -jar oracle/semantics/target/...jar` replays it.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from streamlet.errors import TopologyError
from streamlet.kafka.broker import KAFKA_VERSION
from tests.support import dsl_spec, global_table_cases, semantics_cases, stream_join_cases, table_cases
from tests.support.drawn_cases import Case, cached_cases, distinct_cases, dump
from tests.support.semantics_cases import build_topology, run_streamlet
from tests.support.semantics_oracle import SemanticsOracle

#: generated cases per corpus; ~1,000 take about 40 s on a 2-core machine
GENERATED_CASES = int(os.environ.get("STREAMLET_SEMANTICS_CASES", "1000"))
#: cases per JVM round trip: the JVM's batch is bounded by the oracle's timeout
BATCH = 50
#: Kafka Streams' refusals to build a drawn program -> streamlet's, whose optimizer is a copy of Kafka's. KAFKA-9739's
#: error (still in 4.4.0): merge.repartition.topics, two repartitions below one key changer through one child of it
BUILD_REFUSALS = {"Found a null keyChangingChild node for": "found no child of the key changer"}
#: the generated tests' corpora (tests/oracle/semantics/test_*_oracle.py)
CORPORA = ("driver", "global-tables", "stream-joins", "tables")
#: the modules the strategies are made of
STRATEGY_SOURCES = [
    Path(m.__file__) for m in (semantics_cases, stream_join_cases, table_cases, global_table_cases, dsl_spec)
]


def corpus(name: str, strategy: st.SearchStrategy[Case]) -> list[Case]:
    """GENERATED_CASES distinct cases of `strategy`, the committed corpus (drawn again when the strategies' modules
    change: the key hashes them, not this module, whose comparison code the cases do not depend on)."""
    return cached_cases(corpus_name(name), STRATEGY_SOURCES, lambda: distinct_cases(strategy, GENERATED_CASES))


def corpus_name(name: str) -> str:
    return f"semantics-{name}-{GENERATED_CASES}"


def difference(case: Case, expected: dict[str, Any]) -> str | None:
    """How streamlet's run of `case` differs from Kafka Streams' output `expected`; None if it does not."""
    if "error" in expected:
        return refusal_difference(case, expected["error"])
    describe = str(build_topology(case).describe())
    if describe != expected["describe"]:
        return f"describe() differs:\nkafka streams:\n{expected['describe']}\nstreamlet:\n{describe}"
    actual = run_streamlet(case)
    rest = {key: value for key, value in expected.items() if key != "describe"}
    if actual == rest:
        return None
    wanted, got = rest.get("topics", {}), actual["topics"]
    lines = [f"kafka streams: {json.dumps(rest)}", f"streamlet:     {json.dumps(actual)}"] if wanted == got else []
    for topic in sorted(set(wanted) | set(got)):
        if wanted.get(topic) != got.get(topic):
            lines.append(f"{topic}:\n  kafka streams: {wanted.get(topic)}\n  streamlet:     {got.get(topic)}")
    return "\n".join(lines)


def refusal_difference(case: Case, error: str) -> str | None:
    """None if streamlet refuses, as it must, a program that Kafka Streams refuses to build (BUILD_REFUSALS)."""
    refusal = next((ours for theirs, ours in BUILD_REFUSALS.items() if theirs in error), None)
    if refusal is None:
        return f"the oracle rejected the case: {error}"
    try:
        build_topology(case)
    except TopologyError as exc:
        if refusal in str(exc):
            return None
        return f"Kafka Streams refused to build the program ({error}), streamlet for another reason: {exc}"
    return f"Kafka Streams refused to build the program, streamlet built it: {error}"


def check_corpus(oracle: SemanticsOracle, cases: list[Case]) -> None:
    """Every case on both drivers; fails with the smallest differing cases."""
    batches = [cases[i : i + BATCH] for i in range(0, len(cases), BATCH)]
    problems: list[tuple[str, str]] = []
    with ThreadPoolExecutor(1) as jvm:  # the JVM answers the next batches while this thread runs one on streamlet
        answers = [jvm.submit(oracle.run_many, batch) for batch in batches]
        for batch, answered in zip(batches, answers, strict=True):
            for case, output in zip(batch, answered.result(), strict=True):
                problem = difference(case, output)
                if problem is not None:
                    problems.append((dump(case), problem))
    if problems:
        problems.sort(key=lambda p: len(p[0]))
        shown = "\n\n".join(f"case: {case}\n{problem}" for case, problem in problems[:3])
        pytest.fail(
            f"{len(problems)} of {len(cases)} generated cases differ from Kafka Streams {KAFKA_VERSION}:\n\n{shown}",
            pytrace=False,
        )
