"""Hand-written programs for `merge.repartition.topics` and `single.store.self.join` (and reuse): each rule of Kafka's
`mergeRepartitionTopics` once, as equivalent Java and Python DSL statements (`b` is the builder)."""

from __future__ import annotations

J = "KStream"  # raw types, as the random programs use
_WINDOW_J = "JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(10))"
_WINDOW_P = "JoinWindows.of_time_difference_with_no_grace(10)"

#: (what it shows, Java statements, Python statements)
PROGRAMS: list[tuple[str, list[str], list[str]]] = [
    (
        "two aggregations below one key changer share one topic; the filter between moves below it",
        [
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            "s.groupByKey().count();",
            "s.filter((k, v) -> true).groupByKey().reduce((a, v) -> v);",
        ],
        [
            "s = b.stream('in').select_key(lambda k, v: v)",
            "s.group_by_key().count()",
            "s.filter(lambda k, v: True).group_by_key().reduce(lambda a, v: v)",
        ],
    ),
    (
        "a value change between the key changer and a repartition keeps that repartition apart",
        [
            f'{J} s = b.stream("in").map((k, v) -> KeyValue.pair(v, k));',
            "s.groupByKey().count();",
            "s.mapValues(v -> v).groupByKey().count();",
            "s.flatMapValues(v -> List.of(v)).groupByKey().count();",
        ],
        [
            "s = b.stream('in').map(lambda k, v: (v, k))",
            "s.group_by_key().count()",
            "s.map_values(lambda v: v).group_by_key().count()",
            "s.flat_map_values(lambda v: [v]).group_by_key().count()",
        ],
    ),
    (
        "named repartitions: the merged topic is the first one's name",
        [
            f'{J} s = b.stream("in").flatMap((k, v) -> List.of(KeyValue.pair(v, k)));',
            's.groupByKey(Grouped.as("first")).count();',
            's.groupByKey(Grouped.as("second")).count(Materialized.as("counts"));',
            's.groupBy((k, v) -> v, Grouped.as("third")).count();',
        ],
        [
            "s = b.stream('in').flat_map(lambda k, v: [(v, k)])",
            "s.group_by_key(name='first').count()",
            "s.group_by_key(name='second').count('counts')",
            "s.group_by(lambda k, v: v, name='third').count()",
        ],
    ),
    (
        "a stream-table join's repartition merges with an aggregation's",
        [
            'KTable tb = b.table("tab", Materialized.as("tstore"));',
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            's.join(tb, (v, tv) -> v).to("out");',
            "s.groupByKey().count();",
        ],
        [
            "tb = b.table('tab', store_name='tstore')",
            "s = b.stream('in').select_key(lambda k, v: v)",
            "s.join(tb, lambda v, tv: v).to('out')",
            "s.group_by_key().count()",
        ],
    ),
    (
        "a left join downstream keeps null keys in the merged repartition",
        [
            'KTable tb = b.table("tab", Materialized.as("tstore"));',
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            's.leftJoin(tb, (v, tv) -> v).to("out");',
            "s.groupByKey().count();",
        ],
        [
            "tb = b.table('tab', store_name='tstore')",
            "s = b.stream('in').select_key(lambda k, v: v)",
            "s.left_join(tb, lambda v, tv: v).to('out')",
            "s.group_by_key().count()",
        ],
    ),
    (
        "stream-stream joins: each side's repartition merges below its own key changer",
        [
            f'{J} a = b.stream("a").selectKey((k, v) -> v);',
            f'{J} c = b.stream("c").selectKey((k, v) -> v);',
            f'a.join(c, (v1, v2) -> v1, {_WINDOW_J}).to("out");',
            "a.groupByKey().count();",
            "c.groupByKey().count();",
        ],
        [
            "a = b.stream('a').select_key(lambda k, v: v)",
            "c = b.stream('c').select_key(lambda k, v: v)",
            f"a.join(c, lambda v1, v2: v1, {_WINDOW_P}).to('out')",
            "a.group_by_key().count()",
            "c.group_by_key().count()",
        ],
    ),
    (
        "repartitions below a merge of key-changed streams merge below the merge node",
        [
            f'{J} a = b.stream("a").selectKey((k, v) -> v);',
            f'{J} c = b.stream("c").selectKey((k, v) -> v);',
            f"{J} m = a.merge(c);",
            "m.groupByKey().count();",
            "m.filter((k, v) -> true).groupByKey().count();",
        ],
        [
            "a = b.stream('a').select_key(lambda k, v: v)",
            "c = b.stream('c').select_key(lambda k, v: v)",
            "m = a.merge(c)",
            "m.group_by_key().count()",
            "m.filter(lambda k, v: True).group_by_key().count()",
        ],
    ),
    (
        "KStream.repartition() is never merged; one aggregation alone still moves its filter below its topic",
        [
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            's.repartition(Repartitioned.as("manual")).to("out");',
            "s.peek((k, v) -> {}).groupByKey().count();",
        ],
        [
            "s = b.stream('in').select_key(lambda k, v: v)",
            "s.repartition('manual').to('out')",
            "s.peek(lambda k, v: None).group_by_key().count()",
        ],
    ),
    (
        "windowed aggregations and a table source together",
        [
            'KTable tb = b.table("tab", Materialized.as("tstore"));',
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            "s.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(10))).count();",
            "s.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(10))).count();",
            's.join(tb, (v, tv) -> v).to("out");',
        ],
        [
            "tb = b.table('tab', store_name='tstore')",
            "s = b.stream('in').select_key(lambda k, v: v)",
            "s.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count()",
            "s.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10)).count()",
            "s.join(tb, lambda v, tv: v).to('out')",
        ],
    ),
]

PROGRAMS += [
    (
        "a stream joined with itself: one store, one self-join processor (named as the merge)",
        [f'{J} s = b.stream("in");', f's.join(s, (v1, v2) -> v1, {_WINDOW_J}).to("out");'],
        ["s = b.stream('in')", f"s.join(s, lambda v1, v2: v1, {_WINDOW_P}).to('out')"],
    ),
    (
        "self-joins of every kind, named, with a store name, after a re-key (one repartition feeds both sides)",
        [
            f'{J} s = b.stream("in").selectKey((k, v) -> v);',
            f's.leftJoin(s, (v1, v2) -> v1, {_WINDOW_J}).to("left");',
            f"s.outerJoin(s, (v1, v2) -> v1, {_WINDOW_J}, "
            + '((StreamJoined) StreamJoined.as("st")).withName("sj")).to("outer");',
            f'{J} u = b.stream("in2").mapValues(v -> v);',
            f'u.join(u, (v1, v2) -> v1, {_WINDOW_J}).join(u, (v1, v2) -> v1, {_WINDOW_J}).to("twice");',
        ],
        [
            "s = b.stream('in').select_key(lambda k, v: v)",
            f"s.left_join(s, lambda v1, v2: v1, {_WINDOW_P}).to('left')",
            f"s.outer_join(s, lambda v1, v2: v1, {_WINDOW_P}, stream_joined=StreamJoined.as_('st').with_name('sj'))"
            + ".to('outer')",
            "u = b.stream('in2').map_values(lambda v: v)",
            f"u.join(u, lambda v1, v2: v1, {_WINDOW_P}).join(u, lambda v1, v2: v1, {_WINDOW_P}).to('twice')",
        ],
    ),
]
