"""Writes photos/*.jpg, the GPU check's photographs: the photos scikit-image and scikit-learn ship whose licences
allow copies (public domain, CC0, CC BY 2.0: photos/SOURCES.md), at their own size as quality-95 JPEG, so that a
checkout carries them to GPU machines that have neither package. Run from the repository root:
python tests/cuda_device/make_photos.py"""

from pathlib import Path

from PIL import Image

from tfliquid.samples.photos import PHOTOS, photo_path

OUT = Path(__file__).resolve().parent / "photos"
LEFT_OUT = {"motorcycle_left.png"}  # the Middlebury stereo data set states no licence


def main():
    OUT.mkdir(exist_ok=True)
    for package, name in PHOTOS:
        if name not in LEFT_OUT:
            image = Image.open(photo_path(package, name)).convert("RGB")
            image.save(OUT / (name.rsplit(".", 1)[0] + ".jpg"), quality=95)


if __name__ == "__main__":
    main()
