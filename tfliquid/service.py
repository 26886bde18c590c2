"""tf.data service servers with tfliquid's ops loaded: `tfliquid serve dispatcher|worker` (docs/scale-out.md).

A tf.data service worker runs the dataset graphs clients send it, and a dispatcher builds a dynamically sharded
job's split providers from the same graph (again when it replays its journal after a restart): a graph using
tfliquid's ops (`PCRDataset`, `LiquidDataset`, `minio_cache`) fails on either with "Op type not registered
'Liquid>...'" unless its TensorFlow has loaded them. So both load the ops before their server starts, and say in
one line on stderr which library, which tfliquid and which TensorFlow they run, and where they serve.

    >>> tfliquid.service.serve_dispatcher(5050, "/var/lib/tfliquid-dispatcher")   # until SIGTERM or SIGINT
    >>> tfliquid.service.serve_worker("dispatcher-host:5050", 5051)                 # on each input host
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket
import sys
import time

import tensorflow as tf

from tfliquid._common.checks import check_directory, check_int
from tfliquid._common.errors import ArgumentError, TfliquidError
from tfliquid._common.lock import DirectoryLock
from tfliquid._lib import LIBRARY_PATH, load_ops
from tfliquid._version import __version__

service = tf.data.experimental.service

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
DISPATCHER_RETRY_SECONDS = 1.0  # how often a worker started before its dispatcher tries to reach it


def serve_dispatcher(
    port: int,
    work_dir: str | os.PathLike | None = None,
    *,
    fault_tolerant: bool = True,
    worker_addresses: list[str] | None = None,
) -> None:
    """Runs a tf.data service dispatcher on `port` until SIGTERM or SIGINT, then stops it and returns.

    Args:
      port: the port it listens on, 1..65535 (workers and clients are given it; a restart must reuse it).
      work_dir: its journal and the datasets registered with it (created if missing). Required in fault-tolerant
        mode. One dispatcher per work_dir: two would write one journal.
      fault_tolerant: journal every change of state before answering, so that a dispatcher restarted on the same
        port and work_dir resumes its jobs where they were.
      worker_addresses: "HOST:PORT" of every worker, in order, for static sharding (`ShardingPolicy.HINT`, FILE,
        DATA; partitioned caching): worker i reads shard i. Dynamic sharding needs no list.
    """
    port = _check_port(port)
    if work_dir is not None:
        work_dir = _make_work_dir(work_dir)
    elif fault_tolerant:
        raise ArgumentError("a fault-tolerant dispatcher needs a work_dir for its journal")
    if worker_addresses is not None:
        worker_addresses = [_check_address("each of worker_addresses", a) for a in worker_addresses]
    config = service.DispatcherConfig(
        port=port, work_dir=work_dir, fault_tolerant_mode=fault_tolerant, worker_addresses=worker_addresses
    )
    mode = f"fault-tolerant, journal in {work_dir}" if fault_tolerant else "not fault-tolerant"
    address = f"grpc://{socket.gethostname()}:{port} ({mode})"
    if work_dir is None:
        _serve("dispatcher", lambda: service.DispatchServer(config), address)
        return
    with DirectoryLock(work_dir, _work_dir_in_use(work_dir)):
        _serve("dispatcher", lambda: service.DispatchServer(config), address)


def _work_dir_in_use(work_dir: str):
    """The refusal of a second dispatcher on a work dir: both would write, and a restart replay, one journal."""
    return lambda holder: TfliquidError(
        f"work_dir {work_dir} is in use by another dispatcher ({holder}): one dispatcher per work dir"
    )


def serve_worker(dispatcher: str, port: int, worker_address: str | None = None) -> None:
    """Runs a tf.data service worker on `port` for the dispatcher at `dispatcher` ("HOST:PORT") until SIGTERM or
    SIGINT, then stops it and returns.

    Clients read from it at `worker_address`:`port`; the host defaults to this machine's name, which other hosts
    must be able to resolve. Started before its dispatcher, it logs that it waits for it, and tries to reach it
    every DISPATCHER_RETRY_SECONDS until it answers or a stop signal arrives; then it registers and logs its line.
    A worker restarted at the same address takes its place in the jobs it was running. A stop signal ends the
    worker's part in its jobs as a failure would: what it holds is lost (docs/scale-out.md)."""
    dispatcher = _check_address("dispatcher", dispatcher)
    port = _check_port(port)
    host = socket.gethostname() if worker_address is None else worker_address
    if not isinstance(host, str) or not host or ":" in host or "/" in host:
        raise ArgumentError(f"worker_address must be a host name without a port (the port is {port}), got {host!r}")
    config = service.WorkerConfig(dispatcher_address=dispatcher, worker_address=f"{host}:{port}", port=port)
    address = f"{host}:{port} for the dispatcher at {dispatcher}"
    _serve("worker", lambda: service.WorkerServer(config), address, lambda stop: _reach_dispatcher(dispatcher, stop))


def _serve(kind: str, start, address: str, ready=lambda stop_signals: None) -> None:
    """Loads the ops, waits until `ready(stop_signals)` (the name of a stop signal that came first, or None), starts
    the server (`start()`), logs one line, waits for a stop signal, stops the server."""
    load_ops()  # before the server exists: a dataset graph, or a journal replayed, may arrive at once
    with _StopSignals() as stop_signals:  # before the server starts, so that no signal finds the default handler
        received = ready(stop_signals)
        if received is None:
            try:
                server = start()
            except tf.errors.OpError as e:  # e.g. an unreadable journal: its message is what the user needs
                raise TfliquidError(f"the {kind} could not start on {address}: {e.message}") from None
            _log(f"{kind}: serving {address}; ops {LIBRARY_PATH}, tfliquid {__version__}, TensorFlow {tf.__version__}")
            received = stop_signals.wait()
            server.stop()
    _log(f"{kind}: stopped on {received}")


def _reach_dispatcher(dispatcher: str, stop_signals: _StopSignals) -> str | None:
    """Waits until something listens at the dispatcher's address (None), or a stop signal arrives (its name).

    A worker registers inside its server's start, which holds the interpreter and retries until the dispatcher
    answers: started before it, the worker would wait there silently, deaf to signals."""
    host, _, port = dispatcher.rpartition(":")
    waiting = False
    while True:
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=DISPATCHER_RETRY_SECONDS).close()
            return None
        except OSError as e:
            if not waiting:
                _log(f"worker: waiting for the dispatcher at {dispatcher} ({e.strerror or e}); SIGTERM or SIGINT stops")
                waiting = True
        received = stop_signals.wait(DISPATCHER_RETRY_SECONDS)
        if received is not None:
            return received


class _StopSignals:
    """Catches SIGTERM and SIGINT while in use; `wait()` blocks until one arrives and returns its name.

    The C-level handler may run on any of TensorFlow's threads, where it only writes a byte to the wakeup socket;
    the main thread, blocked reading that socket, wakes wherever the signal landed."""

    def __enter__(self) -> _StopSignals:
        self._received = []
        self._reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)  # set_wakeup_fd requires it: a handler never blocks
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno())
        self._previous = {s: signal.signal(s, self._record) for s in STOP_SIGNALS}
        return self

    def _record(self, signum, frame) -> None:
        self._received.append(signal.Signals(signum).name)

    def wait(self, seconds: float | None = None) -> str | None:
        """The first stop signal's name, once one has arrived; None if none has within `seconds` (None: no limit)."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self._received:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            if select.select([self._reader], [], [], remaining)[0]:
                self._reader.recv(64)
        return self._received[0]

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()


def _check_port(port) -> int:
    """A port in 1..65535 that no process listens on, over IPv4 or IPv6 (gRPC serves both, and "localhost" may
    resolve to either). gRPC binds with SO_REUSEPORT, so a second server on a port in use would start without
    complaint and take half its connections: a second dispatcher, half the workers."""
    port = check_int("port", port, 1, 65535)
    for family, anywhere in ((socket.AF_INET, ""), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this machine: nothing can listen there
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # connections in TIME_WAIT do not count
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # IPv4 was probed on its own
            try:
                probe.bind((anywhere, port))
            except OSError as e:
                if e.errno == errno.EADDRNOTAVAIL:  # IPv6 present but not configured
                    continue
                in_use = f"port {port} is in use ({e.strerror}): is a server already running there?"
                raise TfliquidError(in_use) from None
    return port


def _check_address(name: str, address) -> str:
    """A "HOST:PORT" string, as tf.data service passes addresses (no protocol)."""
    host, _, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
    if not host or "/" in host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ArgumentError(f"{name} must be HOST:PORT with a port in 1..65535, got {address!r}")
    return address


def _make_work_dir(work_dir) -> str:
    work_dir = check_directory("work_dir", work_dir)
    try:
        os.makedirs(work_dir, exist_ok=True)
    except OSError as e:
        raise ArgumentError(f"work_dir {work_dir} cannot be created: {e.strerror}") from None
    if not os.access(work_dir, os.W_OK | os.X_OK):
        raise ArgumentError(f"work_dir {work_dir} is not writable")
    return work_dir


def _log(message: str) -> None:
    print(f"tfliquid serve {message}", file=sys.stderr, flush=True)
