"""``tslog partitions``: move partitions between brokers (kafka-reassign-partitions' verbs).

    tslog partitions reassign --plan plan.json [--wait]     # Kafka's JSON plan format
    tslog partitions reassign --move-broker N --to M [--topic T] [--wait]
    tslog partitions reassign --cancel --plan plan.json
    tslog partitions reassign --generate --brokers 2,3,4 [--topic T ...]   # prints a plan
    tslog partitions reassignments [--format json]          # the moves under way, progress
    tslog partitions elect-leaders [--topic T ...]          # back to the preferred replicas

Why plans as Kafka writes them (``{"version": 1, "partitions": [{"topic", "partition",
"replicas"}]}``): operators keep the ones they made for Kafka, and ``--generate``'s output
is one. A move returns once it is recorded in etcd; ``--wait`` waits until the partitions
are on their new brokers, all in sync. ``--generate`` places each topic's replicas
round-robin over the given brokers (the same rule as a new topic's placement), so every
broker ends up with an equal share of replicas and of preferred leaders.
"""

from __future__ import annotations

import json
import sys
import time

from . import Admin, TopicPartition
from .cli_common import CommandError, UsageError
from .errors import ElectionNotNeededError

_WAIT_POLL_S = 0.5


def register(commands, common) -> None:
    """Add ``tslog partitions ...`` to the ``tslog`` parser's subcommands."""
    partitions = commands.add_parser("partitions", help="move partitions between brokers")
    actions = partitions.add_subparsers(metavar="ACTION")
    reassign = actions.add_parser("reassign", parents=[common],
                                  help="move partitions to new replica sets (a plan)")
    reassign.add_argument("--plan", metavar="FILE", help="a plan in Kafka's JSON format")
    reassign.add_argument("--move-broker", type=int, metavar="N",
                          help="move every replica off broker N (to --to M)")
    reassign.add_argument("--to", type=int, metavar="M", help="the broker that takes them")
    reassign.add_argument("--topic", action="append", default=None, metavar="T",
                          help="only this topic (repeatable; default: every topic)")
    reassign.add_argument("--cancel", action="store_true",
                          help="cancel the moves of the plan's partitions")
    reassign.add_argument("--generate", action="store_true",
                          help="print a balanced plan over --brokers; move nothing")
    reassign.add_argument("--brokers", metavar="IDS", help="comma-separated broker ids")
    reassign.add_argument("--wait", action="store_true",
                          help="return once every partition moved is on its new brokers")
    reassign.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                          help="how long --wait waits (default: %(default)s)")
    reassign.set_defaults(handler=_reassign, check=_check)
    listing = actions.add_parser("reassignments", parents=[common],
                                 help="the moves under way and how far the new replicas are")
    listing.add_argument("--format", choices=["text", "json"], default="text",
                         help="a table or one JSON object per partition (default: %(default)s)")
    listing.set_defaults(handler=_list)
    elect = actions.add_parser("elect-leaders", parents=[common],
                               help="make each partition's preferred replica its leader")
    elect.add_argument("--topic", action="append", default=None, metavar="T",
                       help="only this topic (repeatable; default: every partition)")
    elect.set_defaults(handler=_elect)


def _check(args) -> str | None:
    """What argparse cannot say: exactly one way to name the moves."""
    ways = sum(1 for way in (args.plan, args.move_broker is not None, args.generate) if way)
    if ways != 1:
        return "give one of --plan FILE, --move-broker N --to M, --generate --brokers IDS"
    if (args.move_broker is None) != (args.to is None):
        return "--move-broker N needs --to M"
    if args.generate and not args.brokers:
        return "--generate needs --brokers IDS"
    if args.cancel and not args.plan:
        return "--cancel needs --plan FILE"
    return None


def read_plan(path: str) -> dict[TopicPartition, list[int]]:
    """{TopicPartition: replicas} of a Kafka reassignment JSON file; UsageError if malformed."""
    try:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
        return {TopicPartition(str(p["topic"]), int(p["partition"])):
                [int(b) for b in p["replicas"]] for p in document["partitions"]}
    except OSError as exc:
        raise UsageError(f"cannot read the plan {path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a reassignment plan ({{\"version\": 1, "
                         f"\"partitions\": [{{\"topic\", \"partition\", \"replicas\"}}]}}): "
                         f"{exc!r}") from None


def plan_json(plan: dict[TopicPartition, list[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": replicas}
        for tp, replicas in sorted(plan.items())]})


def generated(topics: dict, brokers: list[int]) -> dict[TopicPartition, list[int]]:
    """Each topic's replicas round-robin over ``brokers``, keeping its replication factor:
    partition p's preferred leader is the broker after partition p-1's."""
    ordered = sorted(brokers)
    plan = {}
    for name, description in sorted(topics.items()):
        start = sum(name.encode()) % len(ordered)
        for info in description.partitions:
            factor = len(info.replicas)
            if factor > len(ordered):
                raise CommandError(f"topic {name} has {factor} replicas per partition; "
                                   f"{len(ordered)} brokers cannot hold them")
            plan[TopicPartition(name, info.partition)] = [
                ordered[(start + info.partition + i) % len(ordered)] for i in range(factor)]
    return plan


def moved_off(topics: dict, node: int, to: int) -> dict[TopicPartition, list[int]]:
    """Every partition with a replica on ``node``, with ``to`` in its place."""
    plan = {}
    for name, description in sorted(topics.items()):
        for info in description.partitions:
            if node not in info.replicas:
                continue
            if to in info.replicas:
                raise CommandError(f"{name}-{info.partition} has replicas on both brokers "
                                   f"{node} and {to}; move it with a plan")
            plan[TopicPartition(name, info.partition)] = [
                to if b == node else b for b in info.replicas]
    return plan


def _topics(admin: Admin, names: list[str] | None) -> dict:
    described = admin.describe_topics()
    if names is None:
        return described
    missing = sorted(set(names) - set(described))
    if missing:
        raise CommandError(f"no topic {missing[0]!r}")
    return {name: described[name] for name in names}


def _reassign(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        if args.generate:
            brokers = [int(b) for b in args.brokers.split(",") if b.strip()]
            print(plan_json(generated(_topics(admin, args.topic), brokers)))
            return
        if args.plan:
            plan = read_plan(args.plan)
        else:
            plan = moved_off(_topics(admin, args.topic), args.move_broker, args.to)
        if args.cancel:
            admin.alter_partition_reassignments({tp: None for tp in plan})
            print(f"cancelled the moves of {len(plan)} partitions")
            return
        execute(admin, plan, args.wait, args.timeout)


def execute(admin: Admin, plan: dict[TopicPartition, list[int]], wait: bool,
            timeout_s: float) -> None:
    """Start every move of ``plan``, print them, and with ``wait`` wait until they are done."""
    current = {TopicPartition(name, info.partition): info.replicas
               for name, description in admin.describe_topics().items()
               for info in description.partitions}
    for tp, replicas in sorted(plan.items()):
        print(f"{tp.topic}-{tp.partition}: {current.get(tp)} -> {replicas}")
    admin.alter_partition_reassignments(plan)
    if not wait:
        print(f"started {len(plan)} moves; follow them with `tslog partitions reassignments`")
        return
    deadline = time.monotonic() + timeout_s
    while True:
        left = set(admin.list_partition_reassignments(list(plan)))
        if not left:
            print(f"moved {len(plan)} partitions")
            return
        if time.monotonic() > deadline:
            raise CommandError(f"{len(left)} moves still under way after {timeout_s:g} s")
        time.sleep(_WAIT_POLL_S)


def _list(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        listed = admin.list_partition_reassignments()
    if args.format == "json":
        for tp, r in listed.items():
            print(json.dumps({"topic": tp.topic, "partition": tp.partition,
                              "replicas": r.replicas, "adding": r.adding_replicas,
                              "removing": r.removing_replicas, "leader": r.leader,
                              "isr": r.isr, "offsets_behind": {
                                  str(b): n for b, n in r.offsets_behind().items()}}))
        return
    if not listed:
        print("no reassignment under way")
        return
    out = sys.stdout
    out.write("TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING\tLEADER\tISR\tBEHIND\n")
    for tp, r in listed.items():
        behind = ",".join(f"{b}:{'?' if n is None else n}" for b, n in
                          r.offsets_behind().items()) or "-"
        out.write(f"{tp.topic}\t{tp.partition}\t{_ids(r.replicas)}\t{_ids(r.adding_replicas)}"
                  f"\t{_ids(r.removing_replicas)}\t{r.leader}\t{_ids(r.isr)}\t{behind}\n")


def _ids(brokers: list[int]) -> str:
    return ",".join(str(b) for b in brokers) or "-"


def _elect(args) -> None:
    with Admin(args.bootstrap, security=args.security) as admin:
        partitions = None
        if args.topic is not None:
            partitions = [TopicPartition(name, info.partition)
                          for name, description in _topics(admin, args.topic).items()
                          for info in description.partitions]
        results = admin.elect_leaders(partitions)
    elected = [tp for tp, error in results.items() if error is None]
    for tp, error in sorted(results.items()):
        if error is not None and not isinstance(error, ElectionNotNeededError):
            print(f"{tp.topic}-{tp.partition}: not elected: {error}")
    print(f"preferred leaders elected for {len(elected)} partitions")
