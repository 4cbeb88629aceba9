"""Random source tables, KTable operations, stream-table joins, splits and merges for the describe() oracle.

`TablePrograms.step` adds one Java statement and its Python twin: a `builder.table` (with or without a
`Consumed` name and a store), a KTable `filter` / `filterNot` / `mapValues` (some materialized), a stream's
`join` / `leftJoin` with one of those tables (with or without a `Joined` name; joins of re-keyed streams
insert repartitions), a `split()` with branches of every `Branched` kind, or a `merge`.
"""

from __future__ import annotations

import random
from collections.abc import Callable


class TablePrograms:
    """The tables of one random program (aggregations' tables cannot be joined yet, so they are not here)."""

    def __init__(self) -> None:
        self.tables: list[str] = []
        self.stores = 0

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
            t, var = rng.choice(self.tables), f"kt{len(self.tables)}"
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
            self.tables.append(var)
            to_streamable.append(var)
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
