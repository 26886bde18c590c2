"""The `tfliquid` command as a whole: its exit statuses, its options' mapping onto the Python functions it wraps,
--version and --help, and a stdout closed early. Each command's own behaviour is tested beside its function's."""

import os

import pytest

import tfliquid
from tfliquid import cli
from tfliquid.samples.photos import write_image_folder


@pytest.fixture(scope="module")
def crops(tmp_path_factory):
    """An image folder of 2 JPEG crops per class of every shipped photo, each 48x48."""
    root = tmp_path_factory.mktemp("cli") / "crops"
    write_image_folder(str(root), 2, size=48, seed=3)
    return root


@pytest.fixture(scope="module")
def pcr_crops(crops, tmp_path_factory):
    dst = tmp_path_factory.mktemp("cli") / "pcr"
    tfliquid.pcr.convert(str(crops), str(dst), images_per_record=4, progress=False)
    return dst


def _files(root) -> dict[str, bytes]:
    """Every file under root by relative path (the lock and state files aside), with its bytes."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def test_convert_l3_to_a_bare_file_name(crops, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = os.path.join(crops, sorted(os.listdir(crops))[0], "0000.jpg")
    report = tfliquid.l3.convert(source, "scan.l3", progress=False)
    assert report.converted == 1 and (tmp_path / "scan.l3").is_file()
    assert cli.main(["convert", "l3", source, "again.l3", "--quiet"]) == 0
    assert (tmp_path / "again.l3").read_bytes() == (tmp_path / "scan.l3").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["again.l3", "scan.l3"]  # no lock or temporary file left behind


@pytest.mark.parametrize("kind", ["pcr", pytest.param("liquid", marks=pytest.mark.slow)])
def test_workers_converts_the_same_bytes_as_the_default(crops, tmp_path, kind):
    options = dict(images_per_record=4, progress=False)
    if kind == "liquid":
        options.update(formats="png,raw", ratio="1:1")
    convert = getattr(tfliquid, kind).convert
    assert convert(str(crops), str(tmp_path / "default"), **options).converted == 20
    for workers in (1, 3):
        assert convert(str(crops), str(tmp_path / f"{workers}"), workers=workers, **options).converted == 20
        assert _files(tmp_path / f"{workers}") == _files(tmp_path / "default")
    with pytest.raises(tfliquid.ArgumentError, match="workers is the local runner's"):
        convert(str(crops), str(tmp_path / "beam"), workers=2, runner="beam", **options)


def test_inspect_is_a_python_function_that_prints_as_the_command(pcr_crops, liquid_photos, capsys):
    for path, kind in ((str(pcr_crops), tfliquid.pcr.PCRInspection), (liquid_photos, tfliquid.liquid.LiquidInspection)):
        inspection = tfliquid.inspect(path)
        assert isinstance(inspection, kind)
        assert cli.main(["inspect", path]) == 0
        assert capsys.readouterr().out == f"{inspection}\n"
    pcr = tfliquid.pcr.inspect(str(pcr_crops))
    assert pcr.images == 20 and pcr.records == 5 and pcr.classes == 10 and pcr.scan_groups[-1].percent_of_full == 100
    liquid = tfliquid.liquid.inspect(liquid_photos)
    assert liquid.images == 16 and [f.name for f in liquid.formats] == ["png", "raw"]
    assert sum(f.images for f in liquid.formats) == liquid.images and liquid.ratio == "1:1"


@pytest.mark.parametrize(
    "options",
    [
        ["--items", "300", "--capacity", "0.25", "--epochs", "3", "--policies", "lru,minio"],
        ["--items", "300", "--capacity", "40", "--epochs", "3", "--workers", "3", "--prefetch-bandwidth", "0.5"],
    ],
)
def test_simulate_cache_is_a_python_function_that_prints_as_the_command(options, capsys):
    assert cli.main(["simulate", "cache", *options, "--quiet"]) == 0
    printed = capsys.readouterr().out
    given = dict(zip(options[::2], options[1::2]))
    simulation = tfliquid.cache.simulate_policies(
        num_items=300,
        capacity=float(given["--capacity"]) if "." in given["--capacity"] else int(given["--capacity"]),
        epochs=3,
        policies=given.get("--policies"),
        num_workers=int(given["--workers"]) if "--workers" in given else None,
        prefetch_bandwidth=float(given.get("--prefetch-bandwidth", 0)),
        progress=False,
    )
    assert printed == f"{simulation}\n"
