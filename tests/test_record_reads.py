"""The replay of partly cached epochs (tfliquid.analysis.record_reads): by hand, at its limits, and on the
benchmark's records, where spreading the reads over the epoch saw no stall."""

import pytest

from tfliquid.analysis.record_reads import replayed_rate

# 10 records of 64 items at scan group 6 of the benchmark's PCR dataset: 330 kB each, from a 3 MB/s disk.
RECORDS = [330_000.0] * 10
DISK = 3e6
JOB = 3810.0  # items/s all cached


def test_one_read_at_a_time_by_hand():
    # 4 records of 250 items and 250 kB, 2 of them cached; storage at 100 kB/s (2.5 s a record), the job at 400
    # items/s (0.625 s a record). Read one at a time, each record is opened when the one before it ends, so an
    # epoch is 2 x (2.5 + 0.625) + 2 x 0.625 = 7.5 s in any order: 1,000 / 7.5 items/s.
    rate = replayed_rate([250_000.0] * 4, 0.0, 505_000, 1000, 400.0, 100_000.0, 0.0, read_ahead=1)
    assert rate == pytest.approx(1000 / 7.5)
    # Spread over the epoch, the same reads would allow 100 / 0.5 = 200 items/s: more than the replay gives.


def test_the_limits():
    total = sum(RECORDS)
    everything = replayed_rate(RECORDS, 0.0, total, 640, JOB, DISK, 0.0, read_ahead=6)
    assert everything == pytest.approx(JOB)  # all cached: the job's own rate
    nothing = replayed_rate(RECORDS, 0.0, 0.0, 640, JOB, DISK, 0.0, read_ahead=6)
    storage = DISK / (330_000 / 64)  # items/s the disk delivers: 582
    assert 0.95 * storage < nothing <= storage * 1.001  # nothing cached: the disk's rate, reads back to back


def test_a_lone_record_on_storage_stalls_the_job():
    # A 90% cache holds 9 of the 10 records; the tenth takes 110 ms to read in a 168-ms epoch. Spread over the
    # epoch those reads allow 582 items/s / 0.1 = 5,820, more than the job: no stall. Replayed, the job waits
    # whenever it reaches that record before its read ends (measured: 0.94 of all cached).
    capacity = 9.5 * 330_000
    lone = replayed_rate(RECORDS, 0.0, capacity, 640, JOB, DISK, -0.05, read_ahead=6)
    assert 0.85 * JOB < lone < 0.97 * JOB
    # Read further ahead, it hides; a seek in place of the throttle's banked 50 ms stalls it more.
    assert replayed_rate(RECORDS, 0.0, capacity, 640, JOB, DISK, -0.05, read_ahead=10) > lone
    assert replayed_rate(RECORDS, 0.0, capacity, 640, JOB, DISK, 0.01, read_ahead=6) < lone
    # Two records on storage (80%): 220 ms of reads an epoch; spread over it, 0.83 of the job (measured: 0.66).
    two = replayed_rate(RECORDS, 0.0, 8.5 * 330_000, 640, JOB, DISK, -0.05, read_ahead=6)
    assert two < 0.75 * JOB


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="read-ahead"):
        replayed_rate(RECORDS, 0.0, 1e6, 640, JOB, DISK, 0.0, read_ahead=0)
    with pytest.raises(ValueError, match="records"):
        replayed_rate([], 0.0, 1e6, 640, JOB, DISK, 0.0, read_ahead=1)
