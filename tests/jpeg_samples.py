"""Real JPEG fixtures for the tests, made with the system's cjpeg/jpegtran (libjpeg-turbo-progs) and Pillow.

The sources are photographs shipped with scikit-image and scikit-learn, so no download is needed. Images are
shrunk to at most 256 px a side before encoding (except sklearn's shipped JPEGs) to keep the tests fast.
"""

import io
import pathlib
import shutil
import subprocess

from PIL import Image, ImageCms

from tfliquid.samples.photos import photo_path

MAX_SIDE = 256

# A 6-scan script for jpegtran -scans: spectral selection only, unlike libjpeg's standard 10-scan script,
# so that the splitter sees another encoder's choices (interleaved DC scan, one AC scan per component).
SIX_SCAN_SCRIPT = """\
0: 0 0 0 0;
1 2: 0 0 0 0;
0: 1 5 0 0;
0: 6 63 0 0;
1: 1 63 0 0;
2: 1 63 0 0;
"""


def _skimage_image(name: str) -> Image.Image:
    img = Image.open(photo_path("skimage", name))
    img.thumbnail((MAX_SIDE, MAX_SIDE))
    return img.convert("L" if img.mode in ("L", "I;16") else "RGB")


def _run(*args) -> None:
    subprocess.run([str(a) for a in args], check=True, capture_output=True)


def _cjpeg(img: Image.Image, dst: pathlib.Path, *options: str) -> pathlib.Path:
    pnm = dst.with_suffix(".pgm" if img.mode == "L" else ".ppm")
    img.save(pnm, format="PPM")  # Pillow writes PGM for mode L
    _run("cjpeg", *options, "-outfile", dst, pnm)
    pnm.unlink()
    return dst


def _jpegtran(src: pathlib.Path, dst: pathlib.Path, *options: str) -> pathlib.Path:
    _run("jpegtran", *options, "-outfile", dst, src)
    return dst


def _with_metadata(img: Image.Image, dst: pathlib.Path) -> pathlib.Path:
    """A baseline JPEG with an EXIF APP1, an ICC APP2 and a COM segment."""
    exif = Image.Exif()
    exif[0x010F] = "tfliquid"  # Make
    exif[0x0110] = "jpeg zoo"  # Model
    exif[0x0112] = 1  # Orientation: upright, so decoders need not rotate
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    img.save(dst, format="JPEG", quality=90, exif=exif.tobytes(), icc_profile=icc, comment=b"tfliquid fixture")
    return dst


def make_jpeg_zoo(tmpdir) -> dict[str, pathlib.Path]:
    """Write the fixtures into tmpdir and return {name: path}.

    Names starting with "progressive" are progressive (jpegtran or Pillow); the others are baseline.
    """
    out = pathlib.Path(tmpdir)
    out.mkdir(parents=True, exist_ok=True)
    astronaut = _skimage_image("astronaut.png")
    camera = _skimage_image("camera.png")
    chelsea = _skimage_image("chelsea.png")
    coffee = _skimage_image("coffee.png")
    assert camera.mode == "L"

    zoo = {
        "baseline_420": _cjpeg(astronaut, out / "baseline_420.jpg"),
        "baseline_444": _cjpeg(chelsea, out / "baseline_444.jpg", "-sample", "1x1"),
        "grey": _cjpeg(camera, out / "grey.jpg", "-grayscale"),
        "restart_rows": _cjpeg(coffee, out / "restart_rows.jpg", "-restart", "1"),
        "restart_blocks": _cjpeg(coffee, out / "restart_blocks.jpg", "-restart", "2B"),
        "odd_size": _cjpeg(astronaut.crop((100, 40, 137, 93)), out / "odd_size.jpg"),
        "metadata": _with_metadata(chelsea, out / "metadata.jpg"),
        "china": pathlib.Path(shutil.copy(photo_path("sklearn", "china.jpg"), out / "china.jpg")),
        "flower": pathlib.Path(shutil.copy(photo_path("sklearn", "flower.jpg"), out / "flower.jpg")),
    }
    script = out / "six_scans.txt"
    script.write_text(SIX_SCAN_SCRIPT)
    prog = "-progressive"
    zoo.update(
        {
            "progressive": _jpegtran(zoo["baseline_420"], out / "progressive.jpg", prog, "-optimize"),
            "progressive_grey": _jpegtran(zoo["grey"], out / "progressive_grey.jpg", prog, "-optimize"),
            "progressive_odd_size": _jpegtran(zoo["odd_size"], out / "progressive_odd_size.jpg", prog),
            "progressive_restart": _jpegtran(
                zoo["baseline_420"], out / "progressive_restart.jpg", prog, "-restart", "1"
            ),
            "progressive_six_scans": _jpegtran(
                zoo["baseline_444"], out / "progressive_six_scans.jpg", "-scans", script
            ),
            "progressive_metadata": _jpegtran(zoo["metadata"], out / "progressive_metadata.jpg", prog, "-copy", "all"),
        }
    )
    coffee.save(out / "progressive_pillow.jpg", format="JPEG", quality=90, progressive=True)
    zoo["progressive_pillow"] = out / "progressive_pillow.jpg"
    return zoo


def photo_500x375_jpeg() -> bytes:
    """A 500x375 crop of a shipped photo at quality 90 (ImageNet's typical size), 4:2:0."""
    import numpy as np
    import tensorflow as tf

    crop = np.asarray(Image.open(photo_path("skimage", "astronaut.png")).convert("RGB"))[:375, :500]
    return tf.io.encode_jpeg(crop, quality=90).numpy()


def _pillow_jpeg(mode: str, progressive: bool) -> bytes:
    out = io.BytesIO()
    image = Image.open(photo_path("skimage", "coffee.png")).convert(mode)
    image.save(out, format="JPEG", quality=90, progressive=progressive)
    return out.getvalue()


def jpegs_of_every_kind(jpeg: bytes) -> dict[str, bytes]:
    """{kind: JPEG}: `jpeg` (4:2:0) as it is, transcoded by PCR's fast script (each scan group's prefix and the
    whole), by libjpeg's standard script and at 4:4:4; grey and CMYK (Adobe-inverted, as Photoshop writes it) from
    Pillow, baseline and progressive."""
    import tensorflow as tf

    from tfliquid.jpeg.ops import jpeg_to_progressive

    fast, ends = (t.numpy() for t in jpeg_to_progressive(jpeg, scan_script="fast"))
    kinds = {f"fast script, scan group {g}": fast[:end] + b"\xff\xd9" for g, end in enumerate(ends[:-1], start=1)}
    kinds["fast script, full fidelity"] = fast
    kinds["standard script"] = jpeg_to_progressive(jpeg)[0].numpy()
    kinds["baseline"] = jpeg
    for mode in ("L", "CMYK"):
        for progressive in (False, True):
            kinds[f"{mode}, {'progressive' if progressive else 'baseline'}"] = _pillow_jpeg(mode, progressive)
    kinds["4:4:4, fast script"] = jpeg_to_progressive(
        tf.io.encode_jpeg(tf.io.decode_jpeg(jpeg), quality=95, chroma_downsampling=False), scan_script="fast"
    )[0].numpy()
    return kinds


def damaged_copies(jpeg: bytes, seed: int, count: int):
    """Copies of `jpeg` with one byte of its entropy-coded data changed (from byte 1000 on), the changes that would
    make or break a marker left out."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for at in rng.integers(1000, len(jpeg) - 2, size=count):
        damaged = bytearray(jpeg)
        damaged[at] = (damaged[at] + 1 + rng.integers(254)) % 256
        if damaged[at] != 0xFF and damaged[at - 1] != 0xFF:
            yield bytes(damaged)
