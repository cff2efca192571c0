"""A throwaway PostgreSQL server for the tests: started once per test session on 127.0.0.1 (on a free port,
in a temporary folder, ``fsync=off``), stopped and deleted at the end.

The server binaries are found under ``/usr/lib/postgresql/*/bin`` (the newest version) or on ``PATH``. As
root, the folder belongs to the ``postgres`` user and ``initdb`` / ``pg_ctl`` run as that user (PostgreSQL
refuses to run as root); otherwise as the current user. TCP connections need a password (scram-sha-256),
so tests can check wrong credentials; the superuser's password is ``SUPERUSER_PASSWORD``.

A session killed before it could stop its server (SIGKILL, a timeout) leaves it running; the next session
stops and deletes it. A developer with a server of their own can set ``FLUJO_TEST_POSTGRES_URI`` (a
superuser's URI) and none is started. When no server can be started the PostgreSQL tests are skipped
with the reason, except under CI (``CI`` set), where that is an error: CI must run them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

ENV_URI = "FLUJO_TEST_POSTGRES_URI"
SUPERUSER_PASSWORD = "pg-test-s3cret"


class NoServer(Exception):
    """No PostgreSQL server could be started here (the message says why)."""


@dataclass
class Server:
    uri: str  # the superuser's URI, password included
    folder: Path | None = None  # None: a server this session did not start
    bin_dir: Path | None = None
    owner: str | None = None  # the user the server runs as when we are root
    options: str = ""  # the server's -c settings (its port among them), to start it again as it was

    def stop(self) -> None:
        if self.folder is None or self.bin_dir is None:
            return
        try:
            self.halt()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server as a crash would (``pg_ctl -m immediate``: every session ends at once), keeping its
        data for ``restart``; returns once it is down."""
        assert self.folder is not None and self.bin_dir is not None, "not a server this session started"
        _as_owner([str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop"],
                  self.owner)  # fmt: skip

    def restart(self) -> None:
        """Start a halted server again on its port, with its data; returns once it accepts connections."""
        assert self.folder is not None and self.bin_dir is not None, "not a server this session started"
        _as_owner([str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "log"),
                   "-w", "-t", "60", "-o", self.options, "start"], self.owner)  # fmt: skip


def empty_store_uri(server_uri: str) -> str:
    """The URI of an empty run store on the server at ``server_uri`` (a superuser's): a new schema of its own
    (its search_path), so tests share the server and cost a CREATE SCHEMA each, not a CREATE DATABASE."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_uri, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]  # a name made just above
    return f"{server_uri}?options=-csearch_path%3D{schema}"


def bin_dir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: the newest ``/usr/lib/postgresql/*/bin``, else ``PATH``'s."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise NoServer("no PostgreSQL server binaries (initdb) here: apt-get install -y postgresql")


def start(*, own: bool = False) -> Server:
    """A running server: the one ``FLUJO_TEST_POSTGRES_URI`` names, or a new throwaway one (always a new one
    with ``own``, which commits synchronously: a test that stops and restarts its server must not take the
    session's down with it, nor lose what was committed before the stop)."""
    if os.environ.get(ENV_URI) and not own:
        return Server(uri=os.environ[ENV_URI])
    binaries = bin_dir()
    _stop_orphans(binaries)
    owner = None
    if os.geteuid() == 0:
        owner = "postgres"
        try:
            import pwd

            pwd.getpwnam(owner)
        except KeyError:
            raise NoServer("running as root and there is no postgres user to run the server as") from None
    folder = Path(tempfile.mkdtemp(prefix="flujo-pg-"))
    try:
        if owner is not None:
            shutil.chown(folder, user=owner)
        (folder / "test-session.pid").write_text(str(os.getpid()))  # see _stop_orphans
        (folder / "pw").write_text(SUPERUSER_PASSWORD + "\n")
        if owner is not None:
            shutil.chown(folder / "pw", user=owner)
        _as_owner(
            [str(binaries / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "--pwfile", str(folder / "pw"),
             "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"],
            owner,
        )  # fmt: skip
        port = _free_port()
        settings = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder} -c fsync=off"
        # A server a test stops as a crash would must keep what it committed (fsync=off loses data only when the
        # machine crashes): asynchronous commit would lose the last commits before the stop.
        settings += f" -c synchronous_commit={'on' if own else 'off'} -c full_page_writes=off"
        server = Server(uri="", folder=folder, bin_dir=binaries, owner=owner, options=settings)
        server.restart()
    except (OSError, subprocess.CalledProcessError) as exc:
        log = folder / "log"
        detail = log.read_text(errors="replace")[-500:] if log.exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        output = getattr(exc, "stderr", "") or ""
        raise NoServer(f"could not start PostgreSQL: {exc} {output} {detail}".strip()) from None
    server.uri = f"postgresql://postgres:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/postgres"
    return server


def _stop_orphans(binaries: Path) -> None:
    """Stop and delete the servers of earlier test sessions that were killed before they could (their
    ``test-session.pid`` names a process that is gone)."""
    for marker in Path(tempfile.gettempdir()).glob("flujo-pg-*/test-session.pid"):
        try:
            os.kill(int(marker.read_text()), 0)
            continue  # that session is still running
        except (ProcessLookupError, ValueError):
            pass
        except PermissionError:
            continue
        folder = marker.parent
        owner = folder.owner() if os.geteuid() == 0 else None
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            _as_owner([str(binaries / "pg_ctl"), "-D", str(folder / "data"), "-m", "immediate", "-w", "stop"], owner)
        shutil.rmtree(folder, ignore_errors=True)


def _as_owner(argv: list[str], owner: str | None) -> None:
    command = ["runuser", "-u", owner, "--", *argv] if owner is not None else argv
    subprocess.run(command, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
