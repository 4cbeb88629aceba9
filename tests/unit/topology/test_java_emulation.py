"""The Java collection behaviour describe() depends on."""

from __future__ import annotations

import random

from streamlet.topology._java import (
    JavaTreeSet,
    capacity_by_growth,
    capacity_of_copy,
    copied_hash_set_order,
    hash_set_order,
    string_hash,
)


def signed(h: int) -> int:
    return h - (1 << 32) if h >= 1 << 31 else h


def test_string_hash_is_javas() -> None:
    # Known values of java.lang.String#hashCode.
    assert string_hash("") == 0
    assert signed(string_hash("hello")) == 99162322
    assert string_hash("Aa") == string_hash("BB") == 2112
    assert signed(string_hash("polygenelubricants")) == -(2**31)
    assert signed(string_hash("\u00e9")) == 233  # one UTF-16 code unit
    assert signed(string_hash("\U0001f600")) == 0xD83D * 31 + 0xDE00  # a surrogate pair: two code units


def test_hash_map_capacities() -> None:
    # Default HashMap: 16 buckets until the 13th entry (load factor 0.75); new HashSet<>(c): n/.75+1, >= 16.
    assert capacity_by_growth(12) == 16 and capacity_by_growth(13) == 32 and capacity_by_growth(25) == 64
    assert capacity_of_copy(11) == 16 and capacity_of_copy(12) == 32


def test_hash_set_order_buckets_then_insertion() -> None:
    # "Aa" and "BB" share a bucket: insertion order decides within it.
    assert hash_set_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hash_set_order(["Aa", "BB"]) == ["Aa", "BB"]
    # Java: new HashSet<>(List.of("topic-b","topic-a","c","alpha","zeta")) iterates like this.
    assert copied_hash_set_order(["topic-b", "topic-a", "c", "alpha", "zeta"]) == [
        "zeta",
        "c",
        "alpha",
        "topic-a",
        "topic-b",
    ]


def test_tree_set_with_a_consistent_comparator_is_a_sorted_set() -> None:
    rng = random.Random(7)
    for _ in range(200):
        items = [rng.randrange(1000) for _ in range(rng.randrange(1, 60))]
        tree: JavaTreeSet[int] = JavaTreeSet(lambda a, b: (a > b) - (a < b))
        added = [tree.add(item) for item in items]
        assert list(tree) == sorted(set(items))
        assert len(tree) == len(set(items))
        assert sum(added) == len(set(items))
