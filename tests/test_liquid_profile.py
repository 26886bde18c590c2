"""The offline ratio profiler: its binary search against its own exhaustive table, and a real profile of the
shipped photos through the read throttle."""

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfliquid import cli
from tfliquid._common.errors import ArgumentError
from tfliquid.liquid import profiling
from tfliquid.samples import photos as sample_photos


@given(
    st.floats(1e3, 1e9),  # bandwidth, bytes/s
    st.tuples(st.floats(1e3, 1e6), st.floats(1e3, 1e6)),  # bytes per image of the two formats
    st.tuples(st.floats(10, 1e5), st.floats(10, 1e5)),  # decode rates, images/s
)
def test_search_picks_the_best_ratio_of_the_exhaustive_table(bandwidth, bytes_per_image, decode_rate):
    def rates(weight):
        return profiling.predicted_rates(weight, bytes_per_image, decode_rate, bandwidth)

    first_is_compact = bytes_per_image[0] <= bytes_per_image[1]
    if (decode_rate[0] >= decode_rate[1]) == first_is_compact:
        return  # no trade-off: profile() takes the format that is both smaller and faster without searching
    chosen, probed = profiling.search_ratio(rates, first_is_compact)
    table = [min(rates(w)) for w in range(profiling.STEPS + 1)]
    assert table[chosen] == pytest.approx(max(table), rel=1e-12)
    assert len(probed) <= profiling.MOST_PROBES  # log2(10) probes and the two neighbours, not all 11


def test_search_follows_the_paper_on_a_png_raw_example():
    # PNG: 100 KB/image, 500 images/s; raw: 300 KB/image, 5,000 images/s; 60 MB/s of storage
    def rates(weight):
        return profiling.predicted_rates(weight, (100e3, 300e3), (500, 5000), 60e6)

    chosen, probed = profiling.search_ratio(rates, first_is_compact=True)
    assert probed[0] == 5  # the paper's first probe: 5:5
    table = [min(rates(w)) for w in range(11)]
    assert chosen == int(np.argmax(table))


@pytest.mark.slow
def test_profile_measures_every_ratio_and_chooses_the_best_prediction(tmp_path):
    src = tmp_path / "photos"
    sample_photos.write_image_folder(str(src), 3, size=64, seed=0)  # 30 images, of which the sample takes 20
    result = profiling.profile(
        str(src), "png,raw", sample=20, read_bandwidth=8e6, exhaustive=True, epochs=1, pass_images=20, progress=False
    )
    assert all(row.measured > 0 for row in result.rows)  # how close to the prediction: benchmarks.liquid
    assert result.rows[result.chosen].predicted == max(row.predicted for row in result.rows)
    assert result.bandwidth == 8e6 and result.sample == 20
    for row in result.rows:  # load is the throttle's rate over the mix's bytes per image
        share = row.weight / profiling.STEPS
        mix = share * result.bytes_per_image["png"] + (1 - share) * result.bytes_per_image["raw"]
        assert row.load_rate == pytest.approx(8e6 / mix)
    plot = tmp_path / "profile.png"
    result.plot(str(plot))
    assert plot.read_bytes()[:4] == b"\x89PNG"


def _write_crops_of_many_sizes(root, count: int) -> None:
    """root/CLASS/NN.png and .jpg: crops of the shipped photos, each of its own width and height (24-71 pixels)."""
    rng = np.random.default_rng(0)
    photos = sample_photos.load_photos()
    for i in range(count):
        name, photo = photos[i % len(photos)]
        width, height = (int(side) for side in rng.integers(24, 72, 2))
        left, top = int(rng.integers(0, photo.width - width)), int(rng.integers(0, photo.height - height))
        (root / name).mkdir(parents=True, exist_ok=True)
        photo.crop((left, top, left + width, top + height)).save(root / name / f"{i:02d}.{('png', 'jpg')[i % 2]}")


@pytest.mark.slow
def test_images_of_many_sizes_are_profiled_and_the_progress_counts_up_to_its_total(tmp_path, capsys):
    src = tmp_path / "photos"
    _write_crops_of_many_sizes(src, 12)
    result = profiling.profile(str(src), "png,raw", sample=10, read_bandwidth=2e6, epochs=1, pass_images=10)
    measured = [row.weight for row in result.rows if row.measured is not None]
    assert measured and all(result.rows[w].measured > 0 for w in measured) and result.sample == 10
    counts = [
        (int(done), int(total)) for done, total in re.findall(r"(\d+)/(\d+) measurements", capsys.readouterr().err)
    ]
    done = [d for d, _ in counts]
    assert done == sorted(done) and done[-1] == counts[-1][1] == 2 + len(measured)  # never back, to the total


@pytest.mark.slow
def test_command_line_profiles_and_writes_the_chosen_ratio(tmp_path, capsys):
    src = tmp_path / "photos"
    sample_photos.write_image_folder(str(src), 2, size=64, seed=0)  # 20 images, of which the sample takes 16
    args = [
        "profile",
        "liquid",
        str(src),
        "--formats",
        "l3,raw",
        "--sample",
        "16",
        "--read-bandwidth",
        "2e6",
        "--pass-images",
        "16",
    ]
    plot = tmp_path / "profile"  # no suffix: the PNG is written at exactly this path
    written = ["--write", str(tmp_path / "chosen"), "--plot", str(plot), "--quiet"]
    assert cli.main([*args, "--epochs", "1", *written]) == 0
    out = capsys.readouterr().out
    assert "<- chosen" in out
    assert f"plot: {plot}\n" in out and plot.read_bytes()[:4] == b"\x89PNG"
    chosen = out.split("chosen ratio l3:raw = ")[1].split(":")
    ratio = f"{chosen[0]}:{chosen[1].split()[0]}"
    assert cli.main(["inspect", str(tmp_path / "chosen")]) == 0
    assert f"at ratio {ratio}" in capsys.readouterr().out


def test_command_line_refuses_what_would_fail_after_the_profile_before_it(tmp_path, capsys):
    src = tmp_path / "photos"
    sample_photos.write_image_folder(str(src), 1, size=32, seed=0)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("not a dataset")
    refused = {
        ("--read-bandwidth", "0"): "read_bandwidth must be a number of bytes/s >= 1, got 0.0",
        ("--write", str(tmp_path / "full")): "is not empty; give --overwrite",
        ("--plot", str(tmp_path)): f"--plot must name a file, and {tmp_path} is a directory",
        ("--plot", str(tmp_path / "missing" / "p.png")): "does not exist",
        ("--write", str(src / "inside")): "inside the source folder",
    }
    for option, message in refused.items():
        assert cli.main(["profile", "liquid", str(src), *option, "--workdir", str(tmp_path / "work")]) == 2, option
        assert message in capsys.readouterr().err
    assert not (tmp_path / "work").exists()  # nothing sampled, nothing measured
    with pytest.raises(ArgumentError, match="read_bandwidth must be"):
        profiling.profile(str(src), read_bandwidth=float("nan"))


@pytest.mark.slow
def test_training_example_runs(tmp_path):
    import os
    import subprocess
    import sys

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "liquid_training.py")
    args = [sys.executable, example, "--workdir", str(tmp_path), "--epochs", "1", "--images-per-class", "4"]
    args += ["--profile-pass-images", "64", "--profile-epochs", "1"]  # 40 images: one training step of 32 per run
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    runs = result.stdout.split("reading through the disk:")[1].splitlines()[1:4]
    assert [line.split()[0] for line in runs] == ["PNG", "raw", "PNG:raw"]
    assert all(0 <= float(line.split("accuracy ")[1]) <= 1 for line in runs)
