"""WordCount's ground truth as a Spark batch job, and its comparison with what a streaming run wrote.

The words of a line are Kafka Streams' WordCountDemo's, `line.toLowerCase(Locale.getDefault()).split("\\W+")`,
computed with Spark SQL functions, whose regular expressions are Java's own (`java.util.regex`):

- `\\W` is ASCII-only in Java: any character but `[a-zA-Z0-9_]` separates words, so "café" gives "caf" and
  Greek or Cyrillic text gives no words at all (Python's `re` treats those letters as word characters);
- a leading separator gives one empty first word `""` (counted), trailing empty strings are dropped, and a line
  that is only separators gives no word;
- an empty line gives ONE empty word `""`: Java's `split` returns the input itself when nothing matches;
- `lower` is Spark's root-locale Unicode lower-casing; Java's uses the JVM's default locale, which differs only
  in Turkish, Azeri and Lithuanian locales (there "I" lowers to a dotless "ı", a separator). Since `\\W` is
  ASCII-only, non-ASCII case mappings matter only where they produce ASCII ("İ" -> "i̇", Kelvin sign -> "k");
  both sides agree on those.

Values are decoded as UTF-8 with malformed bytes replaced by U+FFFD (a separator), like Kafka's
`StringDeserializer`; null values (tombstones) are skipped (Kafka Streams' WordCountDemo would fail on them).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamlet.spark.session import require_pyspark

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Offsets = str | Mapping[int, int]
"""`"earliest"`, `"latest"`, Spark's JSON (`{"topic":{"0":23,"1":-2}}`) or {partition: offset}, -2 = earliest,
-1 = latest; Spark needs every partition of the topic in a JSON/mapping form."""

_NON_WORD = r"\W+"  # java.util.regex: [^a-zA-Z_0-9]+
_TRAILING_NON_WORD = r"\W+\z"


def split_words_column(line: Column | str) -> Column:
    """An `array<string>` Column: the words of `line` exactly as `line.toLowerCase().split("\\W+")` in Java."""
    require_pyspark()
    from pyspark.sql import functions as F

    lowered = F.lower(F.col(line) if isinstance(line, str) else line)
    # Spark's split keeps trailing empty strings (Java's limit -1); Java's limit 0 drops them, except that a
    # string without any separator is returned whole, so "" gives [""] while "!!" gives [].
    trimmed = F.regexp_replace(lowered, _TRAILING_NON_WORD, "")
    return F.when((trimmed == "") & (lowered != ""), F.array().cast("array<string>")).otherwise(
        F.split(trimmed, _NON_WORD, -1)
    )


def decode_utf8_column(value: Column | str) -> Column:
    """A string Column from a binary one, malformed UTF-8 replaced by U+FFFD (like Kafka's StringDeserializer)."""
    require_pyspark()
    from pyspark.sql import functions as F

    return F.make_valid_utf8((F.col(value) if isinstance(value, str) else value).cast("string"))


def offsets_option(topic: str, offsets: Offsets) -> str:
    """Spark's `startingOffsets`/`endingOffsets` option value for `topic`."""
    if isinstance(offsets, str):
        return offsets
    return json.dumps({topic: {str(int(p)): int(o) for p, o in sorted(offsets.items())}})


def read_topic(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    starting_offsets: Offsets = "earliest",
    ending_offsets: Offsets = "latest",
    *,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A batch DataFrame of `topic`'s records (key, value, partition, offset, ...); committed records only."""
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", offsets_option(topic, starting_offsets))
        .option("endingOffsets", offsets_option(topic, ending_offsets))
        .option("kafka.isolation.level", "read_committed")
    )
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


def ground_truth_dataframe(records: DataFrame) -> DataFrame:
    """(word, count) from a DataFrame of Kafka records whose `value` is a UTF-8 text line."""
    from pyspark.sql import functions as F

    lines = records.where(F.col("value").isNotNull()).select(decode_utf8_column("value").alias("line"))
    words = lines.select(F.explode(split_words_column("line")).alias("word"))
    return words.groupBy("word").count()


def ground_truth_wordcount(
    spark: SparkSession,
    bootstrap: str,
    input_topic: str,
    starting_offsets: Offsets = "earliest",
    ending_offsets: Offsets = "latest",
    *,
    options: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Each word's count over `input_topic`'s records in [starting_offsets, ending_offsets)."""
    require_pyspark()
    records = read_topic(spark, bootstrap, input_topic, starting_offsets, ending_offsets, options=options)
    return {row["word"]: int(row["count"]) for row in ground_truth_dataframe(records).collect()}


@dataclass(frozen=True)
class MalformedRecord:
    """An output record that is not (UTF-8 word, 8-byte big-endian count): the latest for its key."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reason: str


@dataclass
class OutputCounts:
    """The latest count per word in an output topic, and what did not look like WordCount's output."""

    counts: dict[str, int] = field(default_factory=dict)
    records: int = 0
    # word -> the partitions it was found in, for words in more than one (a key always lands in one partition)
    split_keys: dict[str, tuple[int, ...]] = field(default_factory=dict)
    malformed: list[MalformedRecord] = field(default_factory=list)


def read_output_counts(
    spark: SparkSession, bootstrap: str, output_topic: str, *, options: Mapping[str, str] | None = None
) -> OutputCounts:
    """Batch-read `output_topic` whole and keep each word's latest count (highest (partition, offset))."""
    require_pyspark()
    from pyspark.sql import functions as F

    records = read_topic(spark, bootstrap, output_topic, "earliest", "latest", options=options)
    latest = records.groupBy("key").agg(
        F.max(F.struct("partition", "offset", "value")).alias("latest"),
        F.sort_array(F.collect_set("partition")).alias("partitions"),
        F.count(F.lit(1)).alias("records"),
    )
    out = OutputCounts()
    for row in latest.collect():
        out.records += int(row["records"])
        partition, offset, value = row["latest"]["partition"], row["latest"]["offset"], row["latest"]["value"]
        key = None if row["key"] is None else bytes(row["key"])
        value = None if value is None else bytes(value)
        if key is None:
            out.malformed.append(MalformedRecord(partition, offset, None, value, "null key"))
            continue
        word = key.decode("utf-8", errors="replace")
        if len(row["partitions"]) > 1:
            out.split_keys[word] = tuple(int(p) for p in row["partitions"])
        if value is None or len(value) != 8:
            reason = "null value" if value is None else f"value of {len(value)} bytes, not an 8-byte long"
            out.malformed.append(MalformedRecord(partition, offset, key, value, reason))
            continue
        out.counts[word] = struct.unpack(">q", value)[0]
    out.malformed.sort(key=lambda m: (m.partition, m.offset))
    return out


def latest_counts(
    spark: SparkSession, bootstrap: str, output_topic: str, *, options: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Each word's latest count in `output_topic` (see `read_output_counts` for what is left out)."""
    return read_output_counts(spark, bootstrap, output_topic, options=options).counts


@dataclass(frozen=True)
class Mismatch:
    """A word whose count in the output differs from the ground truth; None = the word is absent there."""

    word: str
    expected: int | None
    actual: int | None

    @property
    def kind(self) -> str:
        if self.actual is None:
            return "missing"
        if self.expected is None:
            return "extra"
        return "wrong count"

    def __str__(self) -> str:
        if self.actual is None:
            return f"missing      {self.word!r}: expected {self.expected}, not in the output"
        if self.expected is None:
            return f"extra        {self.word!r}: not in the input, output says {self.actual}"
        return f"wrong count  {self.word!r}: expected {self.expected}, output says {self.actual}"


def compare(truth: Mapping[str, int], output: Mapping[str, int]) -> list[Mismatch]:
    """Every word whose count differs, is missing from `output`, or is in `output` only; sorted by word."""
    mismatches = [
        Mismatch(word, truth.get(word), output.get(word))
        for word in truth.keys() | output.keys()
        if truth.get(word) != output.get(word)
    ]
    return sorted(mismatches, key=lambda m: m.word)
