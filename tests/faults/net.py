"""``Network``: several "hosts" on one machine, each a network namespace with its own address.

Why: every fault before this harness was a process dying on loopback, where a dead peer's
port refuses at once and no link can fail alone. Here each node (etcd, every broker) lives
in a namespace of its own, joined to one bridge by a veth pair; the test process (the
clients) talks to them from the root namespace through an address on the bridge. A link is
cut with nftables rules inside a node's namespace (``ip daddr X drop`` on output, ``ip
saddr X drop`` on input), so packets are lost silently (no reset, no ICMP), as on a real
network partition, and only between the nodes named:

- ``cut(a, b)``: a and b lose each other, both ways; ``cut(a, b, one_way=True)``: what a
  sends to b is lost, b's packets still reach a;
- ``isolate(a)``: a loses everyone, clients included;
- ``heal()``: every rule goes.

Names carry a random suffix (namespaces, bridge, veths), and the subnet is chosen among
10.200-250.x.0/24 ones no interface uses, so parallel pytest processes do not collide.
``close`` deletes everything it made; it is safe to call twice and after a failed setup.
Needs root, ``ip`` (iproute2) and ``nft`` (nftables).
"""

from __future__ import annotations

import ipaddress
import random
import secrets
import shutil
import subprocess

TABLE = "tslogfault"


def available() -> str | None:
    """Why this machine cannot run the harness, or None if it can."""
    import os
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2, nftables)"
    return None


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True)


def _free_subnet() -> ipaddress.IPv4Network:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for _ in range(200):
        net = ipaddress.ip_network(f"10.{random.randint(200, 250)}.{random.randint(0, 255)}.0/24")
        if f" {str(net.network_address)[:-1]}" not in used:
            return net
    raise RuntimeError("no free 10.200-250.x.0/24 subnet")


class Network:
    """A bridge, and one namespace per node name, created by ``add``."""

    def __init__(self) -> None:
        self.suffix = secrets.token_hex(3)
        self.subnet = _free_subnet()
        hosts = list(self.subnet.hosts())
        self.client_address = str(hosts[-1])  # the root namespace's address on the bridge
        self._hosts = iter(hosts[:-1])
        self.bridge = f"tfb{self.suffix}"
        self.nodes: dict[str, tuple[str, str]] = {}  # name -> (namespace, address)
        self._veths: list[str] = []
        self._rules: set[tuple[str, str, str]] = set()  # (node, direction, peer address)
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.client_address}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")

    def add(self, name: str) -> str:
        """A new node: its namespace joined to the bridge. Returns its address."""
        index = len(self.nodes)
        namespace = f"tf{self.suffix}{name}"[:15]
        address = str(next(self._hosts))
        outside, inside = f"tf{self.suffix}o{index}", f"tf{self.suffix}i{index}"
        _run("ip", "netns", "add", namespace)
        self.nodes[name] = (namespace, address)
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        self._veths.append(outside)
        _run("ip", "link", "set", outside, "master", self.bridge)
        _run("ip", "link", "set", outside, "up")
        _run("ip", "link", "set", inside, "netns", namespace)
        _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", inside)
        _run("ip", "-n", namespace, "link", "set", inside, "up")
        _run("ip", "-n", namespace, "link", "set", "lo", "up")
        self._nft(name, f"add table inet {TABLE}")
        for hook in ("input", "output"):
            self._nft(name, f"add chain inet {TABLE} {hook} "
                            f"{{ type filter hook {hook} priority 0 ; }}")
        return address

    def prefix(self, name: str) -> list[str]:
        """The command prefix that runs a program on node ``name``."""
        return ["ip", "netns", "exec", self.nodes[name][0]]

    def address(self, name: str) -> str:
        return self.nodes[name][1]

    def _nft(self, name: str, rule: str) -> None:
        _run("ip", "netns", "exec", self.nodes[name][0], "nft", rule)

    def _drop(self, name: str, hook: str, peer: str) -> None:
        if (name, hook, peer) in self._rules:
            return
        field = "daddr" if hook == "output" else "saddr"
        self._nft(name, f"add rule inet {TABLE} {hook} ip {field} {peer} drop")
        self._rules.add((name, hook, peer))

    def cut(self, a: str, b: str, *, one_way: bool = False) -> None:
        """Lose a's packets to b (and, unless ``one_way``, b's to a). Silent drops."""
        self._drop(a, "output", self.address(b))
        self._drop(b, "input", self.address(a))
        if not one_way:
            self._drop(b, "output", self.address(a))
            self._drop(a, "input", self.address(b))

    def isolate(self, a: str) -> None:
        """Lose every packet between ``a`` and anyone (other nodes and the clients)."""
        for peer in [*(self.address(n) for n in self.nodes if n != a), self.client_address]:
            self._drop(a, "output", peer)
            self._drop(a, "input", peer)

    def heal(self) -> None:
        for name in {node for node, _, _ in self._rules}:
            for hook in ("input", "output"):
                self._nft(name, f"flush chain inet {TABLE} {hook}")
        self._rules.clear()

    def close(self) -> None:
        """Delete every namespace, veth and the bridge (ignoring what is already gone)."""
        for namespace, _ in self.nodes.values():
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        for veth in self._veths:
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.nodes.clear()
        self._veths.clear()
