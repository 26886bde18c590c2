"""The L3 conversion job: a tree of real photos in every pixel layout, exact round trips through the decode op,
16-bit and corrupt inputs, resuming, atomic writes, verification, and the CLI."""

import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid.l3 import codec as l3_format
from tfliquid.l3 import conversion as l3_convert
from tfliquid.samples.photos import load_photos


def _png(path, samples, depth=16, transparent=None):
    """A grey [H, W] or RGB [H, W, 3] PNG of `depth`-bit samples (1, 2, 4 or 16), with a tRNS chunk marking the
    colour `transparent` (a sample value, or one per channel). Pillow writes neither 16-bit colour nor 1-, 2- and
    4-bit greys with a transparent colour."""
    height, width = samples.shape[:2]
    colour_type = 2 if samples.ndim == 3 else 0
    if depth == 16:
        rows = [samples[y].astype(">u2").tobytes() for y in range(height)]
    else:  # the low `depth` bits of each sample, packed from the high bit of each byte
        bits = np.unpackbits(samples.astype(np.uint8)[..., None], axis=-1)[..., 8 - depth :]
        rows = [np.packbits(bits[y].reshape(-1)).tobytes() for y in range(height)]

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0))
    if transparent is not None:
        header += chunk(b"tRNS", np.asarray(transparent, ">u2").tobytes())
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + header
        + chunk(b"IDAT", zlib.compress(b"".join(b"\x00" + row for row in rows)))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def photos():
    """The 10 shipped photos as RGB arrays, thumbnailed to 256 pixels (size does not matter here)."""
    result = {}
    for name, photo in load_photos():
        photo.thumbnail((256, 256))
        result[name] = np.asarray(photo)
    return result


@pytest.fixture(scope="module")
def photo_tree(tmp_path_factory, photos):
    """(source folder, {relative .l3 path: the pixels it must decode to}): every photo as PNG in subfolders,
    plus grey, RGBA, grey + alpha, palette (with and without transparency), BMP and JPEG inputs."""
    root = tmp_path_factory.mktemp("l3_src")
    expected = {}

    def save(relative, image, pixels):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        image.save(root / relative)
        expected[os.path.splitext(relative)[0] + ".l3"] = pixels.reshape(*pixels.shape[:2], -1)

    for i, (name, rgb) in enumerate(photos.items()):
        save(f"{'animals' if i < 5 else 'things/more'}/{name}.png", Image.fromarray(rgb), rgb)
    grey = np.asarray(Image.fromarray(photos["coffee"]).convert("L"))
    save("layouts/grey.png", Image.fromarray(grey), grey)
    rocket = photos["rocket"]
    alpha = np.add.outer(np.arange(rocket.shape[0]), np.arange(rocket.shape[1])).astype(np.uint8)
    rgba = np.dstack([rocket, alpha])
    save("layouts/rgba.png", Image.fromarray(rgba), rgba)
    la = np.dstack([grey, alpha[: grey.shape[0], : grey.shape[1]]])
    save("layouts/grey_alpha.png", Image.fromarray(la), np.dstack([la[..., :1]] * 3 + [la[..., 1:]]))
    palette_image = Image.fromarray(photos["china"]).quantize(64)
    palette = np.asarray(palette_image.getpalette(), np.uint8).reshape(-1, 3)
    indices = np.asarray(palette_image)
    save("layouts/palette.png", palette_image, palette[indices])
    transparent = int(indices[0, 0])
    palette_image.info["transparency"] = transparent
    save(
        "layouts/palette_transparent.png",
        palette_image,
        np.dstack([palette[indices], np.where(indices == transparent, 0, 255).astype(np.uint8)]),
    )
    save("layouts/hubble.bmp", Image.fromarray(photos["hubble_deep_field"]), photos["hubble_deep_field"])
    Image.fromarray(photos["flower"]).save(root / "layouts/flower.jpg", quality=90)
    with Image.open(root / "layouts/flower.jpg") as jpeg:
        expected["layouts/flower.l3"] = np.asarray(jpeg)  # L3 keeps the decoded JPEG pixels
    return root, expected


def _convert(src, dst, **kwargs):
    kwargs.setdefault("progress", False)
    return l3_convert.convert(str(src), str(dst), **kwargs)


def _decoded(path):
    return tfliquid.l3.decode_l3(path.read_bytes()).numpy()


def _leftovers(dst):
    return sorted(p.name for p in dst.rglob("*") if ".tmp" in p.name)


def test_tree_converts_to_the_exact_source_pixels(photo_tree, tmp_path):
    src, expected = photo_tree
    dst = tmp_path / "l3"
    report = _convert(src, dst, workers=2, verify=True)
    assert (report.converted, report.skipped, report.failures, report.lossy_images) == (len(expected), 0, [], 0)
    assert sorted(str(p.relative_to(dst)) for p in dst.rglob("*.l3")) == sorted(expected)
    for relative, pixels in expected.items():
        np.testing.assert_array_equal(_decoded(dst / relative), pixels, err_msg=relative)
    assert [
        _decoded(dst / f"layouts/{n}.l3").shape[-1]
        for n in ("grey", "hubble", "rgba", "palette_transparent", "grey_alpha")
    ] == [1, 3, 4, 4, 4]
    assert report.output_bytes == sum(p.stat().st_size for p in dst.rglob("*.l3"))
    assert report.input_bytes == sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    assert report.pixels == sum(p.shape[0] * p.shape[1] for p in expected.values())
    assert f"{len(expected)} converted, 0 already converted" in str(report) and "17 verified" in str(report)
    assert _leftovers(dst) == []


def test_single_file_with_the_paper_profile(photo_tree, tmp_path):
    src, expected = photo_tree
    report = _convert(src / "layouts/rgba.png", tmp_path / "one.l3", profile="paper", verify=True)
    assert report.converted == 1
    data = (tmp_path / "one.l3").read_bytes()
    params = l3_format.parse_header(data)[0]
    assert not params.zigzag and params.segment == 0  # the paper's base mapping over whole patch rows
    np.testing.assert_array_equal(tfliquid.l3.decode_l3(data), expected["layouts/rgba.l3"])
    _convert(src / "layouts/grey.png", tmp_path / "folder")
    np.testing.assert_array_equal(_decoded(tmp_path / "folder/grey.l3"), expected["layouts/grey.l3"])


def test_16_bit_images_are_refused_unless_reduced(photos, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rgb16 = photos["astronaut"].astype(np.uint16) * 257 + 3  # distinct low bytes: a reduction shows
    _png(src / "colour16.png", rgb16)
    _png(src / "grey16.png", rgb16[..., 1])
    Image.fromarray(photos["chelsea"]).save(src / "fine.png")
    report = _convert(src, tmp_path / "refused")
    assert report.converted == 1
    assert [(os.path.basename(f), "16-bit" in reason) for f, reason in report.failures] == [
        ("colour16.png", True),
        ("grey16.png", True),
    ]
    assert sorted(p.name for p in (tmp_path / "refused").iterdir()) == ["fine.l3", "rejected.tsv"]
    report = _convert(src, tmp_path / "reduced", reduce_16bit=True, verify=True)
    assert (report.converted, report.lossy_images, report.failures) == (3, 2, [])
    high_bytes = (rgb16 >> 8).astype(np.uint8)
    np.testing.assert_array_equal(_decoded(tmp_path / "reduced/colour16.l3"), high_bytes)
    np.testing.assert_array_equal(_decoded(tmp_path / "reduced/grey16.l3"), high_bytes[..., 1:2])


def _transparent_where(pixels, equal_to, colour):
    """`colour` (RGB or grey, [H, W, C]) with an alpha channel: 0 where `pixels` equal `equal_to`, 255 elsewhere."""
    opaque = np.any(pixels.reshape(*pixels.shape[:2], -1) != equal_to, axis=-1)
    rgb = np.broadcast_to(colour.reshape(*colour.shape[:2], -1), (*colour.shape[:2], 3))
    return np.dstack([rgb, np.where(opaque, 255, 0).astype(np.uint8)])


def test_a_transparent_colour_becomes_alpha(photos, tmp_path):
    """A grey or RGB PNG whose tRNS chunk marks one colour transparent is stored as RGBA, without loss: the alpha
    Pillow makes of it at 8 bits; at 2 and 16 bits the colour is compared with the samples at that depth."""
    src = tmp_path / "src"
    src.mkdir()
    rgb = photos["astronaut"][:40, :48]
    grey = rgb[..., 1]
    Image.fromarray(grey).save(src / "grey.png", transparency=int(grey[0, 0]))
    Image.fromarray(rgb).save(src / "rgb.png", transparency=tuple(int(v) for v in rgb[0, 0]))
    grey2 = grey >> 6
    _png(src / "grey2.png", grey2, depth=2, transparent=2)
    grey16 = grey.astype(np.uint16) * 257
    grey16[0, 1] = grey16[0, 0] ^ 1  # transparent at 8 bits, not at 16
    _png(src / "grey16.png", grey16, transparent=int(grey16[0, 0]))

    report = _convert(src, tmp_path / "l3", reduce_16bit=True, verify=True)
    assert (report.converted, report.failures, report.lossy_images) == (4, [], 1)  # the 16-bit one, reduced
    for name in ("grey", "rgb"):
        with Image.open(src / f"{name}.png") as image:
            np.testing.assert_array_equal(_decoded(tmp_path / f"l3/{name}.l3"), np.asarray(image.convert("RGBA")))
    assert 0 < np.count_nonzero(_decoded(tmp_path / "l3/grey.l3")[..., 3] == 0) < grey.size
    expected = _transparent_where(grey2, 2, grey2 * 85)
    np.testing.assert_array_equal(_decoded(tmp_path / "l3/grey2.l3"), expected)
    expected = _transparent_where(grey16, grey16[0, 0], (grey16 >> 8).astype(np.uint8))
    np.testing.assert_array_equal(_decoded(tmp_path / "l3/grey16.l3"), expected)
    assert expected[0, 0, 3] == 0 and expected[0, 1, 3] == 255


def test_corrupt_files_are_reported_while_the_others_convert(photo_tree, tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(photo_tree[0] / "animals", src / "animals")
    png = (src / "animals/astronaut.png").read_bytes()
    (src / "bad").mkdir()
    (src / "bad/truncated.png").write_bytes(png[: len(png) // 2])
    (src / "bad/not_an_image.jpg").write_bytes(b"this is a text file")
    frames = [Image.new("RGB", (8, 8), (80 * i, 0, 0)) for i in range(3)]
    frames[0].save(src / "bad/animated.gif", save_all=True, append_images=frames[1:])
    report = _convert(src, tmp_path / "dst")
    assert report.converted == 5
    failed = {os.path.relpath(f, src): reason for f, reason in report.failures}
    assert sorted(failed) == ["bad/animated.gif", "bad/not_an_image.jpg", "bad/truncated.png"]
    assert "3 frames" in failed["bad/animated.gif"] and "truncated" in failed["bad/truncated.png"]
    assert "failed:" in str(report) and "not_an_image.jpg" in str(report)
    assert not (tmp_path / "dst/bad").exists()

    assert cli.main(["convert", "l3", str(src), str(tmp_path / "cli"), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "5 converted" in captured.out and "truncated.png" in captured.out
    assert "3 images could not be converted" in captured.err


def test_rerun_skips_converted_files_unless_source_newer_profile_changed_or_overwrite(photo_tree, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(photo_tree[0] / "layouts", src)
    count = len(list(src.iterdir()))
    dst = tmp_path / "dst"
    assert _convert(src, dst).converted == count
    report = _convert(src, dst)
    assert (report.converted, report.skipped) == (0, count)
    assert "0 converted" in str(report)
    target = dst / "grey.l3"
    earlier = (src / "grey.png").stat().st_mtime - 10
    os.utime(target, (earlier, earlier))  # as if the source changed after it was converted
    assert _convert(src, dst).converted == 1
    assert _convert(src, dst).converted == 0
    assert _convert(src, dst, profile="paper").converted == count  # .l3 files of the other profile are redone
    assert l3_format.parse_header(target.read_bytes())[0].segment == 0
    report = _convert(src, dst, profile="paper", overwrite=True)
    assert (report.converted, report.skipped) == (count, 0)


def test_failed_write_leaves_no_partial_file(photo_tree, tmp_path, monkeypatch):
    src = photo_tree[0] / "animals"
    dst = tmp_path / "dst"
    real_fsync = os.fsync

    def disk_full_on_chelsea(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(f"chelsea.l3.tmp-{os.getpid()}"):
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_full_on_chelsea)
    with pytest.raises(
        tfliquid.ConversionError, match=r"chelsea\.l3: No space left on device; the files written so far"
    ):
        _convert(src, dst, workers=2)  # a full disk stops the run: every next file would fail too
    assert not (dst / "chelsea.l3").exists() and _leftovers(dst) == []
    monkeypatch.setattr(os, "fsync", real_fsync)
    report = _convert(src, dst)
    assert report.images == 5 and report.converted >= 1 and (dst / "chelsea.l3").exists()  # the rerun finishes


def test_interrupted_run_keeps_complete_files_only_and_resumes(photo_tree, tmp_path, monkeypatch):
    src = photo_tree[0] / "animals"  # astronaut, chelsea, coffee, motorcycle_left, rocket
    dst = tmp_path / "dst"
    real_fsync, fsyncs = os.fsync, []

    def ctrl_c_while_writing_the_third_file(fd):
        fsyncs.append(fd)
        if len(fsyncs) == 3:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", ctrl_c_while_writing_the_third_file)
    with pytest.raises(KeyboardInterrupt):
        _convert(src, dst, workers=1)
    monkeypatch.setattr(os, "fsync", real_fsync)
    written = sorted(p.name for p in dst.iterdir())  # the worker may have begun one more before the cancel
    assert written[:2] == ["astronaut.l3", "chelsea.l3"] and "coffee.l3" not in written and _leftovers(dst) == []
    for name in written:
        assert _decoded(dst / name).shape[-1] == 3  # complete
    report = _convert(src, dst, verify=True)
    assert (report.converted, report.skipped, report.failures) == (5 - len(written), len(written), [])


def test_verify_catches_a_wrong_encoding_and_keeps_nothing(photo_tree, tmp_path, monkeypatch):
    real_encode = tfliquid.l3.encode_l3
    monkeypatch.setattr(l3_convert, "encode_l3", lambda pixels, profile: real_encode(pixels ^ 1, profile))
    src = photo_tree[0] / "layouts/grey.png"
    report = _convert(src, tmp_path, verify=True)
    assert report.converted == 0 and report.failures[0][0] == str(src)
    assert "pixels of the L3 file differ" in report.failures[0][1]
    assert list(tmp_path.iterdir()) == []
    assert _convert(src, tmp_path).converted == 1  # not verified: the wrong file is kept


def test_two_sources_of_one_target_are_refused(photo_tree, tmp_path):
    shutil.copy(photo_tree[0] / "layouts/grey.png", tmp_path / "a.png")
    shutil.copy(photo_tree[0] / "layouts/flower.jpg", tmp_path / "a.jpg")
    with pytest.raises(tfliquid.ConversionError, match="a.jpg and .*a.png would both"):
        _convert(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli(photo_tree, tmp_path, capsys):
    src, expected = photo_tree
    args = ["convert", "l3", str(src / "animals"), str(tmp_path / "cli"), "--quiet", "--verify", "--workers", "2"]
    assert cli.main(args) == 0
    assert "5 converted, 0 already converted" in capsys.readouterr().out
    assert cli.main(args) == 0
    assert "0 converted, 5 already converted" in capsys.readouterr().out
    assert cli.main(args + ["--overwrite", "--profile", "paper"]) == 0
    assert "5 converted" in capsys.readouterr().out
    assert cli.main(["convert", "l3", str(tmp_path / "missing"), str(tmp_path / "x")]) == 2
    assert "no such file or folder" in capsys.readouterr().err

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfliquid",
            "convert",
            "l3",
            str(src / "layouts/rgba.png"),
            str(tmp_path / "module"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and "1 converted" in result.stdout, result.stderr
    np.testing.assert_array_equal(_decoded(tmp_path / "module/rgba.l3"), expected["layouts/rgba.l3"])
