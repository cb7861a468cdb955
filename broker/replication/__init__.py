"""Replication's data path: what a broker does with the partition states the cluster view
gives it.

``partition.py`` (one partition's role on this broker: leader epochs, high watermark, ISR
tracking), ``manager.py`` (``ReplicaManager``: applies every state change to the logs and
fetchers, shrinks lagging ISRs) and ``fetcher.py`` (followers copying their leaders' batches
byte for byte). A package of its own so the installed wheel carries it like the others.
"""
