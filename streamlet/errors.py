"""Exceptions users can catch. Each message says what was wrong and what to do about it."""


class StreamletError(Exception):
    """Base class of every error streamlet raises on purpose."""


class ConfigError(StreamletError):
    """A configuration value is unknown, missing or out of range."""


class TopologyError(StreamletError):
    """The topology is malformed (e.g. co-partitioned topics with different partition counts)."""


class MissingTopicError(StreamletError):
    """A topic the application reads or writes does not exist (streamlet creates only its internal topics)."""


class SerializationError(StreamletError):
    """A record could not be decoded or encoded by its serde."""


class StreamsFailure(StreamletError):
    """Processing stopped because an exception handler configured as `fail` was given a record."""


class DeserializationFailure(StreamsFailure):
    """A record could not be decoded and `deserialization_exception_handler` is `fail`."""


class ProcessingFailure(StreamsFailure):
    """User code raised on a record and `processing_exception_handler` is `fail`."""


class ProductionFailure(StreamsFailure):
    """A record's output could not be written and `production_exception_handler` is `fail`."""


class CheckpointError(StreamletError):
    """A checkpoint file is malformed."""


class StateStoreError(StreamletError):
    """A state store could not be opened, or the state directory is locked by another client."""


class StateStoreLockedError(StateStoreError):
    """Another store instance or process holds the lock (RocksDB's, or the state directory's): retry later.

    Nothing is wrong with the data; the holder releases the lock when it closes.
    """


class StateStoreCorruptedError(StateStoreError):
    """The store's files are corrupt, missing or otherwise unreadable: wipe it and restore from the changelog.

    Retrying cannot help; the changelog is the durable copy of the store.
    """


class TaskAssignmentError(StreamletError):
    """A task assignor returned an invalid assignment or could not be loaded."""


class BrokerError(StreamletError):
    """The local Kafka broker could not be installed, started or stopped."""


class ClusterAccessError(StreamletError):
    """A client could not connect to or authenticate with the cluster; the message names the client, the broker
    and the reason (an untrusted certificate, refused credentials, no connection)."""


class NotAuthorizedError(ClusterAccessError):
    """The cluster's ACLs do not allow what the application did; the message names the ACL to add."""
