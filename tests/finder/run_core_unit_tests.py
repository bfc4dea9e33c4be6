"""Run ansible-core's own module_common unit tests (test_recursive_finder.py,
test_module_common.py) with the accelerator switched on, in this interpreter.

    python tests/finder/run_core_unit_tests.py [--cache DIR]

The installed ansible-core's sdist is fetched once with ``pip download`` into the cache
directory (default .cache/ at the repository root).  The run fails unless the tests pass AND
the native scanner answered (``status()['finder']['native'] > 0``).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

PLUGIN = '''
import ansible_accel
ansible_accel.install()

def pytest_sessionfinish(session, exitstatus):
    finder = ansible_accel.status()["finder"]
    print("\\nansible-accel finder:", finder)
    if session.testscollected and finder["native"] == 0:
        session.exitstatus = 3
'''


def _sdist_tests(cache: pathlib.Path, version: str) -> pathlib.Path:
    tree = cache / f"ansible_core-{version}"
    if not (tree / "test" / "units").is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"ansible-core=={version}", "-d", str(cache)], check=True)
        with tarfile.open(cache / f"ansible_core-{version}.tar.gz") as archive:
            archive.extractall(cache, filter="data")
    return tree / "test"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=str(ROOT / ".cache"))
    options = parser.parse_args()
    from ansible.release import __version__

    test_dir = _sdist_tests(pathlib.Path(options.cache), __version__)
    with tempfile.TemporaryDirectory() as plugin_dir:
        (pathlib.Path(plugin_dir) / "accel_on.py").write_text(PLUGIN)
        env_path = f"{plugin_dir}:{test_dir}"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "accel_on",
                   "units/executor/module_common"]
        return subprocess.run(command, cwd=test_dir, env={**__import__("os").environ, "PYTHONPATH": env_path}).returncode


if __name__ == "__main__":
    sys.exit(main())
