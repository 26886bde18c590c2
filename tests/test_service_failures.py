"""tf.data service under failures, measured: a dispatcher and two workers started by `tfliquid serve` as separate
processes on localhost, a PCR dataset read through them with dynamic sharding, every image counted by its key.

A split is one record (the record ids are the pipeline's source), so every image of a record comes from the worker
that took the record. What tf.data service promises for dynamic sharding, and what the tests hold it to:
  - without failures every element arrives exactly once;
  - a worker killed mid-epoch loses the splits it was processing (at most once), and no other: every record that
    another worker took arrives whole, nothing arrives twice. The epoch ends once a worker is back at the killed
    one's address (TF 2.21 never drops a dead worker's task: without it the epoch waits, seen for over 3 min);
  - a fault-tolerant dispatcher killed and restarted on its port and work dir resumes the job from its journal.
The client reads slowly (PACE_SECONDS per image), as a training step would, so that "mid-epoch" is a window of
seconds, not a race; the records are read in order (no worker-side record shuffle, whose buffer would hold many
splits on one worker: see docs/scale-out.md). Each test prints what it measured (`pytest -s` shows it).
The servers themselves: their log line, a clean stop on SIGTERM and SIGINT, arguments refused before they start,
and why a worker must be `tfliquid serve`'s (a plain TensorFlow worker cannot run the PCR op).
"""

import collections
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid._common.ports import free_ports
from tfliquid._lib import LIBRARY_PATH
from tfliquid.pcr import format as pcr_format
from tfliquid.records import format as records_format
from tfliquid.service import serve_dispatcher, serve_worker

service = tf.data.experimental.service

IMAGES_PER_RECORD = 4
KILL_AFTER = 100  # images received before the failure, of 400
PACE_SECONDS = 0.005
SERVING_TIMEOUT = 90  # a server's start on a loaded 2-core machine: TensorFlow's import, then registration
EPOCH_TIMEOUT = 120


@pytest.fixture(scope="module")
def pcr_dataset(jpeg_files, tmp_path_factory):
    """400 real JPEGs in 4 classes, 4 per record: 100 splits, keys unique per image."""
    source = tmp_path_factory.mktemp("service_photos")
    for i, path in enumerate(jpeg_files):
        (source / f"class{i % 4}").mkdir(exist_ok=True)
        shutil.copy(path, source / f"class{i % 4}" / os.path.basename(path))
    dst = tmp_path_factory.mktemp("service_pcr") / "photos"
    tfliquid.pcr.convert(str(source), str(dst), images_per_record=IMAGES_PER_RECORD, progress=False)
    return str(dst)


@pytest.fixture(scope="module")
def record_of_key(pcr_dataset) -> dict[str, str]:
    """Image key -> the record (the split) that holds it."""
    index = pcr_format.read_index(pcr_dataset)
    records = {}
    for entry in index.records:
        with open(os.path.join(pcr_dataset, entry.path), "rb") as f:
            for key in records_format.parse_header(f.read()).keys:
                records[key.decode()] = entry.path
    assert len(records) == len(index.records) * IMAGES_PER_RECORD == 400
    return records


class Server:
    """One `tfliquid serve` process; its stderr goes to a file."""

    def __init__(self, args: list[str], log_path, preexec_fn=None):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tfliquid", "serve", *args],
                stdout=subprocess.DEVNULL,
                stderr=log,
                preexec_fn=preexec_fn,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def wait_serving(self) -> None:
        """Until its "serving" line: a worker logs it once registered with the dispatcher."""
        deadline = time.monotonic() + SERVING_TIMEOUT
        while ": serving " not in self.log():
            assert self.process.poll() is None, f"{self.log_path.name} exited:\n{self.log()}"
            assert time.monotonic() < deadline, f"{self.log_path.name} did not serve in {SERVING_TIMEOUT} s"
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self, signum) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=30)


class Cluster:
    """A fault-tolerant dispatcher and two workers on localhost, each in its own process, on ports the OS chose.
    One cluster serves the module's tests in turn: a test may kill or stop its servers, and the next test finds
    them restarted on the same ports (the dispatcher on the same work dir, replaying its journal)."""

    def __init__(self, directory):
        self.directory = directory
        self.dispatcher_port, *self.worker_ports = free_ports(3)
        self.servers: list[Server] = []
        self.dispatcher = self.start_dispatcher()
        self.workers: list[Server] = []
        for index in range(len(self.worker_ports)):
            self.start_worker(index)
        self.wait_serving()

    @property
    def target(self) -> str:
        return f"grpc://localhost:{self.dispatcher_port}"

    def start_dispatcher(self) -> Server:
        """The dispatcher, on the cluster's port and work dir: a restarted one replays the journal."""
        args = ["dispatcher", "--port", str(self.dispatcher_port), "--work-dir", str(self.directory / "work")]
        self.dispatcher = self._start(args, "dispatcher")
        return self.dispatcher

    def start_worker(self, index: int) -> Server:
        """Worker `index`, at its address: a replacement takes the place of the one that was there."""
        port = self.worker_ports[index]
        args = ["worker", "--dispatcher", f"localhost:{self.dispatcher_port}", "--port", str(port)]
        server = self._start([*args, "--worker-address", "localhost"], f"worker-{port}")
        self.workers[index : index + 1] = [server]
        return server

    def _start(self, args, name) -> Server:
        server = Server(args, self.directory / f"{name}-{len(self.servers)}.log")
        self.servers.append(server)
        return server

    def wait_serving(self) -> None:
        for server in (self.dispatcher, *self.workers):
            server.wait_serving()

    def serve_again(self) -> None:
        """Restarts whatever server an earlier test killed or stopped, and waits until all serve."""
        if self.dispatcher.process.poll() is not None:
            self.start_dispatcher()
        for index, worker in enumerate(self.workers):
            if worker.process.poll() is not None:
                self.start_worker(index)
        self.wait_serving()

    def kill_all(self) -> None:
        for server in self.servers:
            if server.process.poll() is None:
                server.kill()


@pytest.fixture(scope="module")
def serving_cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp("cluster"))
    yield started
    started.kill_all()


@pytest.fixture
def cluster(serving_cluster):
    """The module's cluster, a dispatcher and two workers serving (those an earlier test took down restarted)."""
    serving_cluster.serve_again()
    return serving_cluster


def _worker_pid() -> tf.Tensor:
    """The pid of the process running the pipeline (the first field of /proc/self/stat): the worker's, which
    shows which worker produced each element, and that tfliquid's op ran in that process."""
    return tf.strings.to_number(tf.strings.split(tf.io.read_file("/proc/self/stat"), " ")[0], tf.int64)


def _distributed(pcr_dataset: str, target: str, job_name: str) -> tf.data.Dataset:
    images = tfliquid.PCRDataset(pcr_dataset, shuffle=False, with_keys=True).map(
        lambda x: {"key": x["key"], "pixels": tf.image.resize(x["image"], [16, 16]), "pid": _worker_pid()}
    )
    return images.apply(
        service.distribute(processing_mode=service.ShardingPolicy.DYNAMIC, service=target, job_name=job_name)
    )


class Epoch:
    """One epoch read on a thread at PACE_SECONDS per element: (key, worker pid, arrival time) of each element.
    `reached_kill_point` is set once KILL_AFTER elements have arrived; the reader then waits for `may_go_on`, so
    that the failure happens exactly there."""

    def __init__(self, dataset: tf.data.Dataset):
        self.arrivals: list[tuple[str, int, float]] = []
        self.reached_kill_point, self.may_go_on = threading.Event(), threading.Event()
        self._error: list[BaseException] = []
        self._reader = threading.Thread(target=self._read, args=(dataset,), daemon=True)
        self._reader.start()

    def _read(self, dataset):
        try:
            for x in dataset.as_numpy_iterator():
                self.arrivals.append((x["key"].decode(), int(x["pid"]), time.monotonic()))
                if len(self.arrivals) == KILL_AFTER:
                    self.reached_kill_point.set()
                    self.may_go_on.wait()
                time.sleep(PACE_SECONDS)
        except BaseException as e:  # shown by join(), in the test's thread
            self._error.append(e)

    def wait_for_kill_point(self) -> None:
        assert self.reached_kill_point.wait(EPOCH_TIMEOUT), f"{len(self.arrivals)} elements in {EPOCH_TIMEOUT} s"

    def join(self) -> None:
        self.may_go_on.set()
        self._reader.join(EPOCH_TIMEOUT)
        assert not self._reader.is_alive(), f"the epoch did not end in {EPOCH_TIMEOUT} s ({len(self.arrivals)} in)"
        if self._error:
            raise self._error[0]


def _count(arrivals, record_of_key) -> dict:
    """Per key and per record: what arrived twice, what was lost, which records arrived only in part."""
    times_received = collections.Counter(key for key, _, _ in arrivals)
    assert set(times_received) <= set(record_of_key), "an element that is not in the dataset arrived"
    lost = set(record_of_key) - set(times_received)
    images_of = collections.Counter(record_of_key.values())
    received_of = collections.Counter(record_of_key[key] for key in times_received)
    return {
        "received": len(arrivals),
        "duplicates": sum(n - 1 for n in times_received.values()),
        "lost": len(lost),
        "lost_records": len({record_of_key[key] for key in lost}),
        "partial_records": sorted(r for r, n in received_of.items() if n < images_of[r]),
    }


@pytest.mark.slow
def test_without_failures_every_image_arrives_once_from_the_two_workers(cluster, pcr_dataset, record_of_key):
    start = time.monotonic()
    epoch = Epoch(_distributed(pcr_dataset, cluster.target, "no-failure"))
    epoch.join()
    counts = _count(epoch.arrivals, record_of_key)
    print(f"\nno failure: {counts['received']} images in {time.monotonic() - start:.1f} s")
    assert counts["received"] == 400 and counts["duplicates"] == counts["lost"] == 0
    # Both worker processes ran the pipeline, tfliquid's PCR op included, and the client process ran none of it.
    assert {pid for _, pid, _ in epoch.arrivals} == {worker.pid for worker in cluster.workers}


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_worker_killed_or_stopped_mid_epoch_loses_only_its_own_splits(cluster, pcr_dataset, record_of_key, stop):
    """SIGTERM stops the process cleanly (exit 0), but for its jobs it fails as SIGKILL does: tf.data service has
    no way for a worker to hand back what it holds (docs/scale-out.md)."""
    epoch = Epoch(_distributed(pcr_dataset, cluster.target, f"worker-{stop.name}"))
    epoch.wait_for_kill_point()
    killed, survivor = cluster.workers
    if stop == signal.SIGKILL:
        killed.kill()
    else:
        assert killed.stop(stop) == 0
    killed_at = time.monotonic()
    epoch.may_go_on.set()
    # The epoch ends only when a worker takes the dead one's place (at its address); the survivor goes on meanwhile.
    replacement = cluster.start_worker(0)
    replacement.wait_serving()
    epoch.join()
    counts = _count(epoch.arrivals, record_of_key)
    from_survivor = sum(1 for _, pid, t in epoch.arrivals if pid == survivor.pid and t > killed_at)
    print(
        f"\nworker stopped by {stop.name} after {KILL_AFTER} of 400 images: {counts['received']} received, "
        f"{counts['lost']} lost "
        f"({counts['lost_records']} records of {IMAGES_PER_RECORD}), {counts['duplicates']} twice; "
        f"{from_survivor} from the surviving worker after the kill, {time.monotonic() - killed_at:.1f} s to the end"
    )
    assert counts["duplicates"] == 0 and counts["lost"] >= 0
    assert counts["received"] + counts["lost"] == 400
    assert from_survivor > 0  # the job went on with the remaining worker
    # At most once: what is lost is the killed worker's splits, and no other worker's record arrived in part.
    survivors = {survivor.pid, replacement.pid}
    partial_from_survivors = [
        key for key, pid, _ in epoch.arrivals if pid in survivors and record_of_key[key] in counts["partial_records"]
    ]
    assert partial_from_survivors == []


@pytest.mark.slow
def test_a_fault_tolerant_dispatcher_killed_and_restarted_mid_epoch_resumes_the_job(
    cluster, pcr_dataset, record_of_key
):
    epoch = Epoch(_distributed(pcr_dataset, cluster.target, "dispatcher-killed"))
    epoch.wait_for_kill_point()
    cluster.dispatcher.kill()
    killed_at = time.monotonic()
    epoch.may_go_on.set()
    restarted = cluster.start_dispatcher()  # same port, same work dir: it replays its journal
    restarted.wait_serving()
    resumed_at = time.monotonic()
    epoch.join()
    counts = _count(epoch.arrivals, record_of_key)
    after_restart = sum(1 for _, _, t in epoch.arrivals if t > resumed_at)
    print(
        f"\ndispatcher SIGKILLed after {KILL_AFTER} of 400 images, restarted in {resumed_at - killed_at:.1f} s: "
        f"{counts['received']} received, {counts['lost']} lost, {counts['duplicates']} twice; "
        f"{after_restart} after the restart"
    )
    assert counts["duplicates"] == 0 and counts["lost"] >= 0
    assert counts["received"] + counts["lost"] == 400
    assert after_restart > 0  # the job resumed: the workers got their next splits from the restarted dispatcher
    assert counts["partial_records"] == []  # a split is delivered whole or not at all


@pytest.mark.slow
def test_a_second_dispatcher_on_a_work_dir_in_use_is_refused(cluster):
    (port,) = free_ports(1)
    work_dir = cluster.directory / "work"
    result = subprocess.run(
        [sys.executable, "-m", "tfliquid", "serve", "dispatcher", "--port", str(port), "--work-dir", work_dir],
        capture_output=True,
        text=True,
        timeout=SERVING_TIMEOUT,
    )
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tfliquid: error: work_dir {work_dir} is in use by another dispatcher (pid ")
    assert f"pid {cluster.dispatcher.pid} on" in line and line.endswith("one dispatcher per work dir")


@pytest.mark.slow
def test_a_worker_started_before_its_dispatcher_says_it_waits_and_obeys_stop_signals(tmp_path):
    dispatcher_port, first_port, second_port = free_ports(3)
    workers = [
        Server(["worker", "--dispatcher", f"localhost:{dispatcher_port}", "--port", str(port)], tmp_path / f"w{port}")
        for port in (first_port, second_port)
    ]
    waiting = f"tfliquid serve worker: waiting for the dispatcher at localhost:{dispatcher_port} (Connection refused)"
    for worker in workers:
        deadline = time.monotonic() + SERVING_TIMEOUT
        while waiting not in worker.log():
            assert worker.process.poll() is None and time.monotonic() < deadline, worker.log()
            time.sleep(0.05)
    # A stop signal ends a waiting worker; the other one registers once its dispatcher starts.
    assert workers[0].stop(signal.SIGINT) == 0
    assert workers[0].log().endswith("tfliquid serve worker: stopped on SIGINT\n")
    dispatcher = Server(["dispatcher", "--port", str(dispatcher_port), "--no-fault-tolerance"], tmp_path / "d")
    try:
        workers[1].wait_serving()
    finally:
        for server in (workers[1], dispatcher):
            assert server.stop(signal.SIGTERM) == 0


def _files_of_at_most_a_megabyte() -> None:
    """In a child before it runs the server: a write past 1 MB fails with EFBIG, as a full disk fails with ENOSPC."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


@pytest.mark.slow
def test_a_dispatcher_that_cannot_write_a_dataset_refuses_it_and_serves_on(tmp_path):
    """A work dir that fills while a client registers a dataset: the client gets one clear error naming the file,
    the dispatcher serves on, and registers the next dataset over what the failed write left."""
    dispatcher_port, worker_port = free_ports(2)
    args = ["dispatcher", "--port", str(dispatcher_port), "--work-dir", str(tmp_path / "work")]
    dispatcher = Server(args, tmp_path / "dispatcher.log", preexec_fn=_files_of_at_most_a_megabyte)
    try:
        dispatcher.wait_serving()
        worker = service.WorkerServer(service.WorkerConfig(f"localhost:{dispatcher_port}", port=worker_port))
        target = f"grpc://localhost:{dispatcher_port}"

        def total(size: int) -> list[int]:
            data = np.random.default_rng(size).integers(0, 255, size, dtype=np.uint8)  # in the graph: its size
            dataset = tf.data.Dataset.from_tensors(tf.constant(data)).map(lambda x: tf.reduce_sum(tf.cast(x, tf.int64)))
            return list(dataset.apply(service.distribute("parallel_epochs", target)).as_numpy_iterator())

        with pytest.raises(tf.errors.OpError, match=r"register dataset: .*/work/datasets/\S+; File too large"):
            total(2 << 20)
        assert dispatcher.process.poll() is None
        assert total(1000) == [np.random.default_rng(1000).integers(0, 255, 1000, dtype=np.uint8).sum(dtype=np.int64)]
        worker.stop()
    finally:
        assert dispatcher.stop(signal.SIGTERM) == 0


@pytest.mark.slow
def test_sigterm_and_sigint_stop_the_servers_cleanly(cluster):
    """The cluster's servers, after the tests above ran their jobs on them (the dispatcher a restarted one)."""
    dispatcher, worker = cluster.dispatcher, cluster.workers[1]
    worker_port, work_dir = cluster.worker_ports[1], cluster.directory / "work"
    assert worker.stop(signal.SIGINT) == 0
    assert dispatcher.stop(signal.SIGTERM) == 0
    runs = f"ops {LIBRARY_PATH}, tfliquid {tfliquid.__version__}, TensorFlow {tf.__version__}"
    assert (
        f"tfliquid serve dispatcher: serving grpc://{socket.gethostname()}:{cluster.dispatcher_port} (fault-tolerant, "
        f"journal in {work_dir}); {runs}\ntfliquid serve dispatcher: stopped on SIGTERM\n"
    ) in dispatcher.log()
    assert (
        f"tfliquid serve worker: serving localhost:{worker_port} for the dispatcher at "
        f"localhost:{cluster.dispatcher_port}; {runs}\ntfliquid serve worker: stopped on SIGINT\n"
    ) in worker.log()
    assert (work_dir / "tf_data_dispatcher_journal").is_dir()


def test_bad_arguments_are_refused_before_a_server_starts(tmp_path):
    (port,) = free_ports(1)
    with pytest.raises(tfliquid.ArgumentError, match=r"port must be an int in 1\.\.65535, got 0"):
        serve_dispatcher(0, tmp_path)
    with pytest.raises(tfliquid.ArgumentError, match="needs a work_dir for its journal"):
        serve_dispatcher(port)
    (tmp_path / "file").write_text("")
    with pytest.raises(tfliquid.ArgumentError, match="work_dir .*/file/journal cannot be created: Not a directory"):
        serve_dispatcher(port, tmp_path / "file" / "journal")
    with pytest.raises(tfliquid.ArgumentError, match="dispatcher must be HOST:PORT"):
        serve_worker("grpc://dispatcher", port)
    with pytest.raises(tfliquid.ArgumentError, match="worker_address must be a host name without a port"):
        serve_worker("localhost:5050", port, worker_address="localhost:5051")
    with pytest.raises(tfliquid.ArgumentError, match="each of worker_addresses must be HOST:PORT"):
        serve_dispatcher(port, fault_tolerant=False, worker_addresses=["localhost"])


@pytest.mark.slow
@pytest.mark.parametrize("family, host", [(socket.AF_INET, ""), (socket.AF_INET6, "::1")], ids=["IPv4", "IPv6"])
def test_a_port_in_use_is_refused_with_one_line(tmp_path, family, host):
    """gRPC binds with SO_REUSEPORT: without the check a second server would share the port with the first. A
    port held over IPv6 only counts too: a worker given localhost:PORT may reach the other process there."""
    if family == socket.AF_INET6 and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with socket.socket(family) as taken:
        if family == socket.AF_INET6:
            taken.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        taken.bind((host, 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tfliquid", "serve", "dispatcher", "--port", str(port), "--work-dir", tmp_path],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"tfliquid: error: port {port} is in use (Address already in use): is a server already running there?"
    ]


@pytest.mark.slow
def test_a_worker_without_tfliquid_cannot_run_the_pcr_op(pcr_dataset, tmp_path):
    """What `tfliquid serve worker` is for: a plain TensorFlow worker has not registered tfliquid's ops."""
    dispatcher = service.DispatchServer()  # in this process, which has loaded the ops
    (worker_port,) = free_ports(1)
    log_path = tmp_path / "plain-worker.log"
    with open(log_path, "w") as log:
        plain_worker = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import tensorflow as tf, time\n"
                "service = tf.data.experimental.service\n"
                f"worker = service.WorkerServer(service.WorkerConfig('{dispatcher._address}', port={worker_port}))\n"
                "time.sleep(600)",
            ],
            stderr=log,
        )
    try:
        deadline = time.monotonic() + SERVING_TIMEOUT
        while dispatcher._num_workers() < 1:
            registering = plain_worker.poll() is None and time.monotonic() < deadline
            assert registering, f"the plain worker did not register:\n{log_path.read_text()}"
            time.sleep(0.05)
        with pytest.raises(tf.errors.NotFoundError, match="Op type not registered 'Liquid>"):
            list(_distributed(pcr_dataset, dispatcher.target, "plain-worker"))
    finally:
        plain_worker.kill()
        plain_worker.wait()
