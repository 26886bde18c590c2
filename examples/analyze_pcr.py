"""A script for `tfliquid analyze`: the sample model trained on a PCR dataset of the shipped photos, read from an
emulated slow disk. It defines model() and dataset(); the analyzer measures where training stalls and which
change fixes it.

    tfliquid analyze examples/analyze_pcr.py [--json report.json] [--plot rate-vs-cache.png]

The dataset is made on the first run under $TFLIQUID_ANALYZE_WORKDIR (default: a folder in the temp directory), with
IMAGES_PER_CLASS images of each of the 10 photos (default 64). Set READ_BANDWIDTH (bytes/s) to emulate another disk;
0 reads at full speed.
"""

import os
import tempfile

import tfliquid
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos

WORKDIR = os.environ.get("TFLIQUID_ANALYZE_WORKDIR", os.path.join(tempfile.gettempdir(), "tfliquid-analyze-example"))
READ_BANDWIDTH = float(os.environ.get("READ_BANDWIDTH", 4e6))
IMAGES_PER_CLASS = int(os.environ.get("IMAGES_PER_CLASS", 64))
BATCH = 32


def model():
    return sample_model.small_cnn(len(sample_photos.PHOTOS))


def dataset() -> tfliquid.analysis.InputPipeline:
    pcr = os.path.join(WORKDIR, "train-pcr")
    if not os.path.exists(pcr):
        folder = os.path.join(WORKDIR, "photos")
        if not os.path.exists(folder):
            sample_photos.write_image_folder(folder + ".tmp", IMAGES_PER_CLASS, size=160, seed=0)
            os.replace(folder + ".tmp", folder)
        tfliquid.pcr.convert(folder, pcr, images_per_record=64, progress=False)
    tfliquid.io.set_read_bandwidth(READ_BANDWIDTH or None)
    return tfliquid.analysis.pcr_pipeline(pcr, sample_model.preprocess, BATCH, seed=0)
