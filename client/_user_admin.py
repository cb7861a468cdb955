"""SCRAM user management for ``AsyncAdmin``: create (or rotate), delete, list, describe.

As in Kafka, ``create_user`` salts and hashes the password here, in the client (SCRAM's
Hi with a fresh random salt, ``tslog.protocol.sasl.salted_password``), and sends only the
salt and the salted password: the plain password never crosses the wire and never reaches
the broker, which keeps only the keys derived from it. The broker's answers carry a code
per user; a failure raises that code's exception (``UnacceptableCredentialError``,
``ResourceNotFoundError`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from tslog.protocol.messages import ApiKey
from tslog.protocol.sasl import salted_password

from .errors import error_for


@dataclass(frozen=True)
class ScramCredentialInfo:
    """What the broker tells about one credential of a user (never its salt or keys)."""

    mechanism: str
    iterations: int


class UserAdmin:
    """The user requests, sent to any broker (every broker has the cluster's users)."""

    def __init__(self, cluster) -> None:
        self._cluster = cluster

    async def _alter(self, deletions: list[dict], upsertions: list[dict]) -> None:
        body = await self._cluster.request(None, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, {
            "deletions": deletions, "upsertions": upsertions})
        for result in body["results"]:
            if result["error_code"]:
                raise error_for(result["error_code"])(
                    f"user {result['name']!r}: {result['error_message'] or 'refused'}")

    async def create_user(self, name: str, password: str, mechanism: str,
                          iterations: int) -> None:
        salt, salted = salted_password(mechanism, password, iterations)
        await self._alter([], [{"name": name, "mechanism": mechanism, "iterations": iterations,
                                "salt": salt, "salted_password": salted}])

    async def delete_user(self, name: str, mechanism: str | None) -> None:
        if mechanism is None:
            described = await self.describe_users([name])
            mechanisms = [credential.mechanism for credential in described[name]]
        else:
            mechanisms = [mechanism]
        await self._alter([{"name": name, "mechanism": m} for m in mechanisms], [])

    async def describe_users(self, names: list[str] | None
                             ) -> dict[str, list[ScramCredentialInfo]]:
        body = await self._cluster.request(None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                           {"users": names})
        users = {}
        for result in body["results"]:
            if result["error_code"]:
                raise error_for(result["error_code"])(f"user {result['name']!r} has no "
                                                      "SCRAM credentials")
            users[result["name"]] = [ScramCredentialInfo(c["mechanism"], c["iterations"])
                                     for c in result["credentials"]]
        return users
