"""Random source tables, KTable operations, stream-table joins, splits and merges for the describe() oracle.

`TablePrograms.step` adds one Java statement and its Python twin: a `builder.table` (with or without a
`Consumed` name and a store), a KTable `filter` / `filterNot` / `mapValues` (some materialized), a stream's
`join` / `leftJoin` with one of those tables (with or without a `Joined` name; joins of re-keyed streams
insert repartitions), a `split()` with branches of every `Branched` kind, a `merge`, a table's `groupBy` and
an aggregation of it (`count` / `reduce` / `aggregate` with subtractors), or a table-table `join` / `leftJoin` /
`outerJoin` (some materialized), or a foreign-key `join` / `leftJoin` (a Function or BiFunction extractor,
some named with `TableJoined.as`, some materialized). Table operations and groupBy also take aggregations'
tables, windowed ones too.
"""

from __future__ import annotations

import random
from collections.abc import Callable


class TablePrograms:
    """The joinable tables of one random program: sources, their operations, grouped tables' aggregations and
    table-table joins."""

    def __init__(self) -> None:
        self.tables: list[str] = []
        self.stores = 0
        self.grouped: list[str] = []  # KTable groupBy results
        self.aggregations = 0
        self.operations = 0
        self.joins = 0

    def step(
        self,
        rng: random.Random,
        java: list[str],
        py: list[str],
        streams: list[str],
        to_streamable: list[str],
        topic: Callable[[], str],
        maybe_name: Callable[[str], str | None],
    ) -> None:
        roll = rng.random()
        if roll < 0.15:
            self._split(rng, java, py, rng.choice(streams), topic, maybe_name)
        elif roll < 0.25:
            a, b, var = rng.choice(streams), rng.choice(streams), f"s{len(streams)}"
            name = maybe_name("mrg")
            java.append(f"KStream {var} = {a}.merge({b}{f', Named.as({chr(34)}{name}{chr(34)})' if name else ''});")
            py.append(f"{var} = {a}.merge({b}{f', name={name!r}' if name else ''})")
            streams.append(var)
        elif not self.tables or roll < 0.4:
            self._table(rng, java, py, topic(), maybe_name("tab"))
            to_streamable.append(self.tables[-1])
        elif roll < 0.6:
            # any table, an aggregation's (windowed too) included; only non-windowed ones are joined later
            aggregated = [x for x in to_streamable if x not in self.tables or x.startswith("kg")]
            t = rng.choice(aggregated if aggregated and rng.random() < 0.5 else self.tables)
            self.operations += 1
            var = f"kto{self.operations}"
            name = maybe_name("top")
            op = rng.choice(["filter", "filterNot", "mapValues"])
            jfn, pfn = ("v -> v", "lambda v: v") if op == "mapValues" else ("(k, v) -> true", "lambda k, v: True")
            pop = {"filter": "filter", "filterNot": "filter_not", "mapValues": "map_values"}[op]
            jnamed = f', Named.as("{name}")' if name else ""
            pnamed = f", name={name!r}" if name else ""
            if rng.random() < 0.3:  # materialized in a store of its own
                self.stores += 1
                jnamed += f', Materialized.as("opstore{self.stores}")'
                pnamed += f", store_name='opstore{self.stores}'"
            java.append(f"KTable {var} = {t}.{op}({jfn}{jnamed});")
            py.append(f"{var} = {t}.{pop}({pfn}{pnamed})")
            if t in self.tables:
                self.tables.append(var)
            to_streamable.append(var)
        elif roll < 0.7:
            self._grouped_aggregation(rng, java, py, maybe_name, self.tables + to_streamable)
            to_streamable.append(f"kg{self.aggregations}")
            self.tables.append(f"kg{self.aggregations}")  # filtered, mapped, re-grouped and joined like any table
        elif roll < 0.8:
            self._table_join(rng, java, py, maybe_name)
            to_streamable.append(f"ktj{self.joins}")
        else:
            s, t, var = rng.choice(streams), rng.choice(self.tables), f"s{len(streams)}"
            left = rng.random() < 0.5
            name = maybe_name("join")
            jop, pop = ("leftJoin", "left_join") if left else ("join", "join")
            jjoined = f', Joined.as("{name}")' if name else ""
            pnamed = f", name={name!r}" if name else ""
            java.append(f"KStream {var} = {s}.{jop}({t}, (v, tv) -> v{jjoined});")
            py.append(f"{var} = {s}.{pop}({t}, lambda v, tv: v{pnamed})")
            streams.append(var)

    # --- KTable groupBy and its aggregations ---

    def _grouped_aggregation(
        self,
        rng: random.Random,
        java: list[str],
        py: list[str],
        maybe_name: Callable[[str], str | None],
        tables: list[str],
    ) -> None:
        """A count / reduce / aggregate of a new or earlier `groupBy` of a table (named or not, with a store
        or not); its table is `kg<n>`."""
        if not self.grouped or rng.random() < 0.6:
            g, t = f"gt{len(self.grouped)}", rng.choice(tables)
            name = maybe_name("grp")
            java.append(
                f"KGroupedTable {g} = {t}.groupBy((k, v) -> KeyValue.pair(v, k)"
                f"{f', Grouped.as({chr(34)}{name}{chr(34)})' if name else ''});"
            )
            py.append(f"{g} = {t}.group_by(lambda k, v: (v, k){f', name={name!r}' if name else ''})")
            self.grouped.append(g)
        g = rng.choice(self.grouped)
        self.aggregations += 1
        var = f"kg{self.aggregations}"
        name = maybe_name("agg")
        store = None
        if rng.random() < 0.4:
            self.stores += 1
            store = f"gstore{self.stores}"
        jnamed = f'Named.as("{name}"), ' if name else ""
        pnamed = f", name={name!r}" if name else ""
        materialized = f'Materialized.as("{store}")' if store else "Materialized.with(null, null)"
        pstore = f"{store!r}, " if store else ""
        kind = rng.choice(["count", "reduce", "aggregate"])
        if kind == "count":
            if store:
                java.append(f"KTable {var} = {g}.count({jnamed}{materialized});")
            else:
                java.append(f"KTable {var} = {g}.count({jnamed.rstrip(', ')});")
            py.append(f"{var} = {g}.count({pstore}{pnamed.lstrip(', ')})")
        elif kind == "reduce":
            java.append(f"KTable {var} = {g}.reduce((a, v) -> v, (a, v) -> a, {jnamed}{materialized});")
            py.append(f"{var} = {g}.reduce(lambda a, v: v, lambda a, v: a, {pstore}{pnamed.lstrip(', ')})")
        else:
            java.append(
                f'KTable {var} = {g}.aggregate(() -> "", (k, v, a) -> a, (k, v, a) -> a, {jnamed}{materialized});'
            )
            py.append(
                f"{var} = {g}.aggregate(lambda: '', lambda k, v, a: a, lambda k, v, a: a, "
                f"{pstore}{pnamed.lstrip(', ')})"
            )

    def _table_join(
        self, rng: random.Random, java: list[str], py: list[str], maybe_name: Callable[[str], str | None]
    ) -> None:
        """A table-table join, left join or outer join of two joinable tables (named or not), or a foreign-key
        join of them: `ktj<n>`."""
        a, b = rng.choice(self.tables), rng.choice(self.tables)
        self.joins += 1
        var, name = f"ktj{self.joins}", maybe_name("tj")
        if rng.random() < 0.35:
            self._foreign_key_join(rng, java, py, a, b, var, name)
            return
        jop, pop = rng.choice([("join", "join"), ("leftJoin", "left_join"), ("outerJoin", "outer_join")])
        jnamed = f', Named.as("{name}")' if name else ""
        pnamed = f", name={name!r}" if name else ""
        if rng.random() < 0.3:  # materialized: the result has a store, which joins read
            self.stores += 1
            jnamed += f', Materialized.as("jstore{self.stores}")'
            pnamed += f", store_name='jstore{self.stores}'"
        self.tables.append(var)  # else joins read both its tables' stores (Kafka's join value getter)
        java.append(f"KTable {var} = {a}.{jop}({b}, (v, w) -> v{jnamed});")
        py.append(f"{var} = {a}.{pop}({b}, lambda v, w: v{pnamed})")

    def _foreign_key_join(
        self, rng: random.Random, java: list[str], py: list[str], a: str, b: str, var: str, name: str | None
    ) -> None:
        jop, pop = rng.choice([("join", "join"), ("leftJoin", "left_join")])
        jfk, pfk = rng.choice(
            [("(java.util.function.Function) v -> v", "lambda v: v"), ("(BiFunction) (k, v) -> k", "lambda k, v: k")]
        )
        jrest = f', TableJoined.as("{name}")' if name else ""
        prest = f", name={name!r}" if name else ""
        if rng.random() < 0.3:
            self.stores += 1
            jrest += f', Materialized.as("fkstore{self.stores}")'
            prest += f", store_name='fkstore{self.stores}'"
        self.tables.append(var)  # a table source: materialized when read, as a source table is
        java.append(f"KTable {var} = {a}.{jop}({b}, {jfk}, (v, w) -> v{jrest});")
        py.append(f"{var} = {a}.{pop}({b}, {pfk}, lambda v, w: v{prest})")

    def _split(
        self,
        rng: random.Random,
        java: list[str],
        py: list[str],
        s: str,
        topic: Callable[[], str],
        maybe_name: Callable[[str], str | None],
    ) -> None:
        name = maybe_name("split")
        jcall = [f"{s}.split({f'Named.as({chr(34)}{name}{chr(34)})' if name else ''})"]
        pcall = [f"{s}.split({f'name={name!r}' if name else ''})"]
        used: set[str] = set()
        for _ in range(rng.randint(1, 4)):
            jb, pb = self._branched(rng, topic, used)
            jcall.append(f".branch((k, v) -> true{', ' + jb if jb else ''})")
            pcall.append(f".branch(lambda k, v: True{', ' + pb if pb else ''})")
        if rng.random() < 0.6:
            jb, pb = self._branched(rng, topic, used)
            jcall.append(f".defaultBranch({jb})")
            pcall.append(f".default_branch({pb})")
        else:
            jcall.append(".noDefaultBranch()")
            pcall.append(".no_default_branch()")
        java.append("".join(jcall) + ";")
        py.append("".join(pcall))

    @staticmethod
    def _branched(rng: random.Random, topic: Callable[[], str], used: set[str]) -> tuple[str, str]:
        """A `Branched` argument (Java, Python), or none; branch names are unique within a split."""
        name = rng.choice([None, "a", "b", "c"])
        if name in used:
            name = None
        if name:
            used.add(name)
        jname, pname = (f', "{name}"', f", name={name!r}") if name else ("", "")
        kind = rng.choice(["none", "as", "function", "consumer"])
        if kind == "as" and name:
            return f'Branched.as("{name}")', f"Branched.as_({name!r})"
        if kind == "function":
            return f"Branched.withFunction(ks -> ks.mapValues(v -> v){jname})", (
                f"Branched.with_function(lambda ks: ks.map_values(lambda v: v){pname})"
            )
        if kind == "consumer":
            t = topic()
            return f'Branched.withConsumer(ks -> ks.to("{t}"){jname})', (
                f"Branched.with_consumer(lambda ks: ks.to({t!r}){pname})"
            )
        return "", ""

    def _table(self, rng: random.Random, java: list[str], py: list[str], topic: str, name: str | None) -> None:
        var = f"kt{len(self.tables)}"
        store = None
        if rng.random() < 0.5:
            self.stores += 1
            store = f"tstore{self.stores}"
        jargs = [f'"{topic}"']
        pargs = [repr(topic)]
        if name:
            jargs.append(f'Consumed.as("{name}")')
            pargs.append(f"name={name!r}")
        if store:
            jargs.append(f'Materialized.as("{store}")')
            pargs.append(f"store_name={store!r}")
        java.append(f"KTable {var} = b.table({', '.join(jargs)});")
        py.append(f"{var} = b.table({', '.join(pargs)})")
        self.tables.append(var)
