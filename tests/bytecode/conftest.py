"""Shared pieces of the bytecode tests: the three reference interpreters and small payloads."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
VERSIONS = ("3.11", "3.12", "3.13")


def interpreter(version: str) -> str | None:
    """The reference environment's interpreter for ``version`` (this one for our own)."""
    if version == "%d.%d" % sys.version_info[:2]:
        return sys.executable
    path = ROOT / ".venv" / f"py{version.replace('.', '')}" / "bin" / "python"
    return str(path) if path.exists() else None


def other_versions() -> list[str]:
    own = "%d.%d" % sys.version_info[:2]
    return [v for v in VERSIONS if v != own]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private bytecode cache of its own for the test."""
    directory = tmp_path / "bytecode-cache"
    monkeypatch.setenv("ANSIBLE_ACCEL_BYTECODE_CACHE", str(directory))
    return directory


def write_zip(path: pathlib.Path, entries: list[tuple[str, bytes]], date_time=(2025, 3, 4, 5, 6, 8)) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


def run_python(python: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ANSIBLE_ACCEL"))}
    full_env.update(env or {})
    return subprocess.run([python, *args], capture_output=True, text=True, env=full_env, timeout=120)
