"""WordCount, the flagship example: the seed's Kafka Streams WordCount, in streamlet's DSL and agents."""
