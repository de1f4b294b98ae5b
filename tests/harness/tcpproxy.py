"""A TCP forwarder (on loopback unless told otherwise) between a client and the API server that a test
can break on demand, the ways networks break:

- ``cut()``: stop listening and close every connection (the server is unreachable, connections refused);
  ``start()`` again to recover.
- ``freeze()``: the connections open at this moment stop delivering, in both directions, without a FIN
  or RST (a NAT or load balancer that dropped their state): what is sent on them vanishes. Connections
  opened afterwards work. This is the half-open connection a client notices only by its own timeouts.
- ``hold()`` / ``release()``: a partition that heals: every connection, open or new, delivers nothing
  while held; what was sent meanwhile is delivered in order on release (as TCP retransmission does
  once the path is back). New connections are accepted but get no answer until then.
- ``resets(True)`` / ``resets(False)``: every connection, open or new, is reset (RST) while on.

Why a proxy of our own rather than toxiproxy: toxiproxy's toxics apply to a proxy, so to every
connection through it, open or new; freezing the connections open at one moment while new ones work
needs per-connection state, which is a few lines here. TLS passes through untouched: the client still
verifies the API server's certificate (issued for 127.0.0.1), it only connects to another port.

Run as a script (``python tcpproxy.py LISTEN_HOST TARGET_HOST TARGET_PORT``) it forwards until its stdin
closes: that is how a test host in a network namespace (``harness.netns``) reaches a server of the test.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
from contextlib import suppress


class _Pair:
    """One client connection and its upstream."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client, self.upstream = client, upstream
        self.frozen = False

    def close(self, *, reset: bool = False) -> None:
        for sock in (self.client, self.upstream):
            if reset:
                with suppress(OSError):  # linger 0: close sends RST
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with suppress(OSError):
                sock.close()


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, listen_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self.listen_host = listen_host
        probe = socket.socket()
        probe.bind((listen_host, 0))
        self.port: int = probe.getsockname()[1]
        probe.close()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._pairs: list[_Pair] = []
        self._flowing = threading.Event()  # cleared while held
        self._flowing.set()
        self._resetting = False
        self.connections = 0

    @property
    def up(self) -> bool:
        return self._listener is not None

    def start(self) -> None:
        """Accept and forward connections (again, after ``cut``)."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.listen_host, self.port))
        listener.listen(64)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Stop listening and drop every open connection: the server is unreachable until ``start``."""
        with self._lock:
            listener, self._listener = self._listener, None
            pairs, self._pairs = self._pairs, []
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for pair in pairs:
            pair.close()
        self._flowing.set()  # nothing held survives a cut

    def freeze(self) -> int:
        """The connections open now go silent for good, without a FIN or RST; returns how many."""
        with self._lock:
            pairs = list(self._pairs)
            for pair in pairs:
                pair.frozen = True
        return len(pairs)

    def hold(self) -> None:
        """Deliver nothing on any connection, open or new, until ``release`` (then all of it, in order)."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def resets(self, on: bool) -> None:
        """While on, every connection, open or new, is reset (RST)."""
        with self._lock:
            self._resetting = on
            pairs, self._pairs = (self._pairs, []) if on else ([], self._pairs)
        for pair in pairs:
            pair.close(reset=True)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                resetting = self._resetting
            if resetting:
                _Pair(client, socket.socket()).close(reset=True)
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            pair = _Pair(client, upstream)
            with self._lock:
                if self._listener is not listener:
                    pair.close()
                    return
                self._pairs.append(pair)
                self.connections += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(pair, src, dst), daemon=True).start()

    def _pump(self, pair: _Pair, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                self._flowing.wait()
                if pair.frozen:
                    continue  # swallowed: the peer's data vanishes, and nothing tells either end
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not pair.frozen:
                with suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)


def main(argv: list[str]) -> None:
    """Forward ``LISTEN_HOST:<a free port>`` to ``TARGET_HOST:TARGET_PORT`` until stdin closes (the parent
    ends, or closes it); prints the port once listening."""
    listen_host, target_host, target_port = argv
    proxy = TcpProxy(target_host, int(target_port), listen_host=listen_host)
    proxy.start()
    print(proxy.port, flush=True)
    sys.stdin.read()
    proxy.cut()


if __name__ == "__main__":
    main(sys.argv[1:])
