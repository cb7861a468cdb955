"""SCRAM user management: DescribeUserScramCredentials (50), AlterUserScramCredentials (51).

The login itself (SaslHandshake, SaslAuthenticate) is the connection's business
(``security/sasl_session.py``); these two are ordinary requests of an authenticated
connection (the authorizer, where it is on, allows them to cluster Describe / Alter only).
They read and change the broker's credential store (``security/credentials.py``: the data
directory of a single node, etcd in a cluster). As in Kafka, an upsertion brings the salted
password, never the password; the broker keeps only the keys derived from it.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode
from tslog.protocol.sasl import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS

from ..security.credentials import ScramCredential
from .services import SecurityApis

log = logging.getLogger("tslog.broker.security")


def handle_describe_user_scram_credentials(services: SecurityApis, body: dict) -> dict:
    users = services.authenticator.store.users
    names = sorted(users) if body["users"] is None else list(dict.fromkeys(body["users"]))
    results = []
    for name in names:
        credentials = users.get(name)
        results.append({
            "name": name,
            "error_code": int(ErrorCode.NONE if credentials else ErrorCode.RESOURCE_NOT_FOUND),
            "credentials": [{"mechanism": mechanism, "iterations": credential.iterations}
                            for mechanism, credential in sorted((credentials or {}).items())],
        })
    return {"results": results}


def _upsertion_problem(entry: dict) -> str | None:
    if not entry["name"]:
        return "a user name must not be empty"
    if entry["mechanism"] not in MECHANISMS:
        return f"unknown mechanism {entry['mechanism']!r}"
    if not MIN_ITERATIONS <= entry["iterations"] <= MAX_ITERATIONS:
        return f"iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}"
    if not entry["salt"] or not entry["salted_password"]:
        return "salt and salted_password must not be empty"
    return None


async def handle_alter_user_scram_credentials(services: SecurityApis, body: dict) -> dict:
    store = services.authenticator.store
    outcome: dict[str, tuple[ErrorCode, str | None]] = {}
    deleted = {entry["name"] for entry in body["deletions"]}
    upserted = {entry["name"] for entry in body["upsertions"]}
    deletions, upsertions = [], []
    for entry in body["deletions"]:
        name = entry["name"]
        if name in upserted:
            outcome[name] = (ErrorCode.DUPLICATE_RESOURCE, "deleted and upserted at once")
        elif store.lookup(name, entry["mechanism"]) is None:
            outcome.setdefault(name, (ErrorCode.RESOURCE_NOT_FOUND,
                                      f"no {entry['mechanism']} credential"))
        else:
            deletions.append((name, entry["mechanism"]))
    for entry in body["upsertions"]:
        name = entry["name"]
        problem = _upsertion_problem(entry)
        if name in deleted:
            outcome[name] = (ErrorCode.DUPLICATE_RESOURCE, "deleted and upserted at once")
        elif problem is not None:
            outcome[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, problem)
        else:
            upsertions.append((name, entry["mechanism"], ScramCredential.derive(
                entry["mechanism"], bytes(entry["salt"]), bytes(entry["salted_password"]),
                entry["iterations"])))
    deletions = [(n, m) for n, m in deletions if n not in outcome]
    upsertions = [(n, m, c) for n, m, c in upsertions if n not in outcome]
    if deletions or upsertions:
        try:
            await store.apply(deletions, upsertions)
        except Exception as exc:  # the disk or etcd: the change did not happen
            log.error("storing SCRAM credentials failed: %s", exc)
            for name in {n for n, _ in deletions} | {n for n, _, _ in upsertions}:
                outcome[name] = (ErrorCode.KAFKA_STORAGE_ERROR, "the credentials could "
                                                                "not be stored")
    for name, mechanism in deletions:
        log.info("SCRAM credential %s of user %s deleted", mechanism, name)
    for name, mechanism, _ in upsertions:
        log.info("SCRAM credential %s of user %s stored", mechanism, name)
    names = list(dict.fromkeys([e["name"] for e in body["deletions"]]
                               + [e["name"] for e in body["upsertions"]]))
    return {"results": [{"name": name, "error_code": int(outcome.get(name, (0, None))[0]),
                         "error_message": outcome.get(name, (0, None))[1]} for name in names]}
