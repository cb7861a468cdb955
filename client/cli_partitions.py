"""``tslog topics add-partitions TOPIC --partitions N``: grow a topic to N partitions in all.

N is the new total, as ``kafka-topics --alter --partitions N``; partitions are never removed.
``cli.py`` registers the subcommand with ``register`` and reports errors as one line.
"""

from __future__ import annotations

from . import Admin


def register(topic_commands, common) -> None:
    """Add the ``add-partitions`` action to ``tslog topics``."""
    grow = topic_commands.add_parser(
        "add-partitions", parents=[common],
        help="grow a topic to N partitions in all (keyed records then map over N)")
    grow.add_argument("topic", help="the topic's name")
    grow.add_argument("--partitions", type=int, required=True, metavar="N",
                      help="the new total number of partitions (larger than the current one)")
    grow.set_defaults(handler=_add_partitions)


def _add_partitions(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        before = len(admin.describe_topic(args.topic).partitions)
        admin.create_partitions({args.topic: args.partitions})
    print(f"topic {args.topic} now has {args.partitions} partitions (was {before})")
