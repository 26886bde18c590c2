"""The README's and the guides' commands and code blocks, run as written on a small dataset made here.

Every fenced `sh` and `python` block of README.md and docs/*.md runs, in document order, in one working directory
that holds what a reader starts from (`photos/`, a folder of real photos of mixed sizes and kinds in class
subfolders; `photos192/`, one size; `train-*.tfrecord.gz`, TFRecords in the ImageNet layout; `scan.png`). A shell
block runs with `tfliquid` on the PATH and must exit 0; a Python block runs in one namespace per document, as a
reader pasting a guide's blocks into one session, given the names a reader's own code supplies (`model`, `prep`,
... : `_reader_names`). Each block is run as written but for SHORTER (training epochs, the profiler's passes: the
test checks that the code runs, not that it trains). A block identical to one already run is not run again, nor a
shell command that already ran.

A block that needs what this machine cannot give (a cluster, a GPU machine, minutes of measurement) is listed in
NOT_RUN with the reason and the test that runs its code instead; any other block, a new one included, runs.
"""

from __future__ import annotations

import linecache
import os
import pathlib
import re
import shutil
import subprocess
import sys
import types

import pytest
from PIL import Image

from tfliquid.samples import photos as sample_photos

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The README first: the guides read what its blocks make (train-pcr/).
DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]

# (document, a line of the block) -> why it is not run here, and where its code is tested.
NOT_RUN = {
    ("README.md", "order = tfliquid.order.SeededOrder(num_records"): "an endless order: a dataset small enough for "
    "this test has fewer than 64 images per worker epoch, so steps_per_epoch is 0; test_pcr_order.py fits on it",
    ("README.md", "make demo"): "the set-up itself: `make test` runs this test",
    ("README.md", "tfliquid analyze examples/analyze_pcr.py"): "minutes of measurement; "
    "test_analysis.py::test_cli_on_the_example_script runs it with --quick",
    ("README.md", "report = tfliquid.analysis.analyze(model, pipeline)"): "minutes of measurement; "
    "test_analysis.py runs analyze() and plan_threads() on small pipelines",
    ("README.md", "--runner beam"): "an Apache Beam run and a Flink cluster; test_beam_conversion.py runs the "
    "DirectRunner",
    ("docs/analysis.md", "tfliquid analyze examples/analyze_pcr.py"): "as in the README",
    ("docs/analysis.md", "report = tfliquid.analysis.analyze(model, pipeline)"): "as in the README",
    ("docs/benchmarks.md", "python -m benchmarks."): "a benchmark: minutes each",
    ("docs/cache.md", "DispatchServer("): "a tf.data service cluster of two hosts; test_cache_service.py runs "
    "partitioned caching on in-process servers",
    ("docs/cache.md", "service.distribute("): "a tf.data service dispatcher; test_cache_service.py",
    ("docs/l3.md", "make gpu-check"): "a GPU machine",
    ("docs/liquid.md", "epochs=None)"): "an endless dataset: this test's dozen photos make steps_per_epoch "
    "(num_images // 128) 0; test_liquid_dataset.py reads an endless LiquidDataset",
    ("docs/scale-out.md", 'runner="beam"'): "an Apache Beam run; test_beam_conversion.py",
    ("docs/scale-out.md", "service.distribute("): "a tf.data service cluster; test_service_failures.py and "
    "test_cache_service.py",
    ("docs/scale-out.md", ".shard(tf.data.experimental.SHARD_HINT"): "static sharding on a tf.data service "
    "cluster; test_cache_service.py",
}

# (pattern, replacement): what is shortened, and why (see the module docstring): training epochs, and the liquid
# profiler's timed passes (its measurements, not their number, are what the test runs).
SHORTER = [
    (re.compile(r"\bepochs=\d+"), "epochs=1"),
    (re.compile(r"^(tfliquid profile liquid [^#\n]*?)(\s*(#.*)?)$", re.M), r"\1 --epochs 1 --pass-images 128\2"),
]

# The guides read what the README's blocks make (train-pcr/) in the same working directory, so every document's
# test runs in one test process, in DOCUMENTS' order (`make test` distributes with --dist loadgroup).
pytestmark = pytest.mark.xdist_group("documents")

BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```", re.S | re.M)


def _blocks(document: str) -> list[tuple[int, str, str]]:
    """(line, language, code) of each sh and python block of a document."""
    text = (ROOT / document).read_text()
    return [(text[: m.start()].count("\n") + 2, m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def _not_run(document: str, code: str) -> str | None:
    for (doc, line), reason in NOT_RUN.items():
        if doc == document and line in code:
            return reason
    return None


def _mixed_photos(root: pathlib.Path) -> None:
    """photos/CLASS/...: JPEG crops of three sizes and PNG crops of two, in three classes."""
    for size, seed in ((160, 1), (120, 2)):
        sample_photos.write_image_folder(str(root / f"jpeg{size}"), 1, size=size, seed=seed)
    classes = sorted(os.listdir(root / "jpeg160"))[:3]
    for index, class_name in enumerate(classes):
        (root / class_name).mkdir()
        for size in (160, 120):
            for name in os.listdir(root / f"jpeg{size}" / class_name):
                shutil.copy(root / f"jpeg{size}" / class_name / name, root / class_name / f"{size}-{name}")
        photo = Image.open(root / class_name / "160-0000.jpg")
        for width, height in ((100, 75), (90 + index, 130)):
            photo.resize((width, height)).save(root / class_name / f"{width}x{height}.png")
    for size in (160, 120):
        shutil.rmtree(root / f"jpeg{size}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> pathlib.Path:
    """What a reader starts from, and a `tfliquid` command on the PATH."""
    work = tmp_path_factory.mktemp("reader")
    (work / "photos").mkdir()
    _mixed_photos(work / "photos")
    sample_photos.write_image_folder(str(work / "photos192"), 1, size=192, seed=3)
    for shard in range(2):
        folder = work / f"shard{shard}"
        sample_photos.write_image_folder(str(folder), 2, size=96, seed=10 + shard)
        sample_photos.write_tfrecords(str(folder), str(work / f"train-{shard:05d}-of-00002.tfrecord.gz"), "GZIP")
        shutil.rmtree(folder)
    Image.open(sample_photos.photo_path("skimage", "coffee.png")).convert("RGB").save(work / "scan.png")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    command = bin_dir / "tfliquid"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tfliquid "$@"\n')
    command.chmod(0o755)
    return work


def _reader_names(work: pathlib.Path, document: str) -> dict:
    """The names a reader's own code gives the blocks of `document`: a model that takes images of any size, a
    preprocess and an augment, the paths of the photos, a fetch, the sizes and indices the reader chooses."""
    import keras
    import tensorflow as tf

    import tfliquid

    num_classes = 10

    def any_size_model():
        model = keras.Sequential(
            [
                keras.Input((None, None, 3)),
                keras.layers.Rescaling(1 / 255),
                keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
                keras.layers.GlobalAveragePooling2D(),
                keras.layers.Dense(num_classes),
            ]
        )
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    def prep(element):
        return tf.image.resize(element["image"], [64, 64]), element["label"]

    def decode_and_augment(encoded, label=None):
        image = tf.io.decode_image(encoded, channels=3, expand_animations=False)
        image = tf.image.random_flip_left_right(tf.image.resize(image, [64, 64]))
        return image if label is None else (image, label)

    classes = sorted(os.listdir(work / "photos"))

    def label_of(path):
        folder = tf.strings.split(path, os.sep)[-2]
        return tf.argmax(tf.cast(tf.equal(folder, classes), tf.int32))

    paths = sorted(str(p) for p in (work / "photos").glob("*/*"))
    names = {}
    if (work / "train-pcr").exists():  # made by the README's first block; the guides read it
        train = tfliquid.PCRDataset(str(work / "train-pcr"))
        names = {"num_records": train.num_records, "dataset": train.map(prep).batch(8)}
        names["validation"] = names["dataset"]
    if document == "docs/liquid.md":  # its order is over the records of the Liquid dataset its first block makes
        names["num_records"] = tfliquid.LiquidDataset(str(work / "photos-liquid"), batch_size=1).num_records
    return {
        **names,
        "tf": tf,
        "keras": keras,
        "tfliquid": tfliquid,
        "model": any_size_model(),
        "num_classes": num_classes,
        "prep": prep,
        "preprocess": prep,
        "augment": prep,
        "decode_and_augment": decode_and_augment,
        "label_of": label_of,
        "paths": paths,
        "path": str(work / "photos-liquid"),
        "fetch": lambda key: tf.strings.as_string(key),
        "num_items": 64,
        "W": 1,
        "w": 0,
        "b": 8,
        "epochs": 2,
        "E": 1,
        "capacity_bytes": 1 << 20,
        "tensorboard": keras.callbacks.TensorBoard(str(work / "logs")),
    }


_already_run: set[str] = set()


def _run_block(document: str, line: int, language: str, code: str, work: pathlib.Path, namespace: dict) -> None:
    for pattern, replacement in SHORTER:
        code = pattern.sub(replacement, code)
    if language == "sh":  # a command run before (a guide repeats the README's) is not run again
        code = "".join(line for line in code.splitlines(True) if _command(line) not in _already_run)
    if code.strip() in _already_run or not code.strip():
        return
    where = f"{document}:{line}"
    print(f"running {where}", flush=True)  # shown with -s, and in a failure's captured output
    if language == "sh":
        env = {**os.environ, "PATH": f"{work / 'bin'}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
        run = subprocess.run(["bash", "-e", "-c", code], cwd=work, env=env, capture_output=True, text=True)
        assert run.returncode == 0, (
            f"{where} exited {run.returncode}:\n{code}\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
        )
    else:
        # As a file of its own, so that AutoGraph finds the source of the block's functions and lambdas.
        linecache.cache[where] = (len(code), None, code.splitlines(True), where)
        exec(compile(code, where, "exec"), namespace)  # noqa: S102 (the documented code)
    _already_run.add(code.strip())
    if language == "sh":
        _already_run.update(_command(line) for line in code.splitlines() if _command(line))


def _command(line: str) -> str:
    """A shell line without its comment and surrounding space."""
    return line.split("#", 1)[0].strip()


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_block_runs_as_written(document, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    if document != "README.md" and not (workdir / "train-pcr").exists():  # a guide's test run without the README's
        _run_block("README.md", 0, "sh", "tfliquid convert pcr 'train-*.tfrecord.gz' train-pcr/\n", workdir, None)
    namespace = None
    for line, language, code in _blocks(document):
        if _not_run(document, code):
            continue
        if language == "python" and namespace is None:
            # A module of its own, as a reader's script is: AutoGraph looks functions' modules up.
            module = types.ModuleType(f"reader_of_{pathlib.Path(document).stem}")
            monkeypatch.setitem(sys.modules, module.__name__, module)
            namespace = module.__dict__
            namespace.update(_reader_names(workdir, document))
        _run_block(document, line, language, code, workdir, namespace)


def test_every_block_not_run_is_listed_with_a_reason_that_still_matches():
    """A NOT_RUN entry names a block that exists: a reworded block is run again, not skipped by a stale entry."""
    stale = [key for key in NOT_RUN if not any(key[1] in code for _, _, code in _blocks(key[0]))]
    assert stale == []
