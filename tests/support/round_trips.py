"""A TCP proxy on 127.0.0.1 that counts the round trips between PostgreSQL clients and their server.

A round trip is counted each time a client sends after the server last spoke on that connection (or sends
first): the client then had to wait for the server's reply, however many statements it sent in one go
(pipeline mode sends several before reading). What flows is forwarded untouched; the proxy runs in a thread
of its own, so it costs the client nothing but the extra hop. Used by the PostgreSQL store's tests (a
committed step costs at most a few round trips, a count that does not depend on the machine's load) and by
``benchmarks/pg_iteration.py``.

Only for the tests' throwaway server on loopback: the upstream is the host and port of the URI it is given.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit


@dataclass
class _Link:
    """One client connection and its upstream: who spoke last, and how many times the client began to."""

    client: socket.socket
    server: socket.socket
    last_from_server: bool = True
    turns: int = 0


@dataclass
class RoundTripProxy:
    """Forwards connections to the server of ``uri``; ``uri`` of the proxy's own is ``proxied``."""

    uri: str
    _links: list[_Link] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        parts = urlsplit(self.uri)
        assert parts.hostname in ("127.0.0.1", "localhost", "::1"), "a loopback server only"
        self._upstream = (parts.hostname, parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        port = self._listener.getsockname()[1]
        credentials, _, _ = parts.netloc.rpartition("@")
        self.proxied = urlunsplit(parts._replace(netloc=f"{credentials}@127.0.0.1:{port}"))
        self._stop_reading, self._stop_writing = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="round-trip-proxy", daemon=True)
        self._thread.start()

    @property
    def count(self) -> int:
        """Round trips so far, over every connection made through the proxy."""
        with self._lock:
            return sum(link.turns for link in self._links)

    def close(self) -> None:
        self._stop_writing.send(b"x")
        self._thread.join()
        for link in self._links:
            link.client.close()
            link.server.close()
        self._listener.close()
        self._stop_reading.close()
        self._stop_writing.close()

    def __enter__(self) -> RoundTripProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        selector.register(self._stop_reading, selectors.EVENT_READ, None)
        while True:
            for key, _ in selector.select():
                if key.fileobj is self._stop_reading:
                    selector.close()
                    return
                if key.fileobj is self._listener:
                    client, _ = self._listener.accept()
                    client.setblocking(True)
                    server = socket.create_connection(self._upstream)
                    for end in (client, server):
                        end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    link = _Link(client, server)
                    with self._lock:
                        self._links.append(link)
                    selector.register(client, selectors.EVENT_READ, (link, True))
                    selector.register(server, selectors.EVENT_READ, (link, False))
                    continue
                link, from_client = key.data
                source = link.client if from_client else link.server
                target = link.server if from_client else link.client
                try:
                    data = source.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    for end in (link.client, link.server):
                        with contextlib.suppress(KeyError, ValueError):
                            selector.unregister(end)
                        end.close()
                    continue
                with self._lock:
                    if from_client and link.last_from_server:
                        link.turns += 1
                    link.last_from_server = not from_client
                try:
                    target.sendall(data)
                except OSError:
                    continue
