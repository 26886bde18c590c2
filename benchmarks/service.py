"""A PCR pipeline read through tf.data service (two local worker processes) against the same pipeline in-process.

    python -m benchmarks.service [--images-per-class 100] [--size 320] [--batch-size 64] [--repeat 3] [--rounds 5]

The sample photos as a PCR dataset (records of 128 images, the fast scan script, as benchmarks.pcr_read makes it),
read at full fidelity: PCRDataset (records in order; it decodes the JPEGs), --repeat epochs per pass, resized to
224 x 224, cast back to uint8 (what a training host would be sent), batched. Peers, one pass each per round, in
turns (common.round_robin):
  - in-process: the pipeline run by this process;
  - tf.data service: the same pipeline, built here and run by two `tfliquid serve worker` processes of a
    `tfliquid serve dispatcher` (fault-tolerant, as by default), with dynamic sharding (each record to one worker),
    the batches sent to this process over gRPC.
Each peer runs one pass first, untimed (tracing, the page cache, the workers' first job). A pass's rate is counted
from its first batch to its last; what a pass costs to start (until its first batch: for the service the job's
creation and the workers' pipelines) and to end (from its last batch to the end of the sequence: for the service,
until the client's next heartbeat to the dispatcher says the job has ended), and the deletion of its iterator, are
shown apart: they are paid once per epoch, not per image. The service's overhead per image is 1 / its rate - 1 / the
in-process rate, per round. Here the workers share the client's cores, so it counts the workers' serialization and
compression and the client's receiving and decompression alike; on separate hosts only the client's part stays on
the training host, and the workers' cores are added.
Records are read in order because a record shuffle on a worker under dynamic sharding buffers splits: one worker
may take most of the records into its shuffle buffer and leave the other idle (docs/scale-out.md).
No target (issue 17): the figures are for information.
"""

from __future__ import annotations

import argparse
import functools
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

import tfliquid
from tfliquid._common.ports import free_ports

from benchmarks import common

service = tf.data.experimental.service

SIDE = 224


def pipeline(path: str, batch_size: int, epochs: int) -> tf.data.Dataset:
    images = (
        tfliquid.PCRDataset(path, shuffle=False)
        .repeat(epochs)
        .map(
            lambda x: (tf.cast(tf.image.resize(x["image"], [SIDE, SIDE]), tf.uint8), x["label"]),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    )
    return images.batch(batch_size)


def steady_rate(timing: common.PassTiming, batch_size: int) -> float:
    """Images per second from a pass's first batch to its last (its start and its end are shown apart)."""
    return (timing.elements - batch_size) / sum(timing.batch_seconds[1:])


def start_server(args: list[str], log_path: str) -> subprocess.Popen:
    """A `tfliquid serve` process, once it has logged that it serves (a worker: once registered)."""
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "tfliquid", "serve", *args], stderr=log)
    deadline = time.monotonic() + 120
    while ": serving " not in pathlib.Path(log_path).read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"tfliquid serve {args[0]} did not start:\n{pathlib.Path(log_path).read_text()}")
        time.sleep(0.05)
    return process


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_photo_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help="epochs per timed pass")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    folder = common.photo_folder_of(args)
    pcr = os.path.join(args.workdir, f"photos-{args.images_per_class}x{args.size}-pcr-fast")
    tfliquid.pcr.convert(folder, pcr, images_per_record=128, scan_script="fast", progress=False)
    n = tfliquid.PCRDataset(pcr).num_images

    with tempfile.TemporaryDirectory(prefix="tfliquid-service-bench-") as directory:
        dispatcher_port, *worker_ports = free_ports(3)
        servers = []
        try:
            servers.append(
                start_server(
                    ["dispatcher", "--port", str(dispatcher_port), "--work-dir", os.path.join(directory, "work")],
                    os.path.join(directory, "dispatcher.log"),
                )
            )
            for port in worker_ports:
                worker = ["worker", "--dispatcher", f"localhost:{dispatcher_port}", "--port", str(port)]
                servers.append(
                    start_server([*worker, "--worker-address", "localhost"], os.path.join(directory, f"{port}.log"))
                )
            local = pipeline(pcr, args.batch_size, args.repeat)
            served = local.apply(
                service.distribute(
                    processing_mode=service.ShardingPolicy.DYNAMIC, service=f"grpc://localhost:{dispatcher_port}"
                )
            )
            peers = {"in-process": local, "tf.data service, 2 workers": served}
            for dataset in peers.values():
                timing = common.timed_pass(dataset)
                if timing.elements != n * args.repeat:
                    raise SystemExit(f"a pass read {timing.elements} images, not {n * args.repeat}")
            print(
                f"{n} JPEG crops ({args.size}x{args.size}) as PCR at full fidelity, decoded, resized to "
                f"{SIDE}x{SIDE} (uint8), batches of {args.batch_size}, {args.repeat} epochs per pass; "
                f"{os.cpu_count()} cores shared by this process and the workers; {args.rounds} rounds"
            )
            timings = {name: [] for name in peers}

            def timed(name):
                timings[name].append(common.timed_pass(peers[name]))
                return timings[name][-1]

            common.round_robin({name: functools.partial(timed, name) for name in peers}, args.rounds)
        finally:
            for server in servers:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)

    steady = {name: [steady_rate(t, args.batch_size) for t in ts] for name, ts in timings.items()}
    print(
        f"\n{'peer':<28}{'img/s, median [range]':>24}{'first batch, s':>22}{'end of pass, s':>22}"
        f"{'iterator deletion, s':>24}"
    )
    for name, ts in timings.items():
        first = [t.batch_seconds[0] for t in ts]
        end = [t.seconds - sum(t.batch_seconds) for t in ts]
        deletion = [t.teardown_seconds for t in ts]
        print(
            f"{name:<28}{common.median_and_range(steady[name], '{:,.0f}'):>24}"
            f"{common.median_and_range(first):>22}{common.median_and_range(end):>22}"
            f"{common.median_and_range(deletion):>24}"
        )
    local_rates, served_rates = steady["in-process"], steady["tf.data service, 2 workers"]
    print("\nFor information (median [range] over rounds):")
    print(f"  service / in-process: {common.median_and_range(common.ratios(served_rates, local_rates))}")
    overhead = [(1 / s - 1 / i) * 1e6 for s, i in zip(served_rates, local_rates, strict=True)]
    print(f"  service overhead per image: {common.median_and_range(overhead, '{:,.0f}')} us")


if __name__ == "__main__":
    main()
