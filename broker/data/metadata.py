"""Metadata: the topics asked for (or every one), each with its partitions' leaders and ISR.

The data service's fourth call, made by both front doors; each translates the kept partition
lists into its wire shape once per list (``partition_lists.KeptPartitions.encoded``).
"""

from __future__ import annotations

from typing import Callable

from tslog.protocol.errors import ErrorCode

from ..cluster.view import ClusterView
from ..metadata import topic_name_problem
from ..topics import TopicManager
from .error_codes import TOPIC_DENIED
from .partition_lists import PartitionLists
from .requests import Metadata, MetadataRequest, TopicLeaders


def metadata(known: TopicManager, lists: PartitionLists, cluster: ClusterView,
             request: MetadataRequest, denied: frozenset,
             visible: Callable[[str], bool] | None) -> Metadata:
    """``denied``: named topics the principal may not describe, answered
    TOPIC_AUTHORIZATION_FAILED whether they exist or not (a name tells nothing). ``visible``:
    for a listing of every topic, which ones to show (None: all)."""
    topics = known.topics
    if request.topics is None:
        names = sorted(topics)
        lists.keep_only(topics)
        if visible is not None:
            names = [name for name in names if visible(name)]
    else:
        names = request.topics
    out = []
    for name in names:
        topic = topics.get(name)
        if name in denied:
            out.append(TopicLeaders(name, TOPIC_DENIED, None))
        elif topic is None:
            code = (ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_problem(name)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            out.append(TopicLeaders(name, int(code), None))
        else:
            out.append(TopicLeaders(name, 0, lists.get(topic)))
    return Metadata(cluster.controller_id(), out, cluster)
