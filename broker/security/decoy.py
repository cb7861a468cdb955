"""The made-up SCRAM credential of a name that has none, indistinguishable from a real one.

Why: SCRAM's server-first message shows the salt and iteration count of the credential the
login is checked against. If an unknown name got other parameters than a real user (issue
38: 4,096 iterations against the 8,192 of users made with the defaults), or a salt that
changed from one try, one restart or one broker to the next, a client could list which
users exist without knowing a password.

So a decoy has exactly what a user made with the defaults has: ``DECOY_ITERATIONS`` (the
clients' default, ``Admin.create_user`` and ``tslog users create``, and the bootstrap file's),
a 16-byte salt (scramp's and the client's size), and keys of the mechanism's digest size. Its
salt is HMAC-SHA-256(secret, mechanism and name): the same name always gets the same salt,
on every broker of a cluster and across restarts, because the secret is kept where the
credentials are (``scram_decoy_secret`` beside the single node's credentials file, mode
0600; a key in etcd for a cluster), and a name's salt tells nothing of another's. Its keys
are random: no password matches them, and the exchange fails at the proof, exactly where a
wrong password fails; the lookup costs one HMAC, which is the same order as a dict hit.
"""

from __future__ import annotations

import hashlib
import hmac
import os

DECOY_ITERATIONS = 8192
SALT_BYTES = 16
SECRET_BYTES = 32
_DIGEST_BYTES = {"SCRAM-SHA-256": hashlib.sha256().digest_size,
                 "SCRAM-SHA-512": hashlib.sha512().digest_size}


def new_secret() -> bytes:
    return os.urandom(SECRET_BYTES)


def decoy_credential(secret: bytes, mechanism: str,
                     username: str) -> tuple[bytes, bytes, bytes, int]:
    """scramp's (salt, stored key, server key, iterations) for a name with no credential."""
    salt = hmac.digest(secret, f"{mechanism}\0{username}".encode(), "sha256")[:SALT_BYTES]
    size = _DIGEST_BYTES[mechanism]
    return salt, os.urandom(size), os.urandom(size), DECOY_ITERATIONS
