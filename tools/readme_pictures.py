"""Make the README's pictures of the course at work from the browser test's screenshots.

First run the real-browser test for the chapters pictured (it writes each widget's
screenshot, and a ``widgets.json`` saying which widget each one shows, to
``artifacts/browser/<notebook>/``), then this script, from the repository's root::

    CI= python -m pytest -q -p no:cacheprovider -o addopts="" tests/test_browser.py -k "01_ or 05_ or 08_"
    python tools/readme_pictures.py

For each picture in ``PICTURES`` it takes the screenshot of the first course widget of
that chapter whose controls include the picture's control labels (so a widget added
before it does not change the picture), as the widget looks right after *Run All*
(before the test changes its controls), trims the white margin, scales it down to at
most ``MAX_WIDTH`` pixels, reduces it to a palette of at most ``COLORS`` colours and writes
``docs/images/<name>.png``, fewer colours if needed to stay under ``MAX_BYTES``. It prints
each picture's size. Pillow (a matplotlib dependency, so already installed) is all it needs.

Problems (a missing screenshot, a widget not found) are one line on stderr and exit code 2.
``tests/test_readme.py`` checks that the README's pictures exist and stay under ``MAX_BYTES``.
"""
from __future__ import annotations

import argparse
import io
import json
import pathlib
import sys
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
OUT = ROOT / "docs" / "images"

MAX_BYTES = 80_000      # per picture: keeps the repository light
MAX_WIDTH = 860         # px; GitHub shows a README at most about this wide
COLORS = 256            # palette size tried first (about 20 KB a picture); fewer if too big
MIN_COLORS = 32         # below this the heat maps' colour bars band visibly
MARGIN = 6              # px of white kept around the trimmed widget

BROWSER_TEST = ('CI= python -m pytest -q -p no:cacheprovider -o addopts="" '
                'tests/test_browser.py -k "01_ or 05_ or 08_"')


@dataclass(frozen=True)
class Picture:
    name: str                       # docs/images/<name>.png
    notebook: str                   # artifacts/browser/<notebook>/
    controls: tuple[str, ...]       # labels the widget's controls include


PICTURES = (
    Picture("attention-explorer", "01_self_attention", ("sentence", "query", "head", "temperature")),
    Picture("masking-explorer", "05_masked_language_modeling", ("mask probability", "seed", "re-sample")),
    Picture("head-view", "08_pretrained_bert", ("sentence A", "sentence B", "layer", "head", "pairs")),
)


class PictureError(Exception):
    """A problem reported as one line (exit code 2), not a traceback."""


def _rel(path: pathlib.Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def find_screenshot(picture: Picture, artifacts: pathlib.Path) -> pathlib.Path:
    """The screenshot of ``picture``'s widget, as the browser test wrote it."""
    shots = artifacts / picture.notebook
    manifest = shots / "widgets.json"
    if not manifest.is_file():
        raise FileNotFoundError(f"no screenshots of {picture.notebook} ({_rel(manifest)} is missing); "
                                f"run the browser test first: {BROWSER_TEST}")
    try:
        widgets = json.loads(manifest.read_text())
    except ValueError as error:
        raise PictureError(f"{_rel(manifest)} is not valid JSON ({error}); run the browser test again: "
                           f"{BROWSER_TEST}") from None
    if not isinstance(widgets, list) or not all(isinstance(w, dict) and "n" in w for w in widgets):
        raise PictureError(f"{_rel(manifest)} is not the browser test's list of widgets; run it again: "
                           f"{BROWSER_TEST}")
    wanted = set(picture.controls)
    for w in widgets:
        labels = {c.get("label") for c in w.get("controls", [])}
        if w.get("course") and wanted <= labels:
            path = shots / f"widget-{w['n']}.png"
            if not path.is_file():
                raise FileNotFoundError(f"screenshot {_rel(path)} is missing; run the browser test "
                                        f"again: {BROWSER_TEST}")
            return path
    found = [sorted(c.get("label") for c in w.get("controls", [])) for w in widgets if w.get("course")]
    raise PictureError(f"{picture.notebook}: no course widget has the controls {sorted(wanted)} "
                       f"(course widgets' controls: {found}); update PICTURES in tools/readme_pictures.py")


def _trim(image, margin: int = MARGIN):
    """``image`` cropped to its non-white content plus ``margin`` px of white."""
    from PIL import ImageOps
    ink = ImageOps.invert(image.convert("L")).point(lambda v: 255 if v > 6 else 0)  # near-white -> 0
    box = ink.getbbox()
    if box is None:
        raise PictureError("the screenshot is blank")
    left, top, right, bottom = box
    return image.crop((max(left - margin, 0), max(top - margin, 0),
                       min(right + margin, image.width), min(bottom + margin, image.height)))


def compress(source: pathlib.Path, colors: int = COLORS, max_width: int = MAX_WIDTH,
             max_bytes: int = MAX_BYTES) -> tuple[bytes, int, int, int]:
    """``source`` trimmed, scaled and palette-compressed: (PNG bytes, width, height, colours)."""
    from PIL import Image
    try:
        with Image.open(source) as opened:
            image = opened.convert("RGB")
    except OSError as error:
        raise PictureError(f"cannot read {_rel(source)} as an image ({error})") from None
    image = _trim(image)
    if image.width > max_width:
        height = round(image.height * max_width / image.width)
        image = image.resize((max_width, height), Image.Resampling.LANCZOS)
    n = colors
    while True:
        # Median cut without dithering: crisp text, and smooth enough colour bars.
        small = image.quantize(colors=n, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        buffer = io.BytesIO()
        small.save(buffer, format="PNG", optimize=True)
        if buffer.tell() <= max_bytes:
            return buffer.getvalue(), image.width, image.height, n
        if n <= MIN_COLORS:
            raise PictureError(f"the picture from {_rel(source)} stays over {max_bytes:,} bytes "
                               f"({buffer.tell():,} with {n} colours); lower MAX_WIDTH in "
                               f"tools/readme_pictures.py")
        n = max(n // 2, MIN_COLORS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifacts", type=pathlib.Path, default=ARTIFACTS,
                        help="where the browser test wrote its screenshots (default: %(default)s)")
    parser.add_argument("--out", type=pathlib.Path, default=OUT,
                        help="where the pictures go (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        try:
            import PIL  # noqa: F401
        except ImportError:
            raise PictureError("Pillow is not installed (it comes with matplotlib: "
                               "pip install -r requirements.txt)") from None
        # Make every picture first, so a missing or broken screenshot changes none.
        made = []
        for picture in PICTURES:
            source = find_screenshot(picture, args.artifacts)
            made.append((args.out / f"{picture.name}.png", source, *compress(source)))
        args.out.mkdir(parents=True, exist_ok=True)
        for dest, source, data, width, height, colors in made:
            dest.write_bytes(data)
            print(f"{_rel(dest)}: {width}x{height} px, {colors} colours, {len(data) / 1000:.1f} KB "
                  f"(from {_rel(source)})")
    except (PictureError, OSError) as error:    # FileNotFoundError is an OSError
        print(f"readme_pictures: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
