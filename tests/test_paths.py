"""Paths that cannot be what the caller meant are refused with what to do instead: a dataset's path given as a tensor
(built inside a dataset function), an empty directory (which would mean the current one)."""

import pytest
import tensorflow as tf

import tfliquid


def test_a_dataset_built_from_a_tensor_path_says_to_build_it_outside(tmp_path):
    paths = tf.data.Dataset.from_tensor_slices([str(tmp_path), str(tmp_path)])
    # AutoGraph, which converts the dataset function, re-raises the ArgumentError as its StagingError, message kept.
    with pytest.raises(Exception, match="cannot be built inside a dataset function"):
        paths.interleave(lambda path: tfliquid.PCRDataset(path))
    with pytest.raises(Exception, match="sample_from_datasets or choose_from_datasets"):
        paths.interleave(lambda path: tfliquid.LiquidDataset(path, 4))
    with pytest.raises(tfliquid.ArgumentError, match="got EagerTensor"):
        tfliquid.PCRDataset(tf.constant(str(tmp_path)))


def test_an_empty_directory_is_refused_not_taken_for_the_current_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(tfliquid.ArgumentError, match="directory must be a directory's path, got ''"):
        tfliquid.MinIOCache(1 << 20, directory="")
    from tfliquid import service

    with pytest.raises(tfliquid.ArgumentError, match="work_dir must be a directory's path, got ''"):
        service.serve_dispatcher(5999, "")  # refused before it binds the port
    assert list(tmp_path.iterdir()) == []  # nothing written where the process stands
