"""What the tuner cannot change during training, said as what to run: changes of the stored dataset or of where
the input runs. Given once, when the input still holds training up and no lever is left."""

from __future__ import annotations

import math

from tfliquid.keras.tuner.diagnosis import CPU, STORAGE, Diagnosis
from tfliquid.keras.tuner.levers import Settings

RECORDS_PER_READER = 4  # records per parallel read for an epoch's interleave to keep every reader busy


def advice(tuner, diagnosis: Diagnosis, settings: Settings) -> list[str]:
    lines = []
    records, cores = tuner.num_records, tuner.cores
    if diagnosis.kind == STORAGE:
        held = settings.cache_bytes / max(tuner.bytes_per_epoch(settings.scan_group), 1)
        if held < 1:
            needed = math.ceil(tuner.bytes_per_epoch(settings.scan_group) * 1.02)
            lines.append(
                f"a cache of the whole dataset needs memory_budget={needed:,} (bytes); it now holds {held:.0%}"
            )
        if records < RECORDS_PER_READER * cores:
            per_record = math.ceil(tuner.num_images / (RECORDS_PER_READER * cores))
            lines.append(
                f"more records read in parallel: {records} records for {cores} cores; reconvert with "
                f"`tfliquid convert pcr SRC DST --images-per-record {per_record}`"
            )
    if diagnosis.kind == CPU and tuner.dispatcher is None:
        lines.append(
            "the prep on other machines: tf.data service workers (docs/scale-out.md), then "
            "InputTuner(..., dispatcher='grpc://HOST:PORT')"
        )
    return lines
