"""Run the widget tests and the notebooks with Colab's widget stack (ipywidgets 7.7).

    python tools/ipywidgets7_check.py               # widget unit tests + every notebook
    python tools/ipywidgets7_check.py 01 03         # widget unit tests + those notebooks
    python tools/ipywidgets7_check.py --no-notebooks

Colab keeps its own ipywidgets 7.7.1, IPython 7.34.0 and ipykernel 6.17.1 (the
``google-colab`` package pins them), whatever the course's requirements say. This script
builds a throw-away virtual environment that sees every package of the environment running
it (a .pth file adds that environment's site-packages, so nothing big is installed twice)
and installs exactly those three versions on top, where they shadow the newer ones. Then it

* runs ``tests/test_widgets_*.py`` with that environment's Python, and
* executes each notebook top to bottom in a kernel of that environment (no output
  comparison: the point is that no cell fails). An extra first cell asserts the kernel
  really has the Colab versions.

``tests/test_colab.py`` uses the same functions, so ``pytest`` runs this check too. It needs
the package registry only to install the handful of small wheels below (pip's cache makes
later runs offline-safe).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]

# What a Colab runtime has (the first three are pinned by the google-colab package).
COLAB_VERSIONS = {"ipywidgets": "7.7.1", "IPython": "7.34.0", "ipykernel": "6.17.1"}
# Installed with --no-deps on top of the main environment: the three above plus those of
# their dependencies that a current environment no longer has.
COLAB_STACK = [
    "ipywidgets==7.7.1", "ipython==7.34.0", "ipykernel==6.17.1",
    "ipython-genutils==0.2.0", "backcall==0.2.0", "pickleshare==0.7.5", "decorator==4.4.2",
    "nest-asyncio==1.6.0",
]
KERNEL_NAME = "bertcourse-colab-widgets"

VERSION_CELL = f"""# Added by tools/ipywidgets7_check.py: the kernel must run Colab's widget stack.
import IPython, ipykernel, ipywidgets
found = {{"ipywidgets": ipywidgets.__version__, "IPython": IPython.__version__,
         "ipykernel": ipykernel.__version__}}
assert found == {COLAB_VERSIONS!r}, found"""


class SetupError(RuntimeError):
    """The throw-away environment could not be built (for example: the registry is unreachable)."""


@dataclass
class ColabEnv:
    python: pathlib.Path
    kernel_dir: pathlib.Path     # holds the kernelspec KERNEL_NAME


def _run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)


def create_env(dest: pathlib.Path) -> ColabEnv:
    """Build the throw-away environment in ``dest`` (a few seconds)."""
    dest = pathlib.Path(dest)
    made = _run([sys.executable, "-m", "venv", "--without-pip", dest])
    if made.returncode:
        raise SetupError(f"python -m venv failed:\n{made.stderr}")
    python = dest / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    purelib = pathlib.Path(site.stdout.strip())
    # addsitedir (not a bare path) so the main environment's own .pth files are processed
    # too: that is how its editable install of bertcourse is found.
    main = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (purelib / "_bertcourse_main_env.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in main))

    pip = _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
                "--disable-pip-version-check", *COLAB_STACK])
    if pip.returncode:
        raise SetupError(f"pip could not install {' '.join(COLAB_STACK)}:\n{pip.stdout}\n{pip.stderr}")
    probe = _run([python, "-c", "import json, IPython, ipykernel, ipywidgets, torch, bertcourse; "
                  "print(json.dumps({'ipywidgets': ipywidgets.__version__, 'IPython': IPython.__version__, "
                  "'ipykernel': ipykernel.__version__}))"])
    if probe.returncode or json.loads(probe.stdout) != COLAB_VERSIONS:
        raise SetupError(f"the throw-away environment is not what it should be:\n{probe.stdout}\n{probe.stderr}")

    spec = dest / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Colab widget stack)", "language": "python",
        "env": {"PYDEVD_DISABLE_FILE_VALIDATION": "1"},
    }))
    return ColabEnv(python=python, kernel_dir=dest / "kernels")


def run_widget_tests(env: ColabEnv, paths: list[pathlib.Path]) -> subprocess.CompletedProcess:
    """pytest on ``paths`` with the throw-away environment's Python."""
    return _run([env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths], cwd=ROOT,
                env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))


def run_notebook(env: ColabEnv, path: pathlib.Path, timeout: int = 600) -> float:
    """Execute ``path`` (not modified on disk) in a kernel of ``env``; return the seconds taken.

    Raises nbclient's CellExecutionError, naming the cell, when a cell fails.
    """
    import nbformat
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(VERSION_CELL))
    km = KernelManager(kernel_name=KERNEL_NAME,
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(env.kernel_dir)]))
    start = time.perf_counter()
    try:
        NotebookClient(nb, km=km, timeout=timeout,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        # nbclient leaves a kernel it was handed running: stop it, also after a failure.
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only notebooks whose name starts so (default: all)")
    parser.add_argument("--no-notebooks", action="store_true", help="run the widget unit tests only")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bertcourse-ipywidgets7-") as tmp:
        start = time.perf_counter()
        env = create_env(pathlib.Path(tmp) / "venv")
        print(f"environment with {', '.join(COLAB_STACK[:3])}: {time.perf_counter() - start:.1f} s", flush=True)

        failed = 0
        tests = sorted((ROOT / "tests").glob("test_widgets_*.py"))
        start = time.perf_counter()
        result = run_widget_tests(env, tests)
        print(result.stdout[-2000:] + result.stderr[-2000:])
        print(f"widget unit tests ({len(tests)} files): {time.perf_counter() - start:.1f} s", flush=True)
        failed += result.returncode != 0

        if not args.no_notebooks:
            paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            if args.prefixes:
                paths = [p for p in paths if any(p.name.startswith(x) for x in args.prefixes)]
            for path in paths:
                try:
                    print(f"{path.name}: {run_notebook(env, path):.1f} s", flush=True)
                except Exception as error:      # report every notebook, then fail
                    print(f"{path.name}: FAILED\n{error}", flush=True)
                    failed += 1
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
