"""Keras training through a MinIO cache, on real photos read from an emulated slow disk.

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of JPEG files.
2. Train a small Keras model for a few epochs three ways, each reading the files through the same throttled
   "disk": no cache, an LRU cache (what the OS page cache does) and a MinIO cache, both holding half the data.
3. Print each epoch's time and hit ratio: MinIO hits half the files in every epoch after the first, LRU fewer.

    python examples/minio_cache_training.py [--workdir DIR] [--read-bandwidth BYTES_PER_S] [--epochs N]
"""

import argparse
import glob
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.samples import photos as sample_photos  # noqa: E402

IMAGE_SIZE = 64


def training_input(paths, labels, cache):
    files = tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths))  # reshuffled every epoch
    label_of = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(paths, labels), -1)

    def fetch(path):  # runs on misses only
        return path, tfliquid.io.read_file(path)

    if cache is None:
        items = files.map(fetch, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        items = files.apply(tfliquid.minio_cache(fetch, cache=cache))

    def prepare(path, data):  # decoding and augmentation come after the cache: raw bytes are what it holds
        image = tf.image.resize(tf.io.decode_jpeg(data, channels=3), [IMAGE_SIZE, IMAGE_SIZE]) / 255.0
        return tf.image.random_flip_left_right(image), label_of.lookup(path)

    items = items.apply(tf.data.experimental.assert_cardinality(len(paths)))  # for Keras' progress bar
    return items.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).batch(32).prefetch(2)


class EpochLog(keras.callbacks.Callback):
    def __init__(self, cache):
        super().__init__()
        self.cache = cache

    def on_epoch_begin(self, epoch, logs=None):
        self.start, self.read = time.perf_counter(), tfliquid.io.read_stats()["bytes_read"]

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.start
        read = (tfliquid.io.read_stats()["bytes_read"] - self.read) / 1e6
        hits = f", hit ratio {self.cache.stats().epochs[-1].hit_ratio:.2f}" if self.cache else ""
        print(f"  epoch {epoch}: {seconds:5.2f} s, {read:5.1f} MB read{hits}, loss {logs['loss']:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default=None, help="where the JPEGs go (default: a temporary directory)")
    parser.add_argument("--read-bandwidth", type=float, default=2e6, help="the emulated disk, bytes/s")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--images-per-class", type=int, default=40)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        folder = os.path.join(args.workdir or scratch, "jpeg")
        if not os.path.isdir(folder):
            sample_photos.write_image_folder(folder, args.images_per_class, size=128)
        paths = sorted(glob.glob(os.path.join(folder, "*", "*.jpg")))
        classes = sorted({os.path.basename(os.path.dirname(p)) for p in paths})
        labels = [classes.index(os.path.basename(os.path.dirname(p))) for p in paths]
        dataset_bytes = sum(os.path.getsize(p) for p in paths)
        # Half the dataset, counted as the cache counts items: the file plus its key and a small header.
        capacity = (dataset_bytes + sum(36 + 16 + 2 * len(p) for p in paths)) // 2
        print(
            f"{len(paths)} JPEGs, {dataset_bytes / 1e6:.1f} MB, read at {args.read_bandwidth / 1e6:.1f} MB/s; "
            f"caches of {capacity / 1e6:.1f} MB (half)"
        )
        tfliquid.io.set_read_bandwidth(args.read_bandwidth)
        try:
            for name, cache in (
                ("no cache", None),
                ("LRU cache", tfliquid.MinIOCache(capacity, policy="lru")),
                ("MinIO cache", tfliquid.MinIOCache(capacity)),
            ):
                print(f"\n{name}")
                keras.utils.set_random_seed(0)
                model = keras.Sequential(
                    [
                        keras.Input((IMAGE_SIZE, IMAGE_SIZE, 3)),
                        keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
                        keras.layers.GlobalAveragePooling2D(),
                        keras.layers.Dense(len(classes)),
                    ]
                )
                model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                model.fit(
                    training_input(paths, labels, cache),
                    epochs=args.epochs,
                    verbose=0,
                    shuffle=False,
                    callbacks=[EpochLog(cache)],
                )
                if cache:
                    cache.release()
        finally:
            tfliquid.io.set_read_bandwidth(None)


if __name__ == "__main__":
    main()
