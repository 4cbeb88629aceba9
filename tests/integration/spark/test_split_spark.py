"""The Spark expression for WordCount's split against plain Python and against Java itself (no Kafka)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.jvm import SHORT_LIVED
from tests.support.wordcount_reference import TRICKY_LINES, java_split, java_wordcount

pytest.importorskip("pyspark")
pytestmark = pytest.mark.integration  # a Spark JVM in local mode

from streamlet.spark.session import cached_connector_jars, get_spark  # noqa: E402
from streamlet.spark.wordcount import decode_utf8_column, ground_truth_dataframe, split_words_column  # noqa: E402

# (raw value, what Java's StringDeserializer makes of it): malformed UTF-8 becomes U+FFFD, a separator
RAW_VALUES = [line.encode() for line in TRICKY_LINES] + [b"ab\xffcd", b"\xff", b"\xc3", b"ok\xe2\x82"]


@pytest.fixture(scope="module")
def spark():
    # No Kafka here; but with the connector already cached, the session the Kafka tests need later in the same
    # run is made now (no network), sparing them a second JVM start.
    return get_spark(kafka=cached_connector_jars() is not None)


def spark_split(spark, values: list[bytes | None]) -> list[list[str] | None]:
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, value binary")
    rows = df.select("i", split_words_column(decode_utf8_column("value")).alias("words")).orderBy("i").collect()
    return [None if row["words"] is None else list(row["words"]) for row in rows]


def test_split_matches_plain_python(spark) -> None:
    got = spark_split(spark, RAW_VALUES)
    for raw, words in zip(RAW_VALUES, got, strict=True):
        assert words == java_split(raw.decode("utf-8", errors="replace")), raw


def test_edge_cases_spelled_out(spark) -> None:
    want = {"": [""], "!!!": [], " a b ": ["", "a", "b"], "a!!!": ["a"], "café": ["caf"], "a_b-c1": ["a_b", "c1"]}
    got = spark_split(spark, [line.encode() for line in want])
    assert dict(zip(want, got, strict=True)) == want


def test_null_value_gives_no_words(spark) -> None:
    assert spark_split(spark, [None]) == [None]
    df = spark.createDataFrame([(None,), (b"a a",)], "value binary")
    assert {r["word"]: r["count"] for r in ground_truth_dataframe(df).collect()} == {"a": 2}


def test_ground_truth_dataframe_counts(spark) -> None:
    df = spark.createDataFrame([(line.encode(),) for line in TRICKY_LINES], "value binary")
    got = {r["word"]: r["count"] for r in ground_truth_dataframe(df).collect()}
    assert got == java_wordcount(TRICKY_LINES)


_JAVA_ORACLE = """
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class SplitOracle {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            String text = new String(hex.parseHex(line), StandardCharsets.UTF_8);
            List<String> out = new ArrayList<>();
            for (String word : text.toLowerCase(Locale.getDefault()).split("\\\\W+")) {
                out.add("<" + hex.formatHex(word.getBytes(StandardCharsets.UTF_8)) + ">");
            }
            System.out.println(String.join(",", out));
        }
    }
}
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java")
def test_split_matches_java_itself(spark, tmp_path: Path) -> None:
    source = tmp_path / "SplitOracle.java"
    source.write_text(_JAVA_ORACLE)
    (tmp_path / "lines.hex").write_text("".join(v.hex() + "\n" for v in RAW_VALUES))
    run = subprocess.run(
        ["java", *SHORT_LIVED, "-Duser.language=en", "-Duser.country=US", str(source), str(tmp_path / "lines.hex")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    java = [
        [bytes.fromhex(w.strip("<>")).decode() for w in line.split(",")] if line else []
        for line in run.stdout.splitlines()
    ]
    assert len(java) == len(RAW_VALUES)
    assert spark_split(spark, RAW_VALUES) == java
