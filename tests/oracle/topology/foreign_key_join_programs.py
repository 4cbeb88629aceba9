"""Random programs dense in foreign-key joins for the describe() oracle: source tables (some with stores),
filters and mapValues of them, foreign-key `join` / `leftJoin`s of any two (results included, so chains of
joins and a table joined with itself), primary-key joins, and grouped aggregations of the results (which ask
the join's result for old values); every table is finally written to a topic."""

from __future__ import annotations

import random

from tests.oracle.topology.table_programs import TablePrograms


def foreign_key_join_program(rng: random.Random) -> tuple[list[str], list[str]]:
    tables = TablePrograms()
    java: list[str] = []
    py: list[str] = []
    counter = {"topic": 0, "name": 0}

    def topic() -> str:
        counter["topic"] += 1
        return f"t{counter['topic']}"

    def maybe_name(prefix: str) -> str | None:
        if rng.random() < 0.3:
            counter["name"] += 1
            return f"{prefix}{counter['name']}{rng.choice(['a', 'Z', '_x', '-q'])}"
        return None

    for _ in range(rng.randint(2, 9)):
        roll = rng.random()
        if not tables.tables or roll < 0.25:
            tables._table(rng, java, py, topic(), maybe_name("tab"))
        elif roll < 0.35:
            t = rng.choice(tables.tables)
            tables.operations += 1
            var = f"kto{tables.operations}"
            java.append(f"KTable {var} = {t}.filter((k, v) -> true);")
            py.append(f"{var} = {t}.filter(lambda k, v: True)")
            tables.tables.append(var)
        elif roll < 0.45:
            tables._grouped_aggregation(rng, java, py, maybe_name, list(tables.tables))
            tables.tables.append(f"kg{tables.aggregations}")
        elif roll < 0.55:
            tables._table_join(rng, java, py, maybe_name)
        else:
            a, b = rng.choice(tables.tables), rng.choice(tables.tables)
            tables.joins += 1
            tables._foreign_key_join(rng, java, py, a, b, f"ktj{tables.joins}", maybe_name("fk"))
    for var in tables.tables:
        out = topic()
        java.append(f'{var}.toStream().to("{out}");')
        py.append(f"{var}.to_stream().to({out!r})")
    return java, py
