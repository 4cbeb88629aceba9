"""Differential test: random DSL programs described by streamlet and by the real Kafka Streams jar.

Runs only where `java`/`javac` and kafka-streams jars are available: `$STREAMLET_KAFKA_STREAMS_CLASSPATH`
or the jars Maven copies to `oracle/target/lib` (skipped otherwise).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from streamlet.topology import Branched, StreamsBuilder, Topology
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindows
from tests.oracle.topology.foreign_key_join_programs import foreign_key_join_program
from tests.oracle.topology.global_table_programs import GlobalTablePrograms
from tests.oracle.topology.optimization_programs import PROGRAMS as OPTIMIZATION_PROGRAMS
from tests.oracle.topology.stream_join_programs import stream_join_step
from tests.oracle.topology.table_programs import TablePrograms
from tests.support.jvm import SHORT_LIVED, javac_options
from tests.support.semantics_oracle import kafka_streams_classpath

pytestmark = pytest.mark.oracle

REPO = Path(__file__).resolve().parents[3]


def _program(rng: random.Random, stream_joins: bool = False) -> tuple[list[str], list[str]]:
    """Equivalent Java and Python DSL statements for one random topology (`stream_joins`: with KStream-KStream
    joins, tests/oracle/topology/stream_join_programs.py)."""
    table_ops = TablePrograms()
    global_table_ops = GlobalTablePrograms()
    java: list[str] = []
    py: list[str] = []
    streams: list[str] = []
    grouped: list[str] = []
    tables: list[str] = []
    counter = {"topic": 0, "name": 0, "store": 0}

    def topic() -> str:
        counter["topic"] += 1
        return f"t{counter['topic']}"

    def maybe_name(prefix: str) -> str | None:
        if rng.random() < 0.2:
            counter["name"] += 1
            return f"{prefix}{counter['name']}{rng.choice(['a', 'Z', '_x', '-q'])}"
        return None

    def new_stream() -> None:
        var = f"s{len(streams)}"
        topics = [topic() for _ in range(rng.randint(1, 3))]
        name = maybe_name("src")
        java_topics = "Arrays.asList(" + ", ".join(f'"{t}"' for t in topics) + ")"
        if name:
            java.append(f'KStream<String, String> {var} = b.stream({java_topics}, Consumed.as("{name}"));')
            py.append(f"{var} = b.stream({topics!r}, name={name!r})")
        else:
            java.append(f"KStream<String, String> {var} = b.stream({java_topics});")
            py.append(f"{var} = b.stream({topics!r})")
        streams.append(var)

    new_stream()
    for _ in range(rng.randint(1, 14)):
        roll = rng.random()
        if roll < 0.08:
            new_stream()
        elif stream_joins and rng.random() < 0.25:
            stream_join_step(rng, java, py, streams, maybe_name)
        elif rng.random() < 0.25:  # tables and joins: tests/oracle/topology/table_programs.py
            table_ops.step(rng, java, py, streams, tables, topic, maybe_name)
        elif rng.random() < 0.15:  # global tables and their joins: tests/oracle/topology/global_table_programs.py
            global_table_ops.step(rng, java, py, streams, topic, maybe_name)
        elif grouped and roll < 0.25:
            g, var = rng.choice(grouped), f"k{len(tables)}"
            sessions = False
            windowing = rng.random()
            if windowing < 0.15:  # sessions: named like the other aggregations, aggregate takes a merger
                w, sessions = f"w{len(tables)}", True
                gap, grace = rng.choice([1, 10, 60_000]), rng.choice([None, 0, 1000])
                if grace is None:
                    jwin = f"SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis({gap}))"
                    pwin = f"SessionWindows.of_inactivity_gap_with_no_grace({gap})"
                else:
                    jwin = (
                        f"SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis({gap}), Duration.ofMillis({grace}))"
                    )
                    pwin = f"SessionWindows.of_inactivity_gap_and_grace({gap}, {grace})"
                java.append(f"SessionWindowedKStream {w} = {g}.windowedBy({jwin});")
                py.append(f"{w} = {g}.windowed_by({pwin})")
                g = w
            elif windowing < 0.3:  # sliding windows: a TimeWindowedKStream, as in Kafka
                w = f"w{len(tables)}"
                difference, grace = rng.choice([1, 10, 60_000]), rng.choice([None, 0, 1000])
                if grace is None:
                    jwin = f"SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis({difference}))"
                    pwin = f"SlidingWindows.of_time_difference_with_no_grace({difference})"
                else:
                    jwin = (
                        f"SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis({difference}), "
                        f"Duration.ofMillis({grace}))"
                    )
                    pwin = f"SlidingWindows.of_time_difference_and_grace({difference}, {grace})"
                java.append(f"TimeWindowedKStream {w} = {g}.windowedBy({jwin});")
                py.append(f"{w} = {g}.windowed_by({pwin})")
                g = w
            elif windowing < 0.5:  # a windowed aggregation: windowedBy names nothing, the aggregation as usual
                w = f"w{len(tables)}"
                size = rng.choice([1, 10, 60_000])
                jwin, pwin = (
                    f"TimeWindows.ofSizeWithNoGrace(Duration.ofMillis({size}))",
                    f"TimeWindows.of_size_with_no_grace({size})",
                )
                if rng.random() < 0.5:
                    grace = rng.choice([0, 5, 1000])
                    jwin = f"TimeWindows.ofSizeAndGrace(Duration.ofMillis({size}), Duration.ofMillis({grace}))"
                    pwin = f"TimeWindows.of_size_and_grace({size}, {grace})"
                if rng.random() < 0.4:
                    advance = rng.randint(1, size)
                    jwin += f".advanceBy(Duration.ofMillis({advance}))"
                    pwin += f".advance_by({advance})"
                java.append(f"TimeWindowedKStream {w} = {g}.windowedBy({jwin});")
                py.append(f"{w} = {g}.windowed_by({pwin})")
                g = w
            name = maybe_name("agg")
            store = None
            if rng.random() < 0.4:
                counter["store"] += 1
                store = f"store{counter['store']}"
            jnamed = f'Named.as("{name}"), ' if name else ""
            pnamed = f", name={name!r}" if name else ""
            kind = rng.choice(["count", "reduce", "aggregate"])
            if kind == "count":
                if store:
                    java.append(f'KTable {var} = {g}.count({jnamed}Materialized.as("{store}"));')
                    py.append(f"{var} = {g}.count({store!r}{pnamed})")
                else:
                    java.append(f"KTable {var} = {g}.count({jnamed.rstrip(', ')});")
                    py.append(f"{var} = {g}.count({pnamed.lstrip(', ')})")
            elif kind == "reduce":
                materialized = f'Materialized.as("{store}")' if store else "Materialized.with(null, null)"
                java.append(f"KTable {var} = {g}.reduce((x, y) -> y, {jnamed}{materialized});")
                py.append(f"{var} = {g}.reduce(lambda x, y: y{', ' + repr(store) if store else ''}{pnamed})")
            else:
                materialized = f'Materialized.as("{store}")' if store else "Materialized.with(null, null)"
                jmerger, pmerger = ("(k, a1, a2) -> a1, ", "lambda k, a1, a2: a1, ") if sessions else ("", "")
                java.append(f'KTable {var} = {g}.aggregate(() -> "", (k, v, a) -> a, {jmerger}{jnamed}{materialized});')
                py.append(
                    f"{var} = {g}.aggregate(lambda: '', lambda k, v, a: a, {pmerger}"
                    f"{repr(store) + ', ' if store else ''}{pnamed.lstrip(', ')})"
                )
            tables.append(var)
        elif tables and roll < 0.35:
            table, var = rng.choice(tables), f"s{len(streams)}"
            name = maybe_name("ts")
            java.append(f"KStream {var} = {table}.toStream({f'Named.as({chr(34)}{name}{chr(34)})' if name else ''});")
            py.append(f"{var} = {table}.to_stream({f'name={name!r}' if name else ''})")
            streams.append(var)
        else:
            s, var = rng.choice(streams), f"s{len(streams)}"
            op = rng.choice(
                [
                    "filter",
                    "filterNot",
                    "mapValues",
                    "flatMapValues",
                    "map",
                    "flatMap",
                    "selectKey",
                    "peek",
                    "foreach",
                    "to",
                    "to",
                    "groupBy",
                    "groupByKey",
                ]
            )
            name = maybe_name(op[:3])
            jn = [f'Named.as("{name}")'] if name else []
            pn = [f"name={name!r}"] if name else []
            simple = {
                "filter": ("filter", "(k, v) -> true", "filter", "lambda k, v: True"),
                "filterNot": ("filterNot", "(k, v) -> true", "filter_not", "lambda k, v: True"),
                "mapValues": ("mapValues", "v -> v", "map_values", "lambda v: v"),
                "flatMapValues": ("flatMapValues", "v -> List.of(v)", "flat_map_values", "lambda v: [v]"),
                "map": ("map", "(k, v) -> KeyValue.pair(v, k)", "map", "lambda k, v: (v, k)"),
                "flatMap": ("flatMap", "(k, v) -> List.of(KeyValue.pair(v, k))", "flat_map", "lambda k, v: [(v, k)]"),
                "selectKey": ("selectKey", "(k, v) -> v", "select_key", "lambda k, v: v"),
                "peek": ("peek", "(k, v) -> {}", "peek", "lambda k, v: None"),
            }
            if op in simple:
                jop, jfn, pop, pfn = simple[op]
                java.append(f"KStream {var} = {s}.{jop}({', '.join([jfn, *jn])});")
                py.append(f"{var} = {s}.{pop}({', '.join([pfn, *pn])})")
                streams.append(var)
            elif op == "foreach":
                java.append(f"{s}.foreach({', '.join(['(k, v) -> {}', *jn])});")
                py.append(f"{s}.foreach({', '.join(['lambda k, v: None', *pn])})")
            elif op == "to":
                t = topic()
                java.append(f'{s}.to("{t}"{f", Produced.as({chr(34)}{name}{chr(34)})" if name else ""});')
                py.append(f"{s}.to({t!r}{f', name={name!r}' if name else ''})")
            elif op == "groupBy":
                g = f"g{len(grouped)}"
                grouped_as = f', Grouped.as("{name}")' if name else ""
                java.append(f"KGroupedStream {g} = {s}.groupBy((k, v) -> v{grouped_as});")
                py.append(f"{g} = {s}.group_by(lambda k, v: v{f', name={name!r}' if name else ''})")
                grouped.append(g)
            else:
                g = f"g{len(grouped)}"
                java.append(
                    f"KGroupedStream {g} = {s}.groupByKey({f'Grouped.as({chr(34)}{name}{chr(34)})' if name else ''});"
                )
                py.append(f"{g} = {s}.group_by_key({f'name={name!r}' if name else ''})")
                grouped.append(g)
    return java, py


#: the `topology.optimization` values the random programs draw from (the rules streamlet implements)
OPTIMIZATIONS = (
    "none",
    "reuse.ktable.source.topics",
    "merge.repartition.topics",
    "merge.repartition.topics,reuse.ktable.source.topics",
    "single.store.self.join",
    "all",
)


def _python_describe(statements: list[str], optimization: str = "none") -> str:
    namespace: dict[str, object] = {
        "b": StreamsBuilder(),
        "TimeWindows": TimeWindows,
        "SessionWindows": SessionWindows,
        "SlidingWindows": SlidingWindows,
        "Branched": Branched,
        "JoinWindows": JoinWindows,
        "StreamJoined": StreamJoined,
        "Suppressed": Suppressed,
        "BufferConfig": BufferConfig,
    }
    with contextlib.redirect_stdout(io.StringIO()):
        for statement in statements:
            exec(statement, namespace)  # noqa: S102 - generated test code
    topology = namespace["b"].build(optimization)  # type: ignore[attr-defined]
    return str(topology.describe()) + _python_changelogs(topology)


def _python_changelogs(topology: Topology) -> str:
    """Per sub-topology (in id order), the changelogs to create and all of them, as `_JAVA_CHANGELOGS` prints."""
    lines = []
    for sub in topology.subtopologies:
        changelogs = sub.changelog_topics()
        created = sorted(f"{APP}-{t}" for s, t in changelogs.items() if s not in sub.source_changelogs)
        every = sorted(t if s in sub.source_changelogs else f"{APP}-{t}" for s, t in changelogs.items())
        lines.append(f"changelogs [{', '.join(created)}] of [{', '.join(every)}]\n")
    return "".join(lines)


APP = "app"
#: Kafka's own changelog topics of a built topology: `TopicsInfo#nonSourceChangelogTopics` (created) and
#: `stateChangelogTopics` (every one, source topics reused as changelogs too), per sub-topology
_JAVA_CHANGELOGS = r"""
  static String changelogs(Topology t) throws Exception {
    java.lang.reflect.Field f = Topology.class.getDeclaredField("internalTopologyBuilder");
    f.setAccessible(true);
    org.apache.kafka.streams.processor.internals.InternalTopologyBuilder itb =
        (org.apache.kafka.streams.processor.internals.InternalTopologyBuilder) f.get(t);
    Properties config = new Properties();
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, "$APP");
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    itb.rewriteTopology(new StreamsConfig(config));
    itb.buildTopology();  // names the logged stores' changelogs
    StringBuilder out = new StringBuilder();
    for (Map.Entry<?, org.apache.kafka.streams.processor.internals.InternalTopologyBuilder.TopicsInfo> e
        : new TreeMap<>(itb.subtopologyToTopicsInfo()).entrySet()) {
      TreeSet<String> created = new TreeSet<>();
      for (org.apache.kafka.streams.processor.internals.InternalTopicConfig c : e.getValue().nonSourceChangelogTopics())
        created.add(c.name());
      out.append("changelogs " + created + " of "
          + new TreeSet<>(e.getValue().stateChangelogTopics.keySet()) + "\n");
    }
    return out.toString();
  }
""".replace("$APP", APP)


def test_random_topologies_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    _check_against_kafka_streams(tmp_path, [_program(rng) for _ in range(150)])


def test_random_stream_stream_joins_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    rng = random.Random(20261124)
    _check_against_kafka_streams(tmp_path, [_program(rng, stream_joins=True) for _ in range(150)])


def test_random_foreign_key_joins_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    rng = random.Random(20261125)
    _check_against_kafka_streams(tmp_path, [foreign_key_join_program(rng) for _ in range(150)])


def test_random_optimized_topologies_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    """`build(props)` with a random `topology.optimization`: the same description and changelog topics."""
    rng = random.Random(20261125)
    programs = [_program(rng, stream_joins=rng.random() < 0.3) for _ in range(150)]
    _check_against_kafka_streams(tmp_path, programs, [rng.choice(OPTIMIZATIONS) for _ in programs])


@pytest.mark.parametrize("optimization", OPTIMIZATIONS)
def test_hand_written_optimized_topologies_describe_exactly_like_kafka_streams(
    tmp_path: Path, optimization: str
) -> None:
    """Each rule of `mergeRepartitionTopics` once (tests/oracle/topology/optimization_programs.py)."""
    programs = [(java, py) for _, java, py in OPTIMIZATION_PROGRAMS]
    _check_against_kafka_streams(tmp_path, programs, [optimization] * len(programs))


def _check_against_kafka_streams(
    tmp_path: Path, programs: list[tuple[list[str], list[str]]], optimizations: list[str] | None = None
) -> None:
    optimizations = optimizations or ["none"] * len(programs)
    assert shutil.which("javac") and shutil.which("java"), "this test compiles Java: install a JDK 17+"
    classpath = kafka_streams_classpath()
    assert classpath is not None, "oracle/target/lib has no kafka-streams jar after the oracle build"
    java_lines = [
        "import java.util.*;",
        "import java.util.function.BiFunction;",
        "import java.time.Duration;",
        "import org.apache.kafka.streams.*;",
        "import org.apache.kafka.streams.kstream.*;",
        '@SuppressWarnings({"unchecked", "rawtypes"})',
        "public class RandomTopologies {",
        _JAVA_CHANGELOGS,
    ]
    for i, (java, _) in enumerate(programs):
        java_lines.append(f"  static void t{i}() throws Exception {{")
        java_lines.append("    StreamsBuilder b = new StreamsBuilder();")
        java_lines.extend("    " + statement for statement in java)
        java_lines.append("    Properties p = new Properties();")
        java_lines.append(f'    p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, "{optimizations[i]}");')
        java_lines.append("    Topology built = b.build(p);")  # programs name their own variables t, f, ...
        java_lines.append(f'    System.out.print("=== {i}\\n" + built.describe() + changelogs(built) + "=== end\\n");')
        java_lines.append("  }")
    java_lines.append("  public static void main(String[] args) throws Exception {")
    java_lines.extend(f"    t{i}();" for i in range(len(programs)))
    java_lines.append("  }")
    java_lines.append("}")
    (tmp_path / "RandomTopologies.java").write_text("\n".join(java_lines))
    subprocess.run(
        ["javac", *javac_options(), "-nowarn", "-cp", classpath, "RandomTopologies.java"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    result = subprocess.run(
        ["java", *SHORT_LIVED, "-cp", classpath + os.pathsep + ".", "RandomTopologies"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    )
    expected = result.stdout.split("=== end\n")
    for i, (_, py) in enumerate(programs):
        assert expected[i] == f"=== {i}\n" + _python_describe(py, optimizations[i]), "\n".join(py)


#: unmaterialized table-table joins read by joins: the reader is connected to every store of the join's tables
JOIN_GETTER_PROGRAMS: list[tuple[list[str], list[str]]] = [
    (
        [
            'KTable l = b.table("left");',
            'KTable r = b.table("right");',
            "KTable j = l.join(r, (v, w) -> v);",
            'KStream<String, String> s = b.stream("orders");',
            's.join(j, (v, tv) -> v).to("out");',
        ],
        [
            "l = b.table('left')",
            "r = b.table('right')",
            "j = l.join(r, lambda v, w: v)",
            "s = b.stream('orders')",
            "s.join(j, lambda v, tv: v).to('out')",
        ],
    ),
    (
        [
            'KTable l = b.table("left", Materialized.as("ls"));',
            'KTable r = b.table("right");',
            'KTable t = b.table("third");',
            'KTable j = l.leftJoin(r, (v, w) -> v, Named.as("lr"));',
            "KTable jt = j.outerJoin(t, (v, w) -> v);",
            "KTable tj = t.join(j, (v, w) -> v);",
            'jt.toStream().to("o1");',
            'tj.toStream().to("o2");',
            'KStream<String, String> s = b.stream("orders");',
            's.leftJoin(jt, (v, tv) -> v).to("o3");',
        ],
        [
            "l = b.table('left', store_name='ls')",
            "r = b.table('right')",
            "t = b.table('third')",
            "j = l.left_join(r, lambda v, w: v, name='lr')",
            "jt = j.outer_join(t, lambda v, w: v)",
            "tj = t.join(j, lambda v, w: v)",
            "jt.to_stream().to('o1')",
            "tj.to_stream().to('o2')",
            "s = b.stream('orders')",
            "s.left_join(jt, lambda v, tv: v).to('o3')",
        ],
    ),
    (
        [
            'KTable l = b.table("left");',
            'KTable r = b.table("right");',
            "KTable f = l.outerJoin(r, (v, w) -> v).filter((k, v) -> true).mapValues(v -> v);",
            'KStream<String, String> s = b.stream("orders");',
            's.leftJoin(f, (v, tv) -> v, Joined.as("enrich")).to("out");',
            'f.toStream().to("o2");',
        ],
        [
            "l = b.table('left')",
            "r = b.table('right')",
            "f = l.outer_join(r, lambda v, w: v).filter(lambda k, v: True).map_values(lambda v: v)",
            "s = b.stream('orders')",
            "s.left_join(f, lambda v, tv: v, name='enrich').to('out')",
            "f.to_stream().to('o2')",
        ],
    ),
]


def test_unmaterialized_table_joins_read_by_joins_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    _check_against_kafka_streams(tmp_path, JOIN_GETTER_PROGRAMS)


#: a suppressed table's operations and joins: a reader is connected to the buffer and the aggregation's store
SUPPRESSED_TABLE_PROGRAMS: list[tuple[list[str], list[str]]] = [
    (
        [
            'KTable c = b.stream("in").groupByKey().count();',
            "KTable f = c.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(5), "
            "Suppressed.BufferConfig.unbounded()));",
            'f.filter((k, v) -> true).mapValues(v -> v).toStream().to("o1");',
            'b.stream("orders").leftJoin(f, (v, tv) -> v).to("o2");',
            'KTable t = b.table("t");',
            't.join(f, (v, w) -> v).toStream().to("o3");',
            'f.outerJoin(t, (v, w) -> v, Named.as("ft")).toStream().to("o4");',
        ],
        [
            "c = b.stream('in').group_by_key().count()",
            "f = c.suppress(Suppressed.until_time_limit(5, BufferConfig.unbounded()))",
            "f.filter(lambda k, v: True).map_values(lambda v: v).to_stream().to('o1')",
            "b.stream('orders').left_join(f, lambda v, tv: v).to('o2')",
            "t = b.table('t')",
            "t.join(f, lambda v, w: v).to_stream().to('o3')",
            "f.outer_join(t, lambda v, w: v, name='ft').to_stream().to('o4')",
        ],
    ),
    (
        [
            'KTable c = b.stream("in").groupByKey().reduce((x, y) -> y, Materialized.as("latest"));',
            "KTable f = c.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(5), "
            'Suppressed.BufferConfig.maxRecords(3).emitEarlyWhenFull()).withName("limit"));',
            'KTable m = f.filter((k, v) -> true, Materialized.as("kept"));',
            'b.stream("orders").join(m, (v, tv) -> v).to("o1");',
            'b.stream("more").join(f.mapValues(v -> v), (v, tv) -> v).to("o2");',
        ],
        [
            "c = b.stream('in').group_by_key().reduce(lambda x, y: y, 'latest')",
            "f = c.suppress(Suppressed.until_time_limit(5, BufferConfig.max_records(3).emit_early_when_full())"
            ".with_name('limit'))",
            "m = f.filter(lambda k, v: True, store_name='kept')",
            "b.stream('orders').join(m, lambda v, tv: v).to('o1')",
            "b.stream('more').join(f.map_values(lambda v: v), lambda v, tv: v).to('o2')",
        ],
    ),
]


def test_suppressed_tables_operations_and_joins_describe_exactly_like_kafka_streams(tmp_path: Path) -> None:
    _check_against_kafka_streams(tmp_path, SUPPRESSED_TABLE_PROGRAMS)
