"""Disk size of a fresh virtual environment for each install line of the README.

The README's install block (the fenced block after the `<!-- install -->` marker) has one
`pip install` line per backend and device, each ending in a comment `# <label>: <size>`. This
script builds the project's wheel once, then for each line makes a fresh virtual environment,
runs the line there with the wheel in place of the checkout (`"."`), and prints the
environment's size on disk (`du`), the backend's version and the largest packages. It measures
what a user's `pip install` gets, `.pyc` files included.

    python benchmarks/install_sizes.py              # every line (the GPU lines download GBs)
    python benchmarks/install_sizes.py --only CPU   # the lines whose label starts with CPU

`tests/test_install.py` runs the CPU lines of the same block (`install_lines`) in fresh
environments and then the Quickstart there.
"""

import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "<!-- install -->"
BACKENDS = ("jax", "torch", "tensorflow")


def install_lines(path=os.path.join(ROOT, "README.md")):
    """The install block's lines as `(label, argv)`: `argv` starts with `pip install`."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    after = text.split(MARKER, 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, re.S).group(1)
    lines = []
    for line in block.splitlines():
        if not line.startswith("pip install"):
            continue
        command, _, comment = line.partition("#")
        label = comment.split(":", 1)[0].strip()
        lines.append((label, shlex.split(command)))
    return lines


def backend_of(argv):
    """The backend extra a line installs (`.[jax]` -> jax)."""
    (extras,) = [arg for arg in argv if arg.startswith(".[")]
    (backend,) = set(extras[2:-1].split(",")) & set(BACKENDS)
    return backend


def with_wheel(argv, wheel):
    """The line with the project's wheel in place of the checkout: `.[jax]` -> `<wheel>[jax]`."""
    return [f"{wheel}{arg[1:]}" if arg.startswith(".[") else arg for arg in argv]


INDEX_OPTIONS = ("--extra-index-url", "--index-url", "-i")


def index_urls(argv):
    """The index URLs a `pip install` line names: `--index-url URL`, `--index-url=URL`,
    `--extra-index-url` alike, `-i URL`, `-iURL`."""
    urls = []
    for option, following in zip(argv, [*argv[1:], None]):
        name, equals, value = option.partition("=")
        if name in INDEX_OPTIONS[:2] and equals:
            urls.append(value)
        elif option in INDEX_OPTIONS and following is not None:
            urls.append(following)
        elif option.startswith("-i") and not option.startswith("--") and len(option) > 2:
            urls.append(option[2:])
    return urls


def pip_environment(argv, environment=None):
    """The environment to run a line's `pip install` in: `environment` (default `os.environ`),
    with `PIP_RETRIES=0` (unless it sets PIP_RETRIES) where an index the line names has a host
    name that does not resolve. On a machine without that network pip would retry the host
    five times, with back-off, for every package it looks up (about 8 s each, two minutes
    for the PyTorch line) before taking the package from the indexes it can reach."""
    environment = dict(os.environ if environment is None else environment)
    if "PIP_RETRIES" in environment:
        return environment
    for url in index_urls(argv):
        host = urllib.parse.urlsplit(url).hostname
        try:
            if host:
                socket.getaddrinfo(host, None)
        except OSError:
            environment["PIP_RETRIES"] = "0"
            break
    return environment


def build_wheel(out):
    """The project's wheel, built from a copy of its sources so the checkout stays clean."""
    source = os.path.join(out, "source")
    os.makedirs(source)
    for name in ("pyproject.toml", "README.md", "LICENSE", "keras_transformer_launch.py"):
        if os.path.exists(os.path.join(ROOT, name)):
            shutil.copy(os.path.join(ROOT, name), source)
    shutil.copytree(os.path.join(ROOT, "keras_transformer"),
                    os.path.join(source, "keras_transformer"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, source],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = [name for name in os.listdir(out) if name.endswith(".whl")]
    return os.path.join(out, wheel)


def fresh_venv(path):
    """A new virtual environment; returns its `python`."""
    subprocess.run([sys.executable, "-m", "venv", path], check=True, timeout=300)
    return os.path.join(path, "bin", "python")


def mebibytes(path):
    """Disk usage of a folder in MiB, as `du -s` counts it."""
    kib = subprocess.run(["du", "-sk", path], check=True, capture_output=True, text=True)
    return int(kib.stdout.split()[0]) / 1024


def largest_packages(venv, count=4):
    """The `count` largest folders of the environment's site-packages, in MiB."""
    (site,) = [os.path.join(root, "site-packages")
               for root, dirs, _ in os.walk(os.path.join(venv, "lib")) if "site-packages" in dirs]
    sizes = [(mebibytes(os.path.join(site, name)), name) for name in os.listdir(site)
             if os.path.isdir(os.path.join(site, name))]
    return sorted(sizes, reverse=True)[:count]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the lines whose label starts with this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        wheel = build_wheel(os.path.join(scratch, "wheel"))
        empty = mebibytes(os.path.dirname(os.path.dirname(fresh_venv(
            os.path.join(scratch, "empty")))))
        print(f"empty virtual environment: {empty:.0f} MiB ({sys.version.split()[0]})")
        for label, argv in install_lines():
            if not label.startswith(args.only):
                continue
            venv = os.path.join(scratch, "venv")
            python = fresh_venv(venv)
            run = subprocess.run([python, "-m", *with_wheel(argv, wheel)], capture_output=True,
                                 text=True, env=pip_environment(argv))
            if run.returncode:
                print(f"{label}: install failed\n{run.stderr[-2000:]}")
                shutil.rmtree(venv)
                continue
            backend = backend_of(argv)
            module = {"tensorflow": "tensorflow"}.get(backend, backend)
            version = subprocess.run(
                [python, "-c", f"import importlib.metadata as m; print(m.version('{module}'))"],
                capture_output=True, text=True).stdout.strip()
            top = ", ".join(f"{name} {size:.0f}" for size, name in largest_packages(venv))
            print(f"{label}: {mebibytes(venv):.0f} MiB ({backend} {version}; largest: {top})"
                  f"\n    {shlex.join(argv)}")
            shutil.rmtree(venv)


if __name__ == "__main__":
    main()
