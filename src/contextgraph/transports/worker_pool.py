"""`serve --workers N` (network transports): a front process that owns the ports and N worker processes that
serve (README, "Several workers"; docs/architecture.md#several-workers).

Why a front process and not N processes on one SO_REUSEPORT port: the kernel spreads connections by a hash of
the client's address, and a Streamable HTTP client opens several connections for one session (its POSTs, its
GET stream, a reconnect), which must all reach the process holding that session. The front accepts, reads the
first request's head without consuming it (MSG_PEEK), finds the worker named in the session id
(transports/session_tag.py) and sends the socket itself to that worker (SCM_RIGHTS over a Unix SOCK_SEQPACKET
pair; transports/worker_inbox.py). New sessions, TCP connections (one session each) and everything else go
round-robin. The front never reads a byte of the protocol after that, so it costs one accept and one
sendmsg per connection, not per request.

Workers are full servers (`contextgraph serve` with the same arguments, started with `python -m contextgraph`),
each with its own engine over the one store: see docs/architecture.md#several-workers for what is shared and
how. A worker that exits while the pool runs is reported and started again (at most once a second per slot).
SIGTERM or SIGINT to the front stops the pool: the listeners close, each worker gets SIGTERM (it saves and
exits as a lone server does), stragglers are killed after the grace period.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from contextgraph.log import get_logger
from contextgraph.transports.binding import bind, hostport
from contextgraph.transports.session_tag import worker_of_head
from contextgraph.transports.worker_inbox import HTTP, TCP

_log = get_logger("server")
RESTART_EVERY_S = 1.0  # a worker that keeps crashing is restarted at most this often
EARLY_EXIT_S = 20.0  # a worker that exits this soon after its start failed to start, most likely
EARLY_EXITS = 3  # ... and after this many such exits in a row in one slot, the pool gives up (exit 1)
POLL_S = 0.2



@dataclass
class Worker:
    index: int
    proc: subprocess.Popen
    inbox: socket.socket  # the front's end of the pair
    started: float = field(default_factory=time.monotonic)
    early_exits: int = 0  # exits in a row of this slot's workers soon after they started

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class Pool:
    def __init__(self, argv: Sequence[str], size: int, *, head_limit: int, head_seconds: float,
                 grace_seconds: float) -> None:
        self.argv = list(argv)
        self.size = size
        self.head_limit = head_limit
        self.head_seconds = head_seconds
        self.grace_seconds = grace_seconds
        self.workers: list[Worker] = []
        self.restarts = 0
        self.failure: str | None = None
        self._next = 0

    # -- workers ---------------------------------------------------------------------------------------------
    def _spawn(self, index: int) -> Worker:
        front, back = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        front.setblocking(False)
        command = [sys.executable, "-m", "contextgraph", *self.argv, "--worker-inbox", str(back.fileno()),
                   "--worker-index", str(index)]
        # a process group of its own: a terminal's Ctrl-C reaches the front alone, which stops each worker with one
        # SIGTERM; a worker signalled twice would die the default way on the second signal, mid-save
        proc = subprocess.Popen(command, pass_fds=[back.fileno()], stdin=subprocess.DEVNULL, process_group=0)
        back.close()
        _log.info("worker started", worker=index, pid=proc.pid)
        return Worker(index, proc, front)

    def start(self) -> None:
        self.workers = [self._spawn(i) for i in range(self.size)]

    async def supervise(self, stop: anyio.CancelScope) -> None:
        """Report a worker that exited and start another in its slot; cancel `stop` when one keeps failing."""
        while True:
            await anyio.sleep(POLL_S)
            for i, worker in enumerate(self.workers):
                if worker.alive or time.monotonic() - worker.started < RESTART_EVERY_S:
                    continue
                early = worker.early_exits + 1 if time.monotonic() - worker.started < EARLY_EXIT_S else 0
                if early >= EARLY_EXITS:
                    self.failure = (f"worker {i} exited {early} times in a row soon after it started (last exit "
                                    f"code {worker.proc.returncode}); its log above says why")
                    stop.cancel()
                    return
                _log.warning("worker exited; starting another", worker=i, pid=worker.proc.pid,
                             code=worker.proc.returncode)
                worker.inbox.close()
                self.workers[i] = self._spawn(i)
                self.workers[i].early_exits = early
                self.restarts += 1

    def stop(self) -> None:
        """SIGTERM to every worker, wait for them for the grace period, kill what is left."""
        for worker in self.workers:
            worker.inbox.close()  # a worker that has not read its inbox yet stops at its end too
            if worker.alive:
                worker.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_seconds
        for worker in self.workers:
            try:
                worker.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _log.warning("worker did not stop in time; killed", worker=worker.index, pid=worker.proc.pid)
                worker.proc.kill()
                worker.proc.wait()

    # -- connections -----------------------------------------------------------------------------------------
    def _choose(self, owner: int | None) -> Worker | None:
        if owner is not None and owner < len(self.workers) and self.workers[owner].alive:
            return self.workers[owner]
        for _ in range(len(self.workers)):  # round-robin over the live ones
            worker = self.workers[self._next % len(self.workers)]
            self._next += 1
            if worker.alive:
                return worker
        return None

    async def _hand(self, conn: socket.socket, kind: bytes, owner: int | None) -> None:
        with conn:
            while (worker := self._choose(owner)) is not None:
                try:
                    socket.send_fds(worker.inbox, [kind], [conn.fileno()])
                    return
                except BlockingIOError:  # its inbox is full: wait until the worker reads it
                    with anyio.move_on_after(1):
                        await anyio.wait_writable(worker.inbox)
                except OSError:  # it died between the check and the send: another worker
                    owner = None
                    await anyio.lowlevel.checkpoint()
            _log.warning("no live worker to serve a connection; closed")

    async def _peek_head(self, conn: socket.socket) -> bytes:
        """The first request's head as far as it has arrived, left unread for the worker."""
        head = b""
        with anyio.move_on_after(self.head_seconds):
            while b"\r\n\r\n" not in head and len(head) < self.head_limit:
                try:
                    seen = conn.recv(self.head_limit, socket.MSG_PEEK)
                except BlockingIOError:
                    await anyio.wait_readable(conn)
                    continue
                if not seen:
                    break  # closed: the worker sees that too
                if seen == head:
                    await anyio.sleep(0.005)  # more of the head is on its way; a peek does not wait for it
                head = seen
        return head

    async def _route_http(self, conn: socket.socket) -> None:
        await self._hand(conn, HTTP, worker_of_head(await self._peek_head(conn)))

    async def accept(self, listener: socket.socket, kind: bytes) -> None:
        listener.setblocking(False)
        async with anyio.create_task_group() as tg:
            while True:
                await anyio.wait_readable(listener)
                try:
                    conn, _address = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                if kind == HTTP:
                    tg.start_soon(self._route_http, conn)
                else:
                    tg.start_soon(self._hand, conn, kind, None)


async def run_pool(pool: Pool, host: str, ports: dict[bytes, int]) -> None:
    """Bind, start the workers, route connections until SIGINT/SIGTERM, then stop the pool."""
    listeners = {kind: bind(host, port) for kind, port in ports.items()}
    try:
        pool.start()
        endpoints = "; ".join(f"{'tcp' if kind == TCP else 'http'}://{hostport(host, sock.getsockname()[1])}"
                              for kind, sock in listeners.items())
        _log.info("listening", endpoints=endpoints, workers=pool.size)
        async with anyio.create_task_group() as tg:
            for kind, sock in listeners.items():
                tg.start_soon(pool.accept, sock, kind)
            tg.start_soon(pool.supervise, tg.cancel_scope)
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    print(f"contextgraph: {signal.Signals(signum).name} received; stopping the workers",
                          file=sys.stderr)
                    break
            tg.cancel_scope.cancel()
    finally:
        for sock in listeners.values():
            with contextlib.suppress(OSError):
                sock.close()
        pool.stop()
        _log.info("stopped", workers=pool.size, restarts=pool.restarts)


def serve_pool(settings, argv: Sequence[str], size: int) -> int:
    """The front process of `serve --workers N`: returns the exit code once the pool has stopped."""
    from contextgraph import log
    from contextgraph.constitution import constitution

    c = constitution()
    log.configure(settings.log_level, log.LogRing(int(c.get("logging.ring_buffer_size"))))
    pool = Pool(argv, size, head_limit=int(c.get("transport.http_max_head_bytes")),
                head_seconds=float(c.get("transport.http_head_seconds")),
                grace_seconds=float(c.get("transport.worker_stop_seconds")))
    ports = {TCP: settings.port, HTTP: settings.http_port}
    kinds = {"tcp": (TCP,), "http": (HTTP,), "all": (TCP, HTTP)}[settings.transport]
    try:
        anyio.run(run_pool, pool, settings.host, {kind: ports[kind] for kind in kinds})
    except OSError as exc:  # e.g. the port is taken
        print(f"contextgraph: cannot listen on {settings.host}: {exc}", file=sys.stderr)
        return 1
    if pool.failure:  # workers kept dying as they started: restarting them forever would hide it
        print(f"contextgraph: {pool.failure}; stopped", file=sys.stderr)
        return 1
    return 0
