"""The book (tools/build_book.py), built into a temporary folder and read in Chromium.

The site is built once for the module, in a subprocess whose ``sitecustomize`` records every
attempt to import torch (the publishing job does not install it). The Chinese edition is
built from notebooks/zh/ when that folder exists; until then from two English notebooks
given a Chinese title and paragraph in the test's temporary folder (``--notebooks``), so that
the Chinese machinery (jieba search, the language switch) is proven either way.

Then a local HTTP server serves the site and Debian's Chromium (through Playwright's
``executable_path``, as in tests/test_browser.py) visits every page of both editions and
checks what issue 25 asks: no console error, no request leaving the site, math typeset (no
raw ``$$``, every math element rendered by MathJax), every image loaded, every internal link
resolving (file and anchor), search finding "attention" (en) and "注意力" (zh), the
language switch leading to the counterpart page, and at a phone's width (390 px) no page
scrolling sideways. Locally the browser part is skipped with a reason when Chromium or
Playwright is missing; with ``CI`` set it fails instead.
"""
from __future__ import annotations

import functools
import importlib.util
import html.parser
import http.server
import os
import pathlib
import subprocess
import sys
import threading
import time
import urllib.parse

import nbformat
import pytest
from ci import chromium_and_playwright, skip_or_fail

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-extensions"]
BUILD_TIMEOUT = 300      # s; the budget is 2 minutes on 2 cores, the test allows slack
PAGE_TIMEOUT = 30_000    # ms, one page loaded and its math typeset
PHONE = {"width": 390, "height": 844}

# Records (instead of blocking) every import of torch, in the builder and its workers.
SITECUSTOMIZE = '''
import os, sys
class _TorchWatch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            with open(os.environ["BOOK_TORCH_LOG"], "a") as log:
                log.write(name + "\\n")
        return None
sys.meta_path.insert(0, _TorchWatch())
'''


def _zh_fixture(folder: pathlib.Path) -> pathlib.Path:
    """A notebooks folder: links to the English notebooks, and zh/ with two of them given a
    Chinese title and paragraph (the real Chinese notebooks are not there yet)."""
    (folder / "zh").mkdir(parents=True)
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        (folder / path.name).symlink_to(path)
    for name, title in [("01_self_attention", "自注意力"), ("02_positional_encoding", "位置编码")]:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "markdown")
        heading = next(line for line in first.source.splitlines() if line.startswith("# "))
        first.source = first.source.replace(heading, f"# 第 {int(name[:2])} 章 — {title}", 1)
        nb.cells.insert(nb.cells.index(first) + 1,
                        nbformat.v4.new_markdown_cell("本章从注意力机制讲起：查询、键和值。"))
        nbformat.write(nb, folder / "zh" / f"{name}.ipynb")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if importlib.util.find_spec("sphinx") is None:
        skip_or_fail("Sphinx is not installed (pip install -r requirements-book.txt)")
    tmp = tmp_path_factory.mktemp("book")
    notebooks = NOTEBOOKS if (NOTEBOOKS / "zh").is_dir() else _zh_fixture(tmp / "notebooks")
    (tmp / "watch").mkdir()
    (tmp / "watch" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    torch_log = tmp / "torch-imports.txt"
    torch_log.touch()
    env = dict(os.environ, BOOK_TORCH_LOG=str(torch_log),
               PYTHONPATH=os.pathsep.join(filter(None, [str(tmp / "watch"),
                                                        os.environ.get("PYTHONPATH")])))
    out = tmp / "site"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--out", str(out),
                           "--notebooks", str(notebooks)], env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"book built in {seconds:.1f} s")
    return {"out": out, "notebooks": notebooks, "torch_imports": torch_log.read_text().split(),
            "seconds": seconds, "log": done.stdout + done.stderr}


# --------------------------------------------------------------------------- the build

def test_build_does_not_import_torch(site):
    assert site["torch_imports"] == [], f"the book's build imported {site['torch_imports']}"


def test_the_torch_watch_sees_a_lookup_of_torch(tmp_path):
    # The watch above would also pass if it never ran: show that it records a lookup
    # (find_spec asks the finders without importing torch, so this costs nothing).
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "log.txt"
    subprocess.run([sys.executable, "-c", "import importlib.util; importlib.util.find_spec('torch')"],
                   env=dict(os.environ, BOOK_TORCH_LOG=str(log), PYTHONPATH=str(tmp_path)), check=True)
    assert log.read_text().split() == ["torch"]


def test_build_warns_about_nothing(site):
    warnings = [line for line in site["log"].splitlines() if "WARNING" in line or "ERROR" in line]
    assert warnings == []


def test_both_editions_have_every_chapter(site):
    out, notebooks = site["out"], site["notebooks"]
    for lang, folder in [("en", notebooks), ("zh", notebooks / "zh")]:
        chapters = sorted(p.stem for p in folder.glob("[0-9][0-9]_*.ipynb"))
        assert chapters, folder
        assert (out / lang / "index.html").is_file()
        for stem in chapters:
            assert (out / lang / f"{stem}.html").is_file(), (lang, stem)
            # the download button gives the committed notebook, byte for byte
            assert (out / lang / "_sources" / f"{stem}.ipynb").read_bytes() == \
                (folder / f"{stem}.ipynb").read_bytes()


def test_every_widget_becomes_a_note(site):
    for lang, folder in [("en", site["notebooks"]), ("zh", site["notebooks"] / "zh")]:
        for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            widgets = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                          for c in nb.cells if c.cell_type == "code" for o in c.outputs)
            page = (site["out"] / lang / f"{path.stem}.html").read_text(encoding="utf-8")
            assert widgets > 0, path                      # every chapter has a widget
            assert page.count('class="bc-widget-note"') == widgets, (lang, path.name)
            assert "VBox(" not in page and "HBox(" not in page, (lang, path.name)


def test_chapter_pages_show_what_a_reader_needs(site):
    page = (site["out"] / "en" / "01_self_attention.html").read_text(encoding="utf-8")
    assert "VBox(" not in page and "widget-view+json" not in page
    assert "play with it" in page                          # the widget note
    assert "On Colab only" not in page                     # the install cell is hidden
    assert "NBVAL_IGNORE_OUTPUT" not in page
    import tomllib
    published = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]["repository"] != "ORG/REPO"
    # the launch buttons, once the course has an address (test_links_come_from_the_one_repository_setting)
    assert ("https://colab.research.google.com/github/" in page) == published
    assert ("https://mybinder.org/v2/gh/" in page) == published
    assert "_sources/01_self_attention.ipynb" in page      # download .ipynb
    assert "copybutton" in page
    assert 'href="../zh/01_self_attention.html"' in page   # the language switch
    assert 'class="prev-next-area"' in page or "prev-next" in page


def test_the_root_page_leads_to_the_editions(site):
    # DIR/index.html only forwards (a meta refresh) to en/, so it is read here, not in Chromium.
    root = (site["out"] / "index.html").read_text(encoding="utf-8")
    assert 'content="0; url=en/index.html"' in root
    for href in ["en/index.html", "zh/index.html", "en/_static/favicon.svg"]:
        assert f'"{href}"' in root and (site["out"] / href).is_file(), href


def test_links_come_from_the_one_repository_setting(site):
    import tomllib
    course = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    page = (site["out"] / "en" / "03_transformer.html").read_text(encoding="utf-8")
    repo, ref = course["repository"], course["ref"]
    if repo == "ORG/REPO":          # unpublished (tools/run_notebooks.py's UNSET): no made-up address
        for edition, name in (("en", "03_transformer.html"), ("zh", "01_self_attention.html")):
            text = (site["out"] / edition / name).read_text(encoding="utf-8")
            assert "ORG/REPO" not in text and "colab.research.google.com/github" not in text, (edition, name)
            assert "mybinder.org/v2" not in text and "github.com/ORG" not in text, (edition, name)
        return
    assert (f"https://colab.research.google.com/github/{repo}/blob/{ref}/"
            f"notebooks/03_transformer.ipynb") in page
    assert f"https://mybinder.org/v2/gh/{repo}/{ref}?urlpath=lab/tree/notebooks/03_transformer.ipynb" in page
    zh = (site["out"] / "zh" / "01_self_attention.html").read_text(encoding="utf-8")
    assert f"blob/{ref}/notebooks/zh/01_self_attention.ipynb" in zh


def test_readme_gives_the_site_address_from_the_repository_setting():
    """The book's address once the course is published; none (and no placeholder) before."""
    import tomllib
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]["repository"]
    for readme in ("README.md", "README.zh-CN.md"):
        text = (ROOT / readme).read_text(encoding="utf-8")
        if repository == "ORG/REPO":        # unpublished (tools/run_notebooks.py's UNSET)
            assert "github.io" not in text and "ORG" not in text, f"{readme}: an address while unpublished"
        else:
            owner, name = repository.split("/")
            assert f"https://{owner.lower()}.github.io/{name}/" in text, readme


# --------------------------------------------------------------------------- the browser

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site["out"]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    chromium, sync_playwright = chromium_and_playwright()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.lru_cache(maxsize=None)
def _ids_of(path: pathlib.Path) -> frozenset:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def _pages(out: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for lang in ("en", "zh")
                  for p in (out / lang).glob("*.html"))


# Waits for MathJax (when the page loads it) to finish typesetting.
WAIT_MATH_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
}"""

# What one page shows, read after it loaded: raw $$ outside code, math left untypeset, images
# that failed, every link, the language switch, and whether the page is wider than the window.
INSPECT_JS = """async () => {
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
  const failed = [];
  await Promise.all([...document.images].map(img => {
    img.loading = 'eager';
    return img.decode().catch(() => failed.push(img.getAttribute('src')));
  }));
  const switcher = document.querySelector('a.bc-language-switch');
  return {
    rawMath: clone.innerText.includes('$$'),
    untypeset: [...document.querySelectorAll('.math')]
        .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 60)),
    mathCount: document.querySelectorAll('.math').length,
    failedImages: failed,
    images: document.images.length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    switchHref: switcher ? switcher.href : null,
    tooWide: document.documentElement.scrollWidth > document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
  };
}"""


class _Tab:
    """One browser page that visits the site's pages one after the other (a fresh page per
    visit costs Chromium about a second each: half of this file's time). It records, per
    visit, the console errors and every request that leaves the site. Requests are watched,
    not intercepted: intercepting sends each of a page's dozens of requests through Python."""

    def __init__(self, context, base: str):
        self.base, self.errors, self.outside = base, [], []
        self.page = context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", self._request)

    def _request(self, request):
        if not (request.url.startswith(self.base) or request.url.startswith("data:")):
            self.outside.append(request.url)

    def visit(self, url: str) -> tuple[dict, list[str], list[str]]:
        """Open one page; (what INSPECT_JS read, console errors, requests leaving the site)."""
        self.errors, self.outside = [], []
        self.page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT)
        self.page.evaluate(WAIT_MATH_JS)
        seen = self.page.evaluate(INSPECT_JS)
        self.page.wait_for_timeout(100)        # late console errors (theme scripts run after load)
        return seen, self.errors, self.outside


def _local_target(out: pathlib.Path, base: str, href: str) -> tuple[pathlib.Path, str] | None:
    """(file, fragment) that an internal link points at, or None for an outside link."""
    if not href.startswith(base):
        return None
    parts = urllib.parse.urlsplit(href)
    path = out / urllib.parse.unquote(parts.path).lstrip("/")
    if path.is_dir():
        path = path / "index.html"
    return path, urllib.parse.unquote(parts.fragment)


def test_every_page_in_chromium(site, server, browser):
    out = site["out"]
    desktop = browser.new_context(viewport={"width": 1280, "height": 900})
    phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    on_desktop, on_phone = _Tab(desktop, server), _Tab(phone, server)
    problems = []
    typeset_pages = 0
    try:
        for rel in _pages(out):
            url = server + rel
            seen, errors, outside = on_desktop.visit(url)
            lang = rel.split("/")[0]
            problems += [f"{rel}: console error: {e}" for e in errors]
            problems += [f"{rel}: request leaving the site: {u}" for u in outside]
            if seen["rawMath"]:
                problems.append(f"{rel}: raw $$ in the text")
            problems += [f"{rel}: math not typeset: {t!r}" for t in seen["untypeset"]]
            typeset_pages += seen["mathCount"] > 0
            problems += [f"{rel}: image did not load: {s}" for s in seen["failedImages"]]
            for href in seen["links"]:
                target = _local_target(out, server, href)
                if target is None:
                    continue
                path, fragment = target
                if not path.is_file():
                    problems.append(f"{rel}: broken link {href}")
                elif fragment and path.suffix == ".html" and fragment not in _ids_of(path):
                    problems.append(f"{rel}: link to a missing anchor {href}")
            if lang in ("en", "zh") and rel != f"{lang}/genindex.html":
                other = "zh" if lang == "en" else "en"
                name = rel.split("/", 1)[1]
                expected = server + f"{other}/{name}" if (out / other / name).is_file() \
                    else server + f"{other}/index.html"
                if seen["switchHref"] != expected:
                    problems.append(f"{rel}: language switch leads to {seen['switchHref']}, "
                                    f"expected {expected}")
            small, errors, _ = on_phone.visit(url)
            if small["tooWide"]:
                problems.append(f"{rel}: scrolls sideways at 390 px "
                                f"(page {small['scrollWidth']} px wide)")
            problems += [f"{rel} (390 px): console error: {e}" for e in errors]
    finally:
        desktop.close()
        phone.close()
    assert problems == [], "\n".join(problems)
    # The check above is not empty: the chapters do have math (chapter 1 alone has dozens).
    assert typeset_pages >= 4


def test_the_tab_sees_requests_leaving_the_site_and_errors(site, server, browser):
    # the checks above would also pass if _Tab saw nothing: a page with an image from another
    # address (a closed local port: refused at once, online or off) and a script error
    folder = site["out"] / "tab-check"
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text('<html><body><img src="http://127.0.0.1:9/x.png">'
                                       '<script>undefinedFunction()</script></body></html>')
    context = browser.new_context()
    try:
        _, errors, outside = _Tab(context, server).visit(server + "tab-check/index.html")
    finally:
        context.close()
    assert set(outside) == {"http://127.0.0.1:9/x.png"}, outside      # Chromium may try it twice
    assert any("undefinedFunction" in e for e in errors), errors


@pytest.mark.parametrize("lang, word", [("en", "attention"), ("zh", "注意力")])
def test_search_finds(site, server, browser, lang, word):
    context = browser.new_context()
    errors = []
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server + f"{lang}/search.html?q={urllib.parse.quote(word)}", wait_until="load")
        results = page.locator("#search-results ul.search li")
        results.first.wait_for(timeout=PAGE_TIMEOUT)
        hits = results.evaluate_all("items => items.map(li => li.querySelector('a').getAttribute('href'))")
    finally:
        context.close()
    assert errors == []
    assert any(h.startswith("01_self_attention.html") for h in hits), hits


def test_language_switch_leads_to_the_counterpart(site, server, browser):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server + "en/01_self_attention.html", wait_until="load")
        page.locator("a.bc-language-switch").first.click()
        page.wait_for_load_state("load")
        assert page.url == server + "zh/01_self_attention.html"
        assert page.locator("html").get_attribute("lang").startswith("zh")
        page.locator("a.bc-language-switch").first.click()
        page.wait_for_load_state("load")
        assert page.url == server + "en/01_self_attention.html"
    finally:
        context.close()
