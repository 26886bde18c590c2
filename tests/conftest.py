"""Shared fixtures, all made from the photographs shipped inside scikit-image and scikit-learn (no download)."""

import gc
import os
import pathlib
import shutil

import pytest
from hypothesis import settings
from PIL import Image

from tfliquid.samples.photos import photo_path

import jpeg_samples

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# CI (.ci/run sets CI=true) draws the same examples in every run, so a red CI is reproducible and never chance;
# elsewhere Hypothesis keeps exploring new ones. Loaded here, before any test module applies @settings.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true"):
    settings.load_profile("ci")


def pytest_runtest_setup(item):
    """Each test starts with the earlier tests' garbage collected and their survivors frozen out of the collector.
    The suite's heap grows with TensorFlow's and Keras' state test after test, and every full collection walks all
    of it: late in the suite, the 30 examples of an L3 property test (Hypothesis allocates a great deal) took 37 s
    where alone they take 0.5 s."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def zoo_paths(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Real JPEGs from cjpeg/jpegtran/Pillow: 4:2:0, 4:4:4, grey, restart markers, EXIF/ICC, progressive..."""
    return jpeg_samples.make_jpeg_zoo(tmp_path_factory.mktemp("zoo"))


@pytest.fixture(scope="session")
def zoo(zoo_paths) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in zoo_paths.items()}


@pytest.fixture(scope="session")
def photo_folder(tmp_path_factory, zoo_paths) -> pathlib.Path:
    """An image folder tree (3 classes) of real photos in every flavour the converter must handle.

    Colour and grey JPEGs (10 and 6 scans after transcoding) share records, baseline and progressive inputs
    mix, and two PNGs take the lossy path.
    """
    root = tmp_path_factory.mktemp("photos")
    classes = {
        "animals": ["baseline_420", "baseline_444", "metadata", "progressive_six_scans", "china"],
        "grey": ["grey", "progressive_grey", "restart_rows"],
        "things": ["restart_blocks", "odd_size", "flower", "progressive", "progressive_restart", "progressive_pillow"],
    }
    for class_name, names in classes.items():
        (root / class_name).mkdir()
        for name in names:
            shutil.copy(zoo_paths[name], root / class_name / f"{name}.jpg")
    for name in ("coffee.png", "rocket.jpg"):
        img = Image.open(photo_path("skimage", name))
        img.thumbnail((160, 160))
        img.save(root / "things" / (pathlib.Path(name).stem + ".png"))
    return root


@pytest.fixture(scope="session")
def liquid_photos(photo_folder, tmp_path_factory) -> str:
    """photo_folder as a Liquid dataset, PNG and raw half and half, 3 images per record."""
    import tfliquid

    dst = tmp_path_factory.mktemp("liquid_photos") / "liquid"
    tfliquid.liquid.convert(
        str(photo_folder), str(dst), formats="png,raw", ratio="1:1", images_per_record=3, progress=False
    )
    return str(dst)


@pytest.fixture(scope="session")
def jpeg_files(tmp_path_factory) -> list[str]:
    """400 real JPEGs, crops of the shipped photos at several sizes (3-12 KB): the items of the cache tests."""
    import numpy as np

    from tfliquid.samples.photos import load_photos

    root = tmp_path_factory.mktemp("jpeg_files")
    photos = [photo.convert("RGB") for _, photo in load_photos()]
    rng = np.random.default_rng(0)
    paths = []
    for i in range(400):
        photo = photos[i % len(photos)]
        side = int(rng.integers(48, 112))
        x, y = int(rng.integers(0, photo.width - side)), int(rng.integers(0, photo.height - side))
        path = root / f"{i:03d}.jpg"
        photo.crop((x, y, x + side, y + side)).save(path, quality=90)
        paths.append(str(path))
    return paths
