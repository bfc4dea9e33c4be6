"""The version is written once, in Cargo.toml: pyproject.toml takes it from there (dynamic), the
extension's ``__version__`` is compiled from it, and the installed distribution carries it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata

import ansible_accel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _toml(name: str) -> dict:
    with open(os.path.join(ROOT, name), "rb") as handle:
        return tomllib.load(handle)


def test_pyproject_takes_the_version_from_cargo():
    project = _toml("pyproject.toml")["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]


def test_installed_versions_agree_with_cargo_toml():
    version = _toml("Cargo.toml")["package"]["version"]
    assert ansible_accel.__version__ == version
    assert metadata.version("ansible-accel") == version


def test_cli_prints_the_version():
    completed = subprocess.run([sys.executable, "-m", "ansible_accel._cli", "--version"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True)
    assert completed.stdout.split("\n")[0].split() == ["ansible-accel", _toml("Cargo.toml")["package"]["version"]]

