"""TLS to etcd (``etcd_ca_file``, ``etcd_cert_file``, ``etcd_key_file``) for the aetcd client.

Why a subclass: aetcd 1.x always dials ``grpc.aio.insecure_channel`` and takes no
credentials, so ``connect`` is repeated here with ``grpc.aio.secure_channel`` and gRPC's own
``ssl_channel_credentials`` (gRPC does the TLS: verification of etcd's certificate against
the CA file, including its host name or IP address, and the client certificate for etcd's
``--client-cert-auth``). Everything after the channel is built is aetcd's own code path.
The files are read once, when the client is made: a missing or unreadable one is an
``EtcdError`` naming the setting, at start.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

import aetcd
import grpc
from aetcd import rpc, watcher
# aetcd's own translation of gRPC errors into its exceptions, wrapped round its ``connect``;
# it has no public form, and ``TlsClient.connect`` repeats that method, so it takes the
# decorator too (here only; tests/test_tidy.py's underscore rule covers project modules).
from aetcd.client import _handle_errors

from .errors import EtcdError


class EtcdTls(NamedTuple):
    """PEM paths; ``ca_file`` None = the system's CAs, ``cert_file`` None = no client cert."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials from the files. Raises EtcdError."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_file, "etcd_ca_file"),
            private_key=_read(self.key_file, "etcd_key_file"),
            certificate_chain=_read(self.cert_file, "etcd_cert_file"))


def _read(path: str | None, setting: str) -> bytes | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise EtcdError(f"cannot read {setting} {path}: {exc.strerror}") from None


class TlsClient(aetcd.Client):
    """``aetcd.Client`` over a TLS channel."""

    def __init__(self, tls: EtcdTls, *, server_name: str, **kwargs) -> None:
        """``server_name``: the name (or IP) every member's certificate is checked against.
        With several endpoints the target is one ``ipv4:a,b,c`` URI, whose default authority
        is no host at all, so it is given explicitly: the first endpoint's host."""
        self._credentials = tls.credentials()
        options = dict(kwargs.pop("options", None) or {})
        options["grpc.ssl_target_name_override"] = server_name
        super().__init__(options=options, **kwargs)

    @_handle_errors
    async def connect(self) -> None:
        """aetcd's ``Client.connect`` (1.x), with a secure channel instead of an insecure one
        and without its username/password step (tslog does not pass credentials)."""
        if self._connected.is_set():
            return
        if self._is_connecting:  # another task is connecting: wait for it, as aetcd does
            await asyncio.wait_for(self._connected.wait(), self._connect_wait_timeout)
            return
        try:
            self._is_connecting = True
            self.channel = grpc.aio.secure_channel(f"{self._host}:{self._port}",
                                                   self._credentials,
                                                   options=self._options.items())
            self.kvstub = rpc.KVStub(self.channel)
            self.clusterstub = rpc.ClusterStub(self.channel)
            self.leasestub = rpc.LeaseStub(self.channel)
            self.maintenancestub = rpc.MaintenanceStub(self.channel)
            self._watcher = watcher.Watcher(rpc.WatchStub(self.channel),
                                            timeout=self._timeout, metadata=self.metadata)
            self._connected.set()
        finally:
            self._is_connecting = False


def etcd_tls(config) -> EtcdTls | None:
    """The broker's etcd TLS settings (a ``BrokerConfig``), or None for plain gRPC."""
    if not config.etcd_tls:
        return None
    return EtcdTls(config.etcd_ca_file, config.etcd_cert_file, config.etcd_key_file)
