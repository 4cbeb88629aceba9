"""The 3-node local cluster's layout and settings, checked without starting a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.errors import BrokerError
from streamlet.kafka.cluster import LocalCluster, replication_settings


def test_three_nodes_replicate_every_topic_three_times_with_two_in_sync() -> None:
    settings = replication_settings(3)
    assert settings["default.replication.factor"] == "3"
    assert settings["min.insync.replicas"] == "2"
    assert settings["offsets.topic.replication.factor"] == "3"
    assert settings["transaction.state.log.replication.factor"] == "3"
    assert settings["transaction.state.log.min.isr"] == "2"
    # one node: what the single broker has (min ISR 2 on one replica would refuse every acks=all write)
    assert replication_settings(1)["min.insync.replicas"] == "1"


def test_each_node_has_its_ports_and_directory_and_names_the_whole_quorum(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, ports=[19291, 19292, 19293])
    layout = cluster._make_layout()
    assert cluster.bootstrap_servers == "127.0.0.1:19291,127.0.0.1:19292,127.0.0.1:19293"
    controller_ports = {layout.controller_ports[str(i)] for i in (1, 2, 3)}
    assert len(controller_ports) == 3 and not controller_ports & {19291, 19292, 19293}
    voters = {cluster.broker(i).overrides["controller.quorum.voters"] for i in (1, 2, 3)}
    assert len(voters) == 1 and voters.pop().count("@127.0.0.1:") == 3  # one quorum of 3, the same for all
    for node_id in (1, 2, 3):
        broker = cluster.broker(node_id)
        assert broker.directory == tmp_path / f"node-{node_id}"
        assert broker.overrides["node.id"] == str(node_id)
        assert broker.requested_port == layout.ports[str(node_id)]
        assert broker.cluster_id == layout.cluster_id  # formatted as one cluster
        assert broker.heap == "384m"
    # another process (status, stop) reads the same layout
    assert LocalCluster(tmp_path).broker(2).requested_port == 19292


def test_a_node_that_does_not_exist_is_named(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path)
    with pytest.raises(BrokerError, match="start it first"):
        cluster.broker(1)
    cluster._make_layout()
    with pytest.raises(BrokerError, match="no node 4"):
        cluster.broker(4)
    assert cluster.status() == {}  # nothing running
    with pytest.raises(BrokerError, match="node 1 is not running"):
        cluster.kill(1)


def test_the_command_refuses_what_a_cluster_does_not_support_before_starting_anything(tmp_path: Path) -> None:
    from streamlet.cli import main

    LocalCluster(tmp_path, nodes=3, security="sasl_ssl")._make_layout()
    with pytest.raises(SystemExit, match="a cluster of 3 nodes, not 5"):
        main(["broker", "start", "--brokers", "5", "--dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="holds a sasl_ssl cluster, not ssl"):
        main(["broker", "start", "--brokers", "3", "--security", "ssl", "--dir", str(tmp_path)])
    assert main(["broker", "status", "--dir", str(tmp_path)]) == 1  # a cluster's directory, no node running
    assert not (tmp_path / "node-1" / "broker.json").exists()


def test_a_secured_clusters_nodes_share_one_ca_and_user_set_and_keep_their_security(tmp_path: Path) -> None:
    with pytest.raises(BrokerError, match="security='tls'"):
        LocalCluster(tmp_path, security="tls")
    LocalCluster(tmp_path, security="sasl_ssl")._make_layout()
    cluster = LocalCluster(tmp_path)  # another process: the security comes from the layout
    for node_id in (1, 2, 3):
        broker = cluster.broker(node_id)
        assert broker.security == "sasl_ssl"
        assert broker.tls_dir == tmp_path / "tls"


def test_racks_are_each_nodes_broker_rack_and_outlive_the_process_that_set_them(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, racks=["az-1", "az-2", "az-3"])
    cluster._make_layout()
    assert [cluster.broker(i).overrides["broker.rack"] for i in (1, 2, 3)] == ["az-1", "az-2", "az-3"]
    assert LocalCluster(tmp_path).broker(3).overrides["broker.rack"] == "az-3"  # a restart from the layout
    plain = LocalCluster(tmp_path / "plain")
    plain._make_layout()
    assert "broker.rack" not in plain.broker(1).overrides
    with pytest.raises(BrokerError, match="one non-empty rack per node"):
        LocalCluster(tmp_path, racks=["az-1"])


def test_the_command_wants_one_rack_per_node(tmp_path: Path) -> None:
    from streamlet.cli import main

    with pytest.raises(SystemExit, match="--racks names 2 racks for 3 nodes"):
        main(["broker", "start", "--brokers", "3", "--racks", "az-1,az-2", "--dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="one per node of a cluster"):  # a single broker takes no racks
        main(["broker", "start", "--racks", "az-1", "--dir", str(tmp_path / "single")])
