"""An installed azero (a wheel, not the editable checkout) works from any folder: the presets
(configs/ in the checkout) ship inside the package and nothing reads files beside the sources."""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

from runs import tiny_sets

REPO = Path(__file__).resolve().parent.parent


def _setuptools_builds_wheels() -> bool:
    """Whether this interpreter's setuptools builds wheels: its own bdist_wheel (70.1 and later) or
    the wheel package's (a new venv's setuptools 65 has neither: "invalid command 'bdist_wheel'")."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    return any(importlib.util.find_spec(name) is not None for name in ("setuptools.command.bdist_wheel", "wheel"))


def test_an_installed_azero_trains_from_another_folder(tmp_path):
    # the sources without the checkout's own clutter: the build must not depend on it
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "runs", "build", "*.egg-info", "__pycache__", ".venv", "docs", "tests"))
    environment = tmp_path / "venv"
    # this interpreter's packages (torch, numpy, pip, ...) are visible; azero itself is installed
    # into the venv (without a pip of its own). Inside a virtual environment "the system's packages"
    # are the base interpreter's, not the environment's, so the venv is also given this
    # interpreter's site folders (plain paths: their .pth files, an editable azero's among them, are
    # not read)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(environment)],
                   check=True)
    python = environment / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    folders = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                             text=True, env=env, check=True).stdout.strip()
    Path(folders, "outer-packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # the wheel is built by this interpreter's setuptools where it can build one (setuptools 70.1 or
    # later, or the wheel package), with no download; else (a new venv's setuptools 65) pip builds it
    # in isolation with the setuptools pyproject.toml asks for, from the index the install came from
    isolation = ["--no-build-isolation"] if _setuptools_builds_wheels() else []
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", *isolation, str(source)],
                             capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stderr
    shutil.rmtree(source)  # the installed copy must stand alone

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run([python, "-c", "import azero.config as c; print(c.__file__); print(c.CONFIG_DIR)"],
                           cwd=elsewhere, capture_output=True, text=True, env=env, check=True)
    module_file, config_dir = where.stdout.split()
    assert Path(module_file).is_relative_to(environment), "the venv's own copy is imported, not the checkout"
    assert (Path(config_dir) / "tictactoe.toml").exists()

    run = subprocess.run([environment / "bin" / "azero", "train", "--game", "tictactoe", "--iterations", "1",
                          "--run-dir", "run", "--no-progress", *tiny_sets({"evaluation.games": 2})],
                         cwd=elsewhere, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert (elsewhere / "run" / "latest.pt").exists()
    assert (elsewhere / "run" / "config.toml").read_text().count('spec = "tictactoe') == 1
    plot = subprocess.run([environment / "bin" / "azero", "plot_elo", "run"], cwd=elsewhere, capture_output=True,
                          text=True, env=env, timeout=120)
    assert plot.returncode == 0 and "<circle" in (elsewhere / "run" / "elo.svg").read_text(), plot.stderr


def test_the_wheel_lists_every_package_of_the_sources():
    # pyproject lists the packages (to map azero.configs to configs/); a new package left out of the
    # list would be missing from every installed azero while the checkout still works
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(path.parent.relative_to(REPO).parts)
               for top in ("azero", "games") for path in (REPO / top).rglob("__init__.py")}
    assert listed - {"azero.configs"} == on_disk, (
        f"add to pyproject's [tool.setuptools] packages: {sorted(on_disk - listed)}; "
        f"remove: {sorted(listed - on_disk - {'azero.configs'})}")
    assert sorted(p.name for p in (REPO / "configs").glob("*.toml")), "the presets are in configs/"
