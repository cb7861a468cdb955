"""Cluster membership and partition state: who leads each partition, in which epoch, with which
in-sync replicas.

``view.ClusterView`` is the seam between the control plane (etcd-backed, in this package) and
the data path (``broker/replication``): the data path reads partition states, hears about
changes, and proposes ISR changes as compare-and-swap on a version. A single-node broker uses
``view.LocalClusterView`` and needs no etcd at all.
"""

from .view import ClusterView, LocalClusterView, PartitionState, StaleStateError

__all__ = ["ClusterView", "LocalClusterView", "PartitionState", "StaleStateError"]
