"""Spark Structured Streaming WordCount from PySpark: Kafka source and sink, RocksDB state store.

Usage: spark_wordcount.py BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR SPARK_VERSION
The connector (org.apache.spark:spark-sql-kafka-0-10_2.13, same version as pyspark) comes from bench/spark's
Maven build and is passed as spark.jars: spark.jars.packages resolves with Ivy, which does not reach Maven
Central from this machine (it ignores the Maven settings' proxy).
Words: Spark's split() keeps trailing empty strings (limit -1) where Java's String.split drops them, so the
line's trailing separators are removed first; the corpus has no line without a word character, where the
two would still differ.
"""

import re
import sys
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

CONNECTOR_LIB = Path(__file__).resolve().parents[1] / "spark" / "target" / "lib"


def connector_jars() -> str:
    """The jars of bench/spark (Maven-resolved connector) that pyspark does not ship itself."""
    shipped = {re.sub(r"-\d[\w.-]*\.jar$", "", j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = [
        str(j) for j in sorted(CONNECTOR_LIB.glob("*.jar")) if re.sub(r"-\d[\w.-]*\.jar$", "", j.name) not in shipped
    ]
    if not any("spark-sql-kafka" in j for j in jars):
        sys.exit(f"Spark's Kafka connector is missing in {CONNECTOR_LIB}: run `mvn -q -B package` in bench/spark")
    return ",".join(jars)


def main() -> None:
    bootstrap, app_id, input_topic, output_topic, state_dir, spark_version = sys.argv[1:7]
    spark = (
        SparkSession.builder.appName(app_id)
        .master("local[2]")
        .config("spark.jars", connector_jars())
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", "6")
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    lines = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", input_topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    text = F.regexp_replace(F.lower(F.col("value").cast("string")), r"\W+$", "")
    words = lines.select(F.explode(F.split(text, r"\W+")).alias("word"))
    counts = words.groupBy("word").count()
    out = counts.select(
        F.col("word").cast("binary").alias("key"), F.unhex(F.lpad(F.hex(F.col("count")), 16, "0")).alias("value")
    )
    query = (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output_topic)
        .option("checkpointLocation", f"{state_dir}/checkpoint")
        .outputMode("update")
        .start()
    )
    print("SPARK_QUERY_STARTED", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
