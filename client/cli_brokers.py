"""``tslog brokers``: the cluster's brokers, and taking one out for good.

    tslog brokers list
    tslog brokers decommission N [--timeout SECONDS]

Decommissioning computes a plan that moves every replica off broker N, each to the live
broker (not already a replica of that partition) holding the fewest replicas at that point,
so the load N carried spreads evenly; it starts the moves, waits until every partition is
on its new brokers, all in sync, and then says that N may be stopped. Nothing else changes:
N keeps running (and may still be the controller) until the operator stops it.
"""

from __future__ import annotations

from collections import Counter

from . import Admin, TopicPartition
from .cli_common import CommandError
from .cli_reassign import execute


def register(commands, common) -> None:
    """Add ``tslog brokers ...`` to the ``tslog`` parser's subcommands."""
    brokers = commands.add_parser("brokers", help="list brokers, decommission one")
    actions = brokers.add_subparsers(metavar="ACTION")
    listing = actions.add_parser("list", parents=[common],
                                 help="live brokers: id, address, replicas, leaders")
    listing.set_defaults(handler=_list)
    gone = actions.add_parser("decommission", parents=[common],
                              help="move every replica off a broker, then say it may stop")
    gone.add_argument("node", type=int, metavar="N", help="the broker's node id")
    gone.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                      help="how long to wait for the moves (default: %(default)s)")
    gone.set_defaults(handler=_decommission)


def decommission_plan(topics: dict, live: list[int], node: int
                      ) -> dict[TopicPartition, list[int]]:
    """Every partition with a replica on ``node``, that replica replaced by the least loaded
    live broker that is not a replica of it yet (ties: the lowest id)."""
    load = Counter({b: 0 for b in live if b != node})
    for description in topics.values():
        for info in description.partitions:
            load.update(b for b in info.replicas if b in load)
    plan = {}
    for name, description in sorted(topics.items()):
        for info in description.partitions:
            if node not in info.replicas:
                continue
            free = sorted((n, b) for b, n in load.items() if b not in info.replicas)
            if not free:
                raise CommandError(f"{name}-{info.partition} has {len(info.replicas)} "
                                   f"replicas and no other live broker can take one")
            chosen = free[0][1]
            load[chosen] += 1
            plan[TopicPartition(name, info.partition)] = [
                chosen if b == node else b for b in info.replicas]
    return plan


def _decommission(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        live, _ = admin.describe_cluster()
        if args.node not in live:
            raise CommandError(f"broker {args.node} is not registered (not running); its "
                               f"partitions can be moved with `tslog partitions reassign`")
        plan = decommission_plan(admin.describe_topics(), sorted(live), args.node)
        if plan:
            execute(admin, plan, True, args.timeout)
        left = [f"{name}-{info.partition}" for name, description in
                admin.describe_topics().items() for info in description.partitions
                if args.node in info.replicas]
    if left:
        raise CommandError(f"broker {args.node} still holds {', '.join(left)}")
    print(f"broker {args.node} holds no replicas: it is safe to stop it")


def _list(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        live, controller = admin.describe_cluster()
        topics = admin.describe_topics()
    replicas, leaders = Counter(), Counter()
    for description in topics.values():
        for info in description.partitions:
            replicas.update(info.replicas)
            leaders[info.leader] += 1
    print("NODE\tADDRESS\tREPLICAS\tLEADERS\tCONTROLLER")
    for node, (host, port) in sorted(live.items()):
        print(f"{node}\t{host}:{port}\t{replicas[node]}\t{leaders[node]}\t"
              f"{'yes' if node == controller else ''}")
