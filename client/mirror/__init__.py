"""``tslog mirror``: copy topics from one cluster to another, and move consumer groups over.

A client of two clusters that uses only the public client API (DESIGN.md, "Growing the
product"). ``copier`` copies and resumes, ``headers`` defines the reserved headers,
``lookup`` reads the target back (resume point, exact and time-based offsets),
``source_time`` finds target offsets by source LogAppendTime (failover by time),
``checkpoints`` keeps translated group offsets on the target, ``translate`` moves a group,
``metrics`` serves Prometheus metrics. docs/mirror.md is the user's guide.
"""

from .copier import Mirror
from .lookup import reader
from .source_time import offsets_for_source_times
from .translate import translate_group

__all__ = ["Mirror", "offsets_for_source_times", "reader", "translate_group"]
