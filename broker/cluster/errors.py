"""Why a clustered broker cannot start or go on, in exceptions that import nothing heavy.

``__main__`` catches ``ClusterError`` to print one clear line and exit 1; keeping these out of
``etcd.py`` means a single-node broker never imports the etcd client library at all.
"""


class ClusterError(Exception):
    """The broker cannot take its place in the cluster."""


class EtcdError(ClusterError):
    """etcd could not be reached or refused the request."""


class DuplicateBrokerError(ClusterError):
    """Another live broker is registered under our node_id."""
