"""Differential tests against Kafka Streams itself (Java and Maven): the `oracle` tier."""
