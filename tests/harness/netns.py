"""Test hosts: network namespaces the test run makes itself, for the servers a test must reach on an address
that is not loopback (the API server's service proxy refuses loopback endpoints).

A test traffics only with loopback and with these hosts, never with an address of the machine (eth0's,
or any private or public range). :func:`make_host` makes a uniquely named namespace (``ip netns add``,
iproute2; the tests run as root) and a veth pair: one end in the root namespace with the ``.1`` address of
a /30 from 198.18.0.0/15 (the benchmarking range, RFC 2544), the other end in the namespace with the
``.2`` address. The /30 is chosen under a lock on this machine from the ones no interface holds, so parallel
workers and parallel runs never share one. :meth:`NetnsHost.forward` runs :mod:`harness.tcpproxy` inside
the namespace, listening on the host's address and forwarding to a server of the test that listens on the
root end's address. Everything is deleted on the way out, a failing test included; a machine where
``ip netns`` is missing or not permitted fails the test with one line.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import select
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

#: The benchmarking range, cut into /30s: one per test host.
RANGE = ipaddress.IPv4Network("198.18.0.0/15")
#: Held while choosing a /30 and putting it on the veth, so no two runs on this machine take the same one.
LOCK = Path("/tmp/hami-core-netns.lock")
FORWARDER = Path(__file__).with_name("tcpproxy.py")
#: For the forwarder to start on a busy machine (real time, for something that must happen).
START_TIMEOUT = 60.0


class NetnsError(Exception):
    """One line: what could not be done to make or remove a test host."""


def _ip(*args: str) -> str:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise NetnsError("`ip` (iproute2) is not installed") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise NetnsError(f"ip {' '.join(args)}: {why}")
    return done.stdout


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker[2:]) if worker[2:].isdigit() else 0


def _free_subnet(start: int) -> ipaddress.IPv4Network:
    """The first /30 of :data:`RANGE` from the ``start``-th on that no interface of the root namespace holds
    an address in (call with :data:`LOCK` held)."""
    held = set()
    for line in _ip("-4", "-o", "addr", "show").splitlines():
        words = line.split()
        if "inet" in words:
            held.add(ipaddress.ip_interface(words[words.index("inet") + 1]).ip)
    subnets = list(RANGE.subnets(new_prefix=30))
    for offset in range(len(subnets)):
        subnet = subnets[(start + offset) % len(subnets)]
        if not any(address in subnet for address in held):
            return subnet
    raise NetnsError(f"every /30 of {RANGE} is taken on this machine")


class NetnsHost:
    """A network namespace ``name`` whose address is ``address``; the root namespace reaches it over a veth
    whose root end has ``host_address``."""

    def __init__(self, name: str, address: str, host_address: str, stack: ExitStack) -> None:
        self.name = name
        self.address = address
        self.host_address = host_address
        self._stack = stack

    def forward(self, port: int) -> int:
        """Listen on this host's address and forward to ``host_address:port`` (a server of the test); returns
        the port listened on. The forwarder ends with the host."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.name, sys.executable, str(FORWARDER), self.address,
             self.host_address, str(port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._stack.callback(_end, proc)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
        line = proc.stdout.readline().strip() if ready else ""
        if not line.isdigit():
            _end(proc)
            why = (proc.stderr.read() if proc.stderr else "").strip().splitlines() or ["no port printed"]
            raise NetnsError(f"the forwarder in {self.name} to port {port} did not start: {why[-1]}")
        return int(line)


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()  # the forwarder's signal to stop
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@contextmanager
def make_host() -> Iterator[NetnsHost]:
    """A test host (see the module); raises :class:`NetnsError` when it cannot be made or removed."""
    tag = uuid.uuid4().hex[:8]
    name, outside, inside = f"hami-{tag}", f"hh{tag}", f"hn{tag}"
    with ExitStack() as stack:
        _ip("netns", "add", name)
        stack.callback(_ip, "netns", "delete", name)  # the namespace's end of the veth goes with it
        with LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subnet = _free_subnet(_worker_index())
            host_address, address = (str(a) for a in list(subnet.hosts()))
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", name)
            stack.callback(_delete_link, outside)
            _ip("addr", "add", f"{host_address}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", name, "addr", "add", f"{address}/30", "dev", inside)
        _ip("-n", name, "link", "set", inside, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        with ExitStack() as forwarders:  # ended before the namespace is deleted
            yield NetnsHost(name, address, host_address, forwarders)


def _delete_link(link: str) -> None:
    """The root end of the veth (deleting the namespace removes the pair too: gone already is fine)."""
    if link in _ip("-o", "link", "show"):
        _ip("link", "delete", link)


@pytest.fixture
def netns_host() -> Iterator[NetnsHost]:
    """A test host for one test (see the module); cannot be made: the test fails with one line."""
    try:
        with make_host() as host:
            yield host
    except NetnsError as exc:
        pytest.fail(f"cannot make or remove a test host in a network namespace: {exc}", pytrace=False)
