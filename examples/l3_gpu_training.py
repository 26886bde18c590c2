"""Keras training with L3 images decoded inside the model: the input pipeline carries compact L3 bytes and the
model's first layer, `tfliquid.keras.layers.DecodeL3`, decodes each batch where the model runs (on the GPU when
there is one: the L3 paper's point; here, without a GPU, on the CPU kernel).

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of JPEG crops, and
   convert them to L3 files (`tfliquid convert l3`: lossless, the crops' decoded pixels exactly).
2. Train the demo's small CNN with model.fit twice on the same files and seed: once decoding in the model
   (`DecodeL3` as its first layer, the pipeline only reads files and batches them), once decoding in the
   pipeline (`decode_l3` in `Dataset.map`), and print images/s and accuracy. Both train on the same pixels;
   their accuracies differ by what differs between the two runs' float operations (the resize runs in the model in
   one, in the pipeline in the other) over a few epochs of a small dataset.

    python examples/l3_gpu_training.py [--workdir DIR] [--images-per-class N] [--epochs N]
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.keras.layers import DecodeL3  # noqa: E402
from tfliquid.samples import model as sample_model  # noqa: E402
from tfliquid.samples import photos as sample_photos  # noqa: E402

BATCH = 32
SIZE = 192  # the crops' side: DecodeL3 needs one image shape per batch


def l3_files(workdir: str, images_per_class: int) -> tuple[list[str], list[int], list[str]]:
    """(paths, labels, class names) of the L3 dataset, made on the first run."""
    folder, l3_folder = os.path.join(workdir, "photos"), os.path.join(workdir, "photos-l3")
    if not os.path.exists(l3_folder):
        sample_photos.write_image_folder(folder, images_per_class, size=SIZE, seed=0)
        report = tfliquid.l3.convert(folder, l3_folder, progress=False)
        print(report)
    classes = sorted(os.listdir(l3_folder))
    classes = [name for name in classes if os.path.isdir(os.path.join(l3_folder, name))]
    paths, labels = [], []
    for label, name in enumerate(classes):
        for file in sorted(os.listdir(os.path.join(l3_folder, name))):
            paths.append(os.path.join(l3_folder, name, file))
            labels.append(label)
    return paths, labels, classes


def encoded_batches(paths: list[str], labels: list[int]) -> tf.data.Dataset:
    """(L3 bytes [B], label [B]) batches, shuffled with a fixed seed: nothing is decoded in the pipeline."""
    dataset = tf.data.Dataset.from_tensor_slices((paths, labels)).shuffle(len(paths), seed=0)
    return dataset.map(lambda path, label: (tf.io.read_file(path), label), num_parallel_calls=tf.data.AUTOTUNE)


def model_decoding_l3(num_classes: int) -> keras.Model:
    """DecodeL3, then the sample model's preprocessing (resize, scale) and its CNN, in one model."""
    size = sample_model.IMAGE_SIZE
    model = keras.Sequential(
        [
            keras.Input(shape=(), dtype="string"),
            DecodeL3(image_shape=(SIZE, SIZE, 3)),
            keras.layers.Resizing(size, size),
            keras.layers.Rescaling(1 / 255),
            sample_model.small_cnn(num_classes),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def fit(model: keras.Model, dataset: tf.data.Dataset, images: int, epochs: int) -> tuple[float, float]:
    """model.fit; returns (images/s over the training, accuracy of the last epoch)."""
    start = time.perf_counter()
    history = model.fit(dataset.prefetch(2), epochs=epochs, shuffle=False, verbose=0)  # shuffled by the pipeline
    return images * epochs / (time.perf_counter() - start), history.history["accuracy"][-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="where the datasets go (default: a temporary directory)")
    parser.add_argument("--images-per-class", type=int, default=60)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="tfliquid-l3-gpu-")
    paths, labels, classes = l3_files(workdir, args.images_per_class)
    availability = tfliquid.l3.gpu_available()
    print("DecodeL3 runs on the GPU" if availability else f"DecodeL3 runs on the CPU kernel: {availability.reason}")

    encoded = encoded_batches(paths, labels)
    runs = {
        "decoded in the model (DecodeL3)": (model_decoding_l3, encoded.batch(BATCH)),
        "decoded in the pipeline (decode_l3 in map)": (
            sample_model.small_cnn,
            encoded.map(
                lambda data, label: sample_model.preprocess({"image": tfliquid.l3.decode_l3(data), "label": label}),
                num_parallel_calls=tf.data.AUTOTUNE,
            ).batch(BATCH),
        ),
    }
    print(f"\nmodel.fit, {args.epochs} epochs of {len(paths)} images ({SIZE}x{SIZE} L3 files):")
    for name, (make_model, dataset) in runs.items():
        keras.utils.set_random_seed(0)
        rate, accuracy = fit(make_model(len(classes)), dataset, len(paths), args.epochs)
        print(f"  {name:<44} {rate:7.0f} images/s   accuracy {accuracy:.3f}")
    print(f"\ndatasets in {workdir}")


if __name__ == "__main__":
    main()
