"""A small real image-classification dataset made from the photographs shipped inside scikit-image and
scikit-learn (no download): each photo is a class, each image a random crop of it, saved as a baseline JPEG.

It feeds the demo, the benchmarks and the tests. scikit-image and scikit-learn are needed only here
(`pip install scikit-image scikit-learn`).
"""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from tfliquid._common.errors import DependencyError

# (package, file) of every colour photograph used; one class each.
PHOTOS = [
    ("skimage", "astronaut.png"),
    ("skimage", "chelsea.png"),
    ("skimage", "coffee.png"),
    ("skimage", "motorcycle_left.png"),
    ("skimage", "rocket.jpg"),
    ("skimage", "retina.jpg"),
    ("skimage", "hubble_deep_field.jpg"),
    ("skimage", "ihc.png"),
    ("sklearn", "china.jpg"),
    ("sklearn", "flower.jpg"),
]


def photo_path(package: str, name: str) -> str:
    if package == "skimage":
        import skimage

        return os.path.join(os.path.dirname(skimage.__file__), "data", name)
    import sklearn

    return os.path.join(os.path.dirname(sklearn.__file__), "datasets", "images", name)


def load_photos() -> list[tuple[str, Image.Image]]:
    """(class name, RGB photo) for every shipped photograph."""
    try:
        return [(os.path.splitext(name)[0], Image.open(photo_path(pkg, name)).convert("RGB")) for pkg, name in PHOTOS]
    except ImportError as e:
        raise DependencyError(
            f"the sample photos ship with scikit-image and scikit-learn (pip install scikit-image scikit-learn): {e}"
        ) from None


def write_image_folder(
    root: str, images_per_class: int, size: int = 128, quality: int = 90, seed: int = 0, height: int | None = None
) -> int:
    """Writes root/CLASS/NNNN.jpg: random crops (a quarter to all of the photo's shorter side, random flip)
    resized to size x size, or size wide and `height` high (ImageNet's typical 500 x 375, say). Returns the number
    of images written."""
    rng = np.random.default_rng(seed)
    out_width, out_height = size, size if height is None else height
    count = 0
    for class_name, photo in load_photos():
        os.makedirs(os.path.join(root, class_name), exist_ok=True)
        width, photo_height = photo.size
        for i in range(images_per_class):
            # The crop's shorter side, and the other in the output's aspect ratio (within the photo).
            short = rng.uniform(0.25, 1.0) * min(width, photo_height)
            crop_width = int(min(width, short * max(1.0, out_width / out_height)))
            crop_height = int(min(photo_height, short * max(1.0, out_height / out_width)))
            left = rng.integers(0, width - crop_width + 1)
            top = rng.integers(0, photo_height - crop_height + 1)
            box = (left, top, left + crop_width, top + crop_height)
            crop = photo.crop(box).resize((out_width, out_height), Image.BILINEAR)
            if rng.random() < 0.5:
                crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
            crop.save(os.path.join(root, class_name, f"{i:04d}.jpg"), quality=quality)
            count += 1
    return count


def write_tfrecords(folder: str, path: str, compression: str = "") -> int:
    """Writes an image folder as TFRecords of tf.train.Example (image/encoded, image/class/label,
    image/filename), the layout of TensorFlow's ImageNet converters. Returns the number of examples."""
    import tensorflow as tf

    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    count = 0
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=compression)) as writer:
        for label, class_name in enumerate(classes):
            for name in sorted(os.listdir(os.path.join(folder, class_name))):
                with open(os.path.join(folder, class_name, name), "rb") as f:
                    encoded = f.read()
                feature = {
                    "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
                    "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                    "image/filename": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[f"{class_name}/{name}".encode()])
                    ),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
                count += 1
    return count
