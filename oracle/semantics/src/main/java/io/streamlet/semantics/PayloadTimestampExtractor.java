package io.streamlet.semantics;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * The "payload" extractor of the case language (tests/support/dsl_spec.py, payload_timestamp): a string
 * value "@<digits>" is its own timestamp, "drop" gives -1 (Kafka skips the record), "now" gives the
 * partition time, and anything else keeps the record's timestamp.
 */
public final class PayloadTimestampExtractor implements TimestampExtractor {
    @Override
    public long extract(final ConsumerRecord<Object, Object> record, final long partitionTime) {
        final Object value = record.value();
        if (value instanceof String) {
            final String s = (String) value;
            if (s.length() > 1 && s.charAt(0) == '@' && s.substring(1).chars().allMatch(c -> c >= '0' && c <= '9')) {
                return Long.parseLong(s.substring(1));
            }
            if (s.equals("drop")) {
                return -1L;
            }
            if (s.equals("now")) {
                return partitionTime;
            }
        }
        return record.timestamp();
    }
}
