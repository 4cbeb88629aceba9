"""streamlet's own consumer-group membership (Kafka's ConsumerCoordinator), eager and cooperative (KIP-429).

aiokafka keeps the connections and the fetching; this package owns everything the group protocol decides:
JoinGroup/SyncGroup/Heartbeat/LeaveGroup, static membership, generation fencing, offset commits and fetches,
and which partitions the fetcher may read.
"""
