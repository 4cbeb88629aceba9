"""Task assignment. Pure modules (no I/O): `api` (KIP-924 shape), `client_state`, `high_availability`
(Kafka Streams' HighAvailabilityTaskAssignor), `thread_assignment`, `registry`, `simulation`.
Edge modules (aiokafka glue): `partition_assignor`, `protocol`."""
