"""Where conversion jobs read images from: an image folder tree or TFRecord files of tf.train.Example.

A source is a list of items (label, key) and a way to read any subset of them, in any order, as a tf.data
pipeline of (item, image bytes, label, key), or one at a time from where it lies (`locate`, `read_located`: plain
values that Beam workers can be sent). Image folders are read file by file; TFRecords cannot be read at random,
so they are first copied once into a spool file of raw image bytes (`spool_tfrecords`).
"""

from __future__ import annotations

import dataclasses
import glob
import os
from collections.abc import Callable
from typing import TypedDict

import numpy as np
import tensorflow as tf

from tfliquid._common.errors import ArgumentError, ConversionError, OperandError, PathError, op_error_message
from tfliquid._common.files import image_files
from tfliquid._common.words import counted
from tfliquid.io import read_file

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
# Images TensorFlow's decoders do not read, by extension -> format: an image folder's files of these are rejected
# with that reason (other files, whose extension is no image's, are ignored; so are hidden ones).
UNREAD_IMAGE_FORMATS = {
    ".tif": "TIFF",
    ".tiff": "TIFF",
    ".ppm": "PPM",
    ".pgm": "PGM",
    ".pbm": "PBM",
    ".pnm": "PNM",
    ".heic": "HEIC",
    ".heif": "HEIF",
    ".avif": "AVIF",
}
SOURCE_FORMATS = ("auto", "folder", "tfrecord")


class SourceOptions(TypedDict, total=False):
    """How a conversion reads its source: the keyword arguments that `tfliquid.pcr.convert`,
    `tfliquid.liquid.convert` and `tfliquid.liquid.profiling.profile` share (the CLI's --format, --image-key,
    --label-key, --key-feature and --compression).

      source_format: "auto" (a folder of class subfolders, or TFRecord files), "folder" or "tfrecord".
      image_key, label_key, key_feature: the tf.train.Example features of TFRecord sources that hold the image
        bytes ("image/encoded"), the int64 label ("image/class/label"; "" for unlabelled examples, whose labels
        are then -1) and the image's key ("image/filename").
      compression: of TFRecord sources: "", "GZIP" or "ZLIB"; None (the default) guesses from the file extension.
    """

    source_format: str
    image_key: str
    label_key: str
    key_feature: str
    compression: str | None


def check_source_options(options: dict) -> None:
    """ArgumentError for a keyword that is not one of SourceOptions, or a source_format that is not known."""
    unknown = sorted(set(options) - set(SourceOptions.__annotations__))
    if unknown:
        raise ArgumentError(
            f"unknown keyword arguments {unknown}; the source options are {list(SourceOptions.__annotations__)}"
        )
    if options.get("source_format", "auto") not in SOURCE_FORMATS:
        raise ArgumentError(f"source_format must be one of {SOURCE_FORMATS}, got {options['source_format']!r}")


def open_source(src: str, spool_path: str, **options) -> Source:
    """The source `src` read as `options` (SourceOptions) say; TFRecords are spooled into `spool_path` first."""
    check_source_options(options)
    source_format = options.pop("source_format", "auto")
    if source_format == "auto":
        source_format = _guess_source_format(src)
    if source_format == "folder":
        return image_folder(src)
    return spool_tfrecords(src, spool_path, **options)


def _guess_source_format(src: str) -> str:
    """ "folder" for a folder of class subfolders, "tfrecord" for TFRecord files; a clear error for a folder that
    holds neither."""
    if not os.path.isdir(src):
        return "tfrecord"  # a file or a glob
    entries = [e for e in os.scandir(src) if not e.name.startswith(".")]
    if any(e.is_dir() for e in entries):
        return "folder"
    if not entries:
        raise OperandError(f"{src} is an empty folder: expected class subfolders of images, or TFRecord files")
    if any(e.name.lower().endswith(IMAGE_EXTENSIONS) for e in entries):
        raise OperandError(
            f"{src} holds images but no class subfolders: put them in one subfolder per class (SRC/CLASS/IMAGE)"
        )
    return "tfrecord"


@dataclasses.dataclass
class Source:
    """Items to convert. `read(order)` yields (item, image bytes, label, key) for the items `order` (int64
    indices into `labels` and `keys`), in that order. `rejected` lists the files of the source that are not
    items, with why (a conversion rejects them)."""

    description: str
    labels: np.ndarray  # int64, one per item
    keys: list[bytes]
    class_names: list[str]
    read: Callable[[np.ndarray], tf.data.Dataset]
    origins: list[str]  # where each item comes from, for messages: its file, or its TFRecord file and index
    locate: Callable[[int], tuple[str, int, int]]  # item -> (file, offset, size; -1: to the end)
    rejected: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (file, why)
    empty_classes: list[str] = dataclasses.field(default_factory=list)  # class folders without an image

    @property
    def num_items(self) -> int:
        return len(self.labels)

    @property
    def num_classes(self) -> int:
        """The classes a dataset's index records: its class folders, else the largest label + 1 (labels index
        the classes from 0: a classifier needs that many outputs); 0 without labels."""
        return len(self.class_names) or max(int(self.labels.max()) + 1, 0)

    def label_notes(self) -> list[str]:
        """What the count of classes does not say: class folders without images (still classes, so that every
        label stays its folder's position), labels that leave some of 0..num_classes-1 unused, no labels."""
        if self.empty_classes:
            labels = ", ".join(str(self.class_names.index(name)) for name in self.empty_classes)
            return [
                f"{counted(len(self.empty_classes), 'class folder')} without images ({', '.join(self.empty_classes)}"
                f"): each still a class, so that every label stays its folder's position "
                f"({'labels' if len(self.empty_classes) > 1 else 'label'} {labels})"
            ]
        present = np.unique(self.labels)
        if self.class_names or present.tolist() == list(range(self.num_classes)):
            return []
        if present.tolist() == [-1]:
            return ["no labels: every label is -1"]
        unused = sorted(set(range(self.num_classes)) - set(present.tolist()))
        note = f"labels {present[0]}..{present[-1]}, {len(present)} distinct: num_classes {self.num_classes} counts "
        note += f"0..{self.num_classes - 1}" + (f", and no image has label {_some(unused)}" if unused else "")
        negative = int(np.count_nonzero(self.labels < 0))
        return [note + (f"; {counted(negative, 'image')} with a negative label" if negative else "")]


def _some(numbers: list[int], shown: int = 5) -> str:
    more = f" or {len(numbers) - shown} others" if len(numbers) > shown else ""
    return ", ".join(str(n) for n in numbers[:shown]) + more


def image_folder(root: str) -> Source:
    """root/CLASS/IMAGE: classes are the sorted subfolder names, labels their positions. The images of a class are
    the files under its folder (subfolders included) with one of IMAGE_EXTENSIONS; files there of
    UNREAD_IMAGE_FORMATS, and images beside the class folders, are rejected (`Source.rejected`); hidden files and
    folders, and other files, are ignored."""
    entries = [e for e in os.scandir(root) if not e.name.startswith(".")]
    class_names = sorted(e.name for e in entries if _is_folder(e))
    if not class_names:
        raise OperandError(f"{root}: expected one subfolder per class (root/CLASS/IMAGE), found none")
    all_images = IMAGE_EXTENSIONS + tuple(UNREAD_IMAGE_FORMATS)
    rejected = [
        (e.path, "not in a class subfolder: images go in one subfolder per class (SRC/CLASS/IMAGE)")
        for e in sorted(entries, key=lambda e: e.name)
        if not _is_folder(e) and e.name.lower().endswith(all_images)
    ]
    paths, labels, empty_classes = [], [], []
    for label, name in enumerate(class_names):
        class_paths = []
        for path in image_files(os.path.join(root, name), all_images):
            unread = UNREAD_IMAGE_FORMATS.get(os.path.splitext(path)[1].lower())
            if unread:
                rejected.append((path, _unread_reason(unread)))
            else:
                class_paths.append(path)
        if not class_paths:
            empty_classes.append(name)
        paths.extend(class_paths)
        labels.extend([label] * len(class_paths))
    if not paths:
        example = f"; {len(rejected)} files rejected, e.g. {rejected[0][0]}: {rejected[0][1]}" if rejected else ""
        raise OperandError(f"{root}: no images ({', '.join(IMAGE_EXTENSIONS)}) in its class subfolders{example}")
    keys = [os.path.relpath(p, root).encode() for p in paths]
    labels = np.asarray(labels, np.int64)
    path_tensor, label_tensor, key_tensor = tf.constant(paths), tf.constant(labels), tf.constant(keys)

    def read(order: np.ndarray) -> tf.data.Dataset:
        def load(i):
            return i, tf.io.read_file(tf.gather(path_tensor, i)), tf.gather(label_tensor, i), tf.gather(key_tensor, i)

        return tf.data.Dataset.from_tensor_slices(np.asarray(order, np.int64)).map(
            load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    return Source(
        f"image folder {root}",
        labels,
        keys,
        class_names,
        read,
        paths,
        lambda i: (paths[i], 0, -1),
        rejected=rejected,
        empty_classes=empty_classes,
    )


def _unread_reason(image_format: str) -> str:
    return (
        f"a {image_format} image, which this conversion does not read (it reads JPEG, PNG, GIF, BMP and WebP); "
        "convert it to PNG first"
    )


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError as e:  # a symlink loop, a folder we may not read
        raise ConversionError(f"{entry.path}: {e.strerror}") from None


def tfrecord_files(src: str) -> list[str]:
    """A TFRecord file, a glob, or a directory of them."""
    if os.path.isdir(src):
        files = sorted(
            os.path.join(src, f)
            for f in os.listdir(src)
            if os.path.isfile(os.path.join(src, f)) and not f.startswith(".")
        )
    elif os.path.isfile(src):
        files = [src]
    else:
        files = sorted(glob.glob(src))
    if not files:
        raise PathError(f"{src}: no such file or folder, and no file matches it as a glob")
    return files


def guess_compression(files: list[str]) -> str:
    """'GZIP' for .gz, 'ZLIB' for .zz/.zlib, else '' (uncompressed)."""
    name = files[0].lower()
    if name.endswith(".gz") or name.endswith(".gzip"):
        return "GZIP"
    if name.endswith(".zz") or name.endswith(".zlib"):
        return "ZLIB"
    return ""


_NO_LABEL = np.iinfo(np.int64).min  # what an example without the label feature parses to


def spool_tfrecords(
    src: str,
    spool_path: str,
    image_key: str = "image/encoded",
    label_key: str = "image/class/label",
    key_feature: str = "image/filename",
    compression: str | None = None,
) -> Source:
    """Copies every Example's image bytes into `spool_path` (raw concatenation) so they can be read in any order.

    Labels and keys stay in memory (a few bytes per image). The key is `key_feature` when the Example has it,
    else "FILE:INDEX". With `label_key` "" the examples are unlabelled: every label is -1; otherwise an example
    without the label is refused (ConversionError naming it).
    """
    files = tfrecord_files(src)
    if compression is None:
        compression = guess_compression(files)
    if compression not in ("", "GZIP", "ZLIB"):
        raise ArgumentError(f"compression must be '', 'GZIP' or 'ZLIB', got {compression!r}")
    features = {
        image_key: tf.io.FixedLenFeature([], tf.string),
        key_feature: tf.io.FixedLenFeature([], tf.string, default_value=""),
    }
    if label_key:  # parsed with a default no label takes, so that an example without one is told by name
        features[label_key] = tf.io.FixedLenFeature([], tf.int64, default_value=_NO_LABEL)
    examples = (
        tf.data.Dataset.from_tensor_slices(files)
        .map(lambda f: tf.data.TFRecordDataset(f, compression_type=compression).enumerate().map(lambda i, x: (f, i, x)))
        .flat_map(lambda d: d)
    )
    parsed = examples.map(
        lambda f, i, x: (f, i, tf.io.parse_single_example(x, features)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )

    offsets, sizes, labels, keys, origins = [], [], [], [], []
    tmp = spool_path + ".tmp"
    try:
        with open(tmp, "wb") as spool:
            for filename, i, example in parsed.as_numpy_iterator():
                image = example[image_key]
                offsets.append(spool.tell())
                sizes.append(len(image))
                spool.write(image)
                key = example[key_feature]
                keys.append(key if key else f"{os.path.basename(filename.decode())}:{i}".encode())
                origins.append(
                    f"{filename.decode()}: example {i}" + (f" ({key.decode(errors='replace')})" if key else "")
                )
                label = example[label_key] if label_key else -1
                if label == _NO_LABEL:
                    raise ConversionError(
                        f"{origins[-1]} has no int64 feature {label_key!r}: set the label key to the feature that "
                        "holds the labels, or to '' to convert without labels (every label -1)"
                    )
                labels.append(label)
    except BaseException as e:
        os.remove(tmp)  # a partial spool is never used: the next run spools again
        if isinstance(e, tf.errors.OpError):
            raise ConversionError(
                f"{src}: cannot read TFRecords (compression {compression or 'none'!r}, image key "
                f"{image_key!r}, label key {label_key!r}): {op_error_message(e)}"
            ) from None
        raise
    os.replace(tmp, spool_path)
    if not labels:
        raise OperandError(f"{src}: the TFRecord files hold no examples")
    return spooled_source(f"TFRecords {src}", spool_path, offsets, sizes, labels, keys, origins)


def spooled_source(description, spool_path, offsets, sizes, labels, keys, origins) -> Source:
    labels = np.asarray(labels, np.int64)
    offset_tensor, size_tensor = tf.constant(offsets, tf.int64), tf.constant(sizes, tf.int64)
    label_tensor, key_tensor = tf.constant(labels), tf.constant(keys)

    def read(order: np.ndarray) -> tf.data.Dataset:
        def load(i):
            contents = read_file(spool_path, tf.gather(offset_tensor, i), tf.gather(size_tensor, i))
            return i, contents, tf.gather(label_tensor, i), tf.gather(key_tensor, i)

        return tf.data.Dataset.from_tensor_slices(np.asarray(order, np.int64)).map(
            load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    return Source(description, labels, keys, [], read, origins, lambda i: (spool_path, offsets[i], sizes[i]))


def read_located(location: tuple[str, int, int]) -> bytes:
    """The bytes of an item at (file, offset, size), as `Source.locate` gives it."""
    path, offset, size = location
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)
