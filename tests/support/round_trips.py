"""A TCP proxy on 127.0.0.1 that counts the round trips between PostgreSQL clients and their server.

A round trip is counted each time a client sends after the server last spoke on that connection (or sends
first): the client then had to wait for the server's reply, however many statements it sent in one go
(pipeline mode sends several before reading). What flows is forwarded untouched; the proxy runs in a thread
of its own, so it costs the client nothing but the extra hop. Used by the PostgreSQL store's tests (a
committed step costs at most a few round trips, a count that does not depend on the machine's load) and by
``benchmarks/pg_iteration.py``.

It also keeps the statements clients send, in order (``statements``: the text of each simple ``Query``
and of each ``Parse`` of the extended protocol, psycopg's pipeline included), read off the frontend protocol
as it passes: a statement log that needs nothing of the server. Connections that turn on TLS are not read.

Only for the tests' throwaway server on loopback: the upstream is the host and port of the URI it is given.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
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
    unread: bytearray = field(default_factory=bytearray)  # what the client sent past its last whole message
    started: bool = False  # the startup message went by: every message from now on starts with its type
    encrypted: bool = False  # the server took the client's request for encryption: its stream is not read


_ENCRYPTION_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest: an untyped message before the startup
_LONGEST_STARTUP = 10_000


def _read_statements(link: _Link, data: bytes, into: list[str]) -> None:
    """The statements among the client's bytes ``data`` (``Query`` and ``Parse`` messages), added to ``into``."""
    if link.encrypted:
        return
    link.unread += data
    while True:
        buffer = link.unread
        if not link.started:
            if len(buffer) < 8:
                return
            length, code = struct.unpack("!II", buffer[:8])
            if length > _LONGEST_STARTUP:  # not a startup message: TLS's handshake, the server having said yes
                link.encrypted = True
                buffer.clear()
                return
            if len(buffer) < length:
                return
            link.started = code not in _ENCRYPTION_REQUESTS  # after a refused request, the startup message
            del buffer[:length]
            continue
        if len(buffer) < 5:
            return
        kind, length = buffer[0:1], struct.unpack("!I", buffer[1:5])[0]
        if len(buffer) < 1 + length:
            return
        body = bytes(buffer[5 : 1 + length])
        del buffer[: 1 + length]
        if kind == b"Q":
            into.append(body.split(b"\0", 1)[0].decode("utf-8", "replace"))
        elif kind == b"P":  # the statement's name, then its text
            into.append(body.split(b"\0", 2)[1].decode("utf-8", "replace"))


@dataclass
class RoundTripProxy:
    """Forwards connections to the server of ``uri``; ``uri`` of the proxy's own is ``proxied``."""

    uri: str
    _links: list[_Link] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _statements: list[str] = field(default_factory=list)

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

    @property
    def statements(self) -> list[str]:
        """The statements clients sent so far through the proxy, in the order it forwarded them."""
        with self._lock:
            return list(self._statements)

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
                    if from_client:
                        _read_statements(link, data, self._statements)
                try:
                    target.sendall(data)
                except OSError:
                    continue
