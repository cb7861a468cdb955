"""``tslog mirror``: copy topics from one cluster to another, and move consumer groups over.

A client of two clusters that uses only the public client API (DESIGN.md, "Growing the
product"). ``copier`` copies and resumes, ``headers`` defines the reserved headers,
``lookup`` reads the target back (resume point, exact and time-based offsets),
``checkpoints`` keeps translated group offsets on the target, ``translate`` moves a group,
``metrics`` serves Prometheus metrics. docs/mirror.md is the user's guide.
"""

from .copier import Mirror
from .translate import translate_group

__all__ = ["Mirror", "translate_group"]
