"""Python's cycle collector in the console process: set up once, before serving.

Why: a page of a 1,000-partition topic builds tens of thousands of short-lived containers
(a row per partition, the client's answer objects), so the collector ran about 40 times a
page at its default threshold (700 allocations), and each collection of an older generation
walked every object the console had made since start: a tenth of a page's time went to
collections that found almost nothing to free. ``gc.freeze`` moves what start-up made (the
web framework, the client, its metadata) to a permanent generation that collections skip,
and a higher first threshold lets a page's garbage die young in a few collections. Cycles
are still collected; only how often changes.

Only ``tslog console`` calls this: an application embedding the client keeps its settings.
"""

from __future__ import annotations

import gc

FIRST_GENERATION_THRESHOLD = 10_000  # allocations between young collections (default 700)
OLDER_GENERATION_THRESHOLD = 10  # young collections per older one (the default)


def tune_for_pages() -> None:
    """Collect start-up's garbage, freeze the rest and raise the young threshold."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(FIRST_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD,
                     OLDER_GENERATION_THRESHOLD)
