"""A real S3-compatible server on loopback for tests and bench/bench_remote.py: moto's
standalone server in a subprocess, and our own counting proxy in front of it.

The proxy forwards every request unchanged and counts what the server is asked (listings,
object GETs and HEADs, bytes sent back), so request counts are measured where a bill would be,
not by the client counting itself. Stopping it (and starting it again on the same port) is a
server that cannot be reached and comes back, with the bucket's objects kept by moto behind it.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

#: Credentials moto accepts (it checks none); never real ones.
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing-key-id-AKIAFAKE",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-do-not-log-1234",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the S3 server exited with {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the S3 server is not listening on {port}") from None
            time.sleep(0.05)


class MotoServer:
    """moto's standalone S3 server, a subprocess on a free loopback port."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self._log = open(log, "wb")  # noqa: SIM115 (kept for the process's life)
        exe = shutil.which("moto_server", path=str(Path(sys.executable).parent))
        command = [exe] if exe else [sys.executable, "-m", "moto.server"]
        self.proc = subprocess.Popen(
            [*command, "-H", "127.0.0.1", "-p", str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        try:
            _wait_listening(self.port, self.proc, 30.0)
        except BaseException:
            self.close()
            raise

    @property
    def endpoint(self) -> str:
        """The server's URL."""
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stops the server (its objects are gone); safe twice."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@dataclass
class Counts:
    """What the server was asked, by kind (GET of a bucket = a listing)."""

    lists: int = 0
    gets: int = 0
    heads: int = 0
    other: int = 0
    #: Bytes of objects sent back (GET bodies; listings not included).
    bytes_sent: int = 0
    requests: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Every request."""
        return self.lists + self.gets + self.heads + self.other


class CountingProxy:
    """An HTTP proxy on loopback in front of the S3 server, counting requests."""

    def __init__(self, target_port: int, port: int = 0) -> None:
        self.target_port = target_port
        self.counts = Counts()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = port
        #: After this many more object GETs the server goes down (every request dropped
        #: unanswered, the listener closed) until :meth:`start`: a server lost mid-pass.
        self.down_after_gets: int | None = None
        self._down = threading.Event()
        self._stopper: threading.Thread | None = None
        self.start()

    @property
    def endpoint(self) -> str:
        """The URL clients talk to."""
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> Counts:
        """Returns the counts so far and starts new ones."""
        with self._lock:
            counts, self.counts = self.counts, Counts()
        return counts

    def start(self) -> None:
        """Listens (again, on the same port after :meth:`stop`)."""
        self._join_stopper()
        self._down.clear()
        self.down_after_gets = None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                if proxy._down.is_set() or proxy._going_down(self.command, self.path):
                    self.close_connection = True  # dropped unanswered: the client sees EOF
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                status, reason, out, data = proxy._ask(self.command, self.path, body, headers)
                if status == 416 and self.command == "GET":
                    # moto refuses a range that ends past the object; S3 answers up to its end
                    # (RFC 9110 14.1.2). TensorBoard's reader relies on that: answered as S3
                    # does (one request counted).
                    status, reason, out, data = proxy._clamped(self.path, headers) or (
                        status,
                        reason,
                        out,
                        data,
                    )
                proxy._count(self.command, self.path, len(data))
                self.send_response(status, reason)
                # A HEAD answer keeps the object's Content-Length (it has no body).
                dropped = ("connection", "transfer-encoding")
                if self.command != "HEAD":
                    dropped += ("content-length",)
                    self.send_header("Content-Length", str(len(data)))
                for key, value in out:
                    if key.lower() not in dropped:
                        self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="s3-proxy", daemon=True)
        self._thread.start()

    @property
    def down(self) -> bool:
        """Whether the server is down (stopped, or gone down after its GETs)."""
        return self._down.is_set()

    def stop(self) -> None:
        """Stops listening (clients get "connection refused", open connections nothing);
        safe twice."""
        self._down.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def close(self) -> None:
        """Stops for good."""
        self.stop()
        self._join_stopper()

    def _ask(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.target_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.reason, answer.getheaders(), answer.read()
        finally:
            conn.close()

    def _clamped(
        self, path: str, headers: dict[str, str]
    ) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
        wanted = next((v for k, v in headers.items() if k.lower() == "range"), "")
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted.strip())
        if match is None:
            return None
        head = self._ask("HEAD", path, None, {})
        length = int(dict((k.lower(), v) for k, v in head[2]).get("content-length", 0))
        start = int(match.group(1))
        if start >= length:
            return None
        # moto signs nothing: the same headers with the range clamped are accepted.
        fixed = {k: v for k, v in headers.items() if k.lower() != "range"}
        fixed["Range"] = f"bytes={start}-{length - 1}"
        return self._ask("GET", path, None, fixed)

    def _going_down(self, method: str, path: str) -> bool:
        with self._lock:
            if self.down_after_gets is None or method != "GET" or "list-type" in path:
                return False
            if self.down_after_gets > 0:
                self.down_after_gets -= 1
                return False
        # The listener is closed from another thread (shutdown() waits for serve_forever).
        with self._lock:
            if self._stopper is None:
                self._down.set()
                self._stopper = threading.Thread(target=self.stop, name="s3-proxy-stop")
                self._stopper.start()
        return True

    def _join_stopper(self) -> None:
        stopper = self._stopper
        if stopper is not None and stopper is not threading.current_thread():
            stopper.join(10)
            self._stopper = None

    def _count(self, method: str, path: str, sent: int) -> None:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        key = parts.path.strip("/").partition("/")[2]
        with self._lock:
            c = self.counts
            c.requests.append(f"{method} {path}")
            if method == "GET" and (not key or "list-type" in query):
                c.lists += 1
            elif method == "GET":
                c.gets += 1
                c.bytes_sent += sent
            elif method == "HEAD":
                c.heads += 1
            else:
                c.other += 1


@dataclass
class S3:
    """A bucket on a running server: upload, delete, and the URL and options boardd needs."""

    server: MotoServer
    proxy: CountingProxy
    bucket: str = "logs"
    client: Any = None

    def __post_init__(self) -> None:
        import boto3

        self.client = boto3.client(
            "s3",
            endpoint_url=self.server.endpoint,
            aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"],
            region_name=FAKE_ENV["AWS_DEFAULT_REGION"],
        )
        self.client.create_bucket(Bucket=self.bucket)

    def url(self, prefix: str) -> str:
        """``s3://bucket/prefix``."""
        return f"s3://{self.bucket}/{prefix.strip('/')}"

    def put(self, key: str, data: bytes) -> None:
        """Uploads (or re-uploads) one object."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def upload(self, local: Path, prefix: str) -> list[str]:
        """Uploads every file under ``local`` to ``prefix/``; returns the keys."""
        keys = []
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            key = f"{prefix.strip('/')}/{path.relative_to(local).as_posix()}"
            self.put(key, path.read_bytes())
            keys.append(key)
        return keys

    def delete(self, key: str) -> None:
        """Deletes one object."""
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def options(self) -> list[str]:
        """``--storage-option`` items pointing boardd at the proxy."""
        return [f"endpoint_url={self.proxy.endpoint}"]

    def close(self) -> None:
        """Closes the boto3 client."""
        with contextlib.suppress(Exception):
            self.client.close()
