package io.streamlet.semantics;

import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.Options;

/**
 * Kafka Streams' `rocksdb.config.setter` for the oracle's stores: settings of how RocksDB handles its files, none of
 * what a store holds or returns.
 *
 * <p>A case opens and closes every store it builds (a stream join's window stores open a RocksDB instance per
 * segment), so the oracle spends most of a case opening and closing RocksDB. With Kafka Streams' defaults each
 * open preallocates its MANIFEST and log files (fallocate, then ftruncate on close), writes an info log and starts
 * a statistics timer: a fifth of the oracle's CPU time on 300 generated stream-join cases (15.5 -> 12.5 s), with
 * the same output byte for byte without them.
 */
public final class OracleRocksDBSettings implements RocksDBConfigSetter {
    @Override
    public void setConfig(final String storeName, final Options options, final Map<String, Object> configs) {
        options.setAllowFAllocate(false);
        options.setInfoLogLevel(InfoLogLevel.HEADER_LEVEL);
        options.setStatsDumpPeriodSec(0);
        options.setStatsPersistPeriodSec(0);
        options.setSkipStatsUpdateOnDbOpen(true);
        options.setSkipCheckingSstFileSizesOnDbOpen(true);
    }

    @Override
    public void close(final String storeName, final Options options) {}
}
