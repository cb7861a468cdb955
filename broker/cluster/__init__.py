"""Cluster membership and partition state: who leads each partition, in which epoch, with which
in-sync replicas.

``view.ClusterView`` is the seam between the control plane (etcd-backed, in this package) and
the data path (``broker/replication``): the data path reads partition states, hears about
changes, and proposes ISR changes as compare-and-swap on a version. A single-node broker uses
``view.LocalClusterView`` and needs no etcd at all.

The etcd side: ``etcd.py`` (the only module that speaks to etcd), ``records.py`` (key layout,
values, the watched cache), ``etcd_view.py`` (``EtcdClusterView``: registration, controller
election, watch, ISR compare-and-swap, producer ids), ``controller.py`` (failover rules and
replica assignment). Topics in etcd (``EtcdMetadataStore``) sit beside their interface, in
``broker/metadata/``.
docs/cluster.md describes the keys and the rules.
"""

from .view import ClusterView, LocalClusterView, PartitionState, StaleStateError

__all__ = ["ClusterView", "LocalClusterView", "PartitionState", "StaleStateError"]
