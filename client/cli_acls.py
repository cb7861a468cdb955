"""``tslog acls``: ACLs from the command line (kafka-acls' options, tslog's verbs).

    tslog acls add --allow-principal User:alice --operation Read --topic a --prefixed
    tslog acls add --deny-principal User:* --operation Write --topic payments
    tslog acls list [--topic T | --group G | --cluster] [--principal User:alice]
    tslog acls remove --allow-principal User:alice --operation Read --topic a --prefixed

Why a module of its own: ``cli.py`` keeps topics, produce and consume; this one registers
its commands there (``add_acls_commands``). ``add`` and ``remove`` take the same options:
every principal given times every operation, on one resource. ``remove`` without
``--operation`` removes every operation's ACL of those principals on the resource, and
without a principal, everyone's. ``list --topic T`` shows every ACL that applies to T (its
literal, ``*`` and the prefixes of T), as Kafka's MATCH filter; with ``--prefixed`` only the
prefix ACL named T.
"""

from __future__ import annotations

import argparse

from tslog.protocol.acl_schemas import OPERATIONS

from . import Admin
from ._types import AclBinding, AclBindingFilter
from .cli_common import UsageError

CLUSTER_RESOURCE = "kafka-cluster"


def _resource_options(parser: argparse.ArgumentParser, required: bool) -> None:
    resource = parser.add_mutually_exclusive_group(required=required)
    resource.add_argument("--topic", help="the topic (or, with --prefixed, the topic prefix); "
                                          "'*' is every topic")
    resource.add_argument("--group", help="the consumer group (or, with --prefixed, the "
                                          "group prefix); '*' is every group")
    resource.add_argument("--cluster", action="store_true",
                          help="the cluster itself (ACL management, creating topics, ...)")
    parser.add_argument("--prefixed", action="store_true",
                        help="the name is a prefix: the ACL applies to every resource whose "
                             "name starts with it (Kafka's --resource-pattern-type prefixed)")


def _change_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                        help="User:<name> (or User:* for everyone) to allow; repeatable")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                        help="User:<name> (or User:* for everyone) to deny; repeatable")
    parser.add_argument("--operation", action="append", default=[], choices=OPERATIONS,
                        help="the operation allowed or denied; repeatable")
    parser.add_argument("--host", default=None, metavar="ADDRESS",
                        help="only for clients connecting from this IP address (Kafka's "
                             "--allow-host/--deny-host); default: any host")
    _resource_options(parser, required=True)


def add_acls_commands(commands, common) -> None:
    """Add ``tslog acls ...`` to the ``tslog`` parser's subcommands."""
    acls = commands.add_parser("acls", help="add, list and remove ACLs (authorization)")
    actions = acls.add_subparsers(metavar="ACTION")
    add = actions.add_parser("add", parents=[common], help="add ACLs")
    _change_options(add)
    add.set_defaults(handler=_add)
    remove = actions.add_parser("remove", parents=[common],
                                help="remove ACLs (every operation unless --operation)")
    _change_options(remove)
    remove.set_defaults(handler=_remove)
    listing = actions.add_parser("list", parents=[common],
                                 help="list ACLs (all, or those applying to one resource)")
    _resource_options(listing, required=False)
    listing.add_argument("--principal", default=None,
                         help="only the ACLs of this principal (User:<name> or User:*)")
    listing.set_defaults(handler=_list)


def _resource(args) -> tuple[str | None, str | None]:
    if args.topic is not None:
        return "topic", args.topic
    if args.group is not None:
        return "group", args.group
    if args.cluster:
        return "cluster", CLUSTER_RESOURCE
    return None, None


def _principals(args) -> list[tuple[str, str]]:
    return ([(p, "allow") for p in args.allow_principal]
            + [(p, "deny") for p in args.deny_principal])


def _add(args) -> None:
    kind, name = _resource(args)
    if not _principals(args) or not args.operation:
        raise UsageError("acls add needs --allow-principal or --deny-principal, and "
                         "--operation")
    pattern = "prefixed" if args.prefixed else "literal"
    bindings = [AclBinding(principal, kind, name, operation, permission, pattern,
                           args.host or "*")
                for principal, permission in _principals(args) for operation in args.operation]
    with Admin(args.bootstrap, security=args.security) as admin:
        admin.create_acls(bindings)
    for binding in bindings:
        print(f"added: {_line(binding)}")


def _remove(args) -> None:
    kind, name = _resource(args)
    pattern = "prefixed" if args.prefixed else "literal"
    operations = args.operation or [None]
    principals = _principals(args) or [(None, None)]
    filters = [AclBindingFilter(principal, kind, name, operation, permission, pattern,
                                args.host)
               for principal, permission in principals for operation in operations]
    with Admin(args.bootstrap, security=args.security) as admin:
        removed = admin.delete_acls(filters)
    for binding in removed:
        print(f"removed: {_line(binding)}")
    if not removed:
        print("no ACL matched")


def _list(args) -> None:
    kind, name = _resource(args)
    pattern = None if name is None else ("prefixed" if args.prefixed else "match")
    with Admin(args.bootstrap, security=args.security) as admin:
        bindings = admin.describe_acls(AclBindingFilter(args.principal, kind, name,
                                                        pattern_type=pattern))
    for binding in bindings:
        print(_line(binding))


def _line(b: AclBinding) -> str:
    """``User:alice allow Read topic a (prefixed)``, then `` from 10.0.0.7`` for a binding
    that names a host."""
    where = "" if b.host == "*" else f" from {b.host}"
    return (f"{b.principal} {b.permission} {b.operation} {b.resource_type} "
            f"{b.resource_name} ({b.pattern_type}){where}")
