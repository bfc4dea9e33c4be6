"""Run ansible-core's own unit tests for the accelerated paths, accelerator off and on.

Usage: ``.venv/py3XX/bin/python tests/conformance/run_conformance.py [--cache DIR]``

The sdist of the ansible-core installed in this interpreter is downloaded (once, into the
cache) and unpacked; its unit tests for the hot paths run twice with pytest, the way
``ansible-test units`` runs them (its empty ansible.cfg, pytest config and ``ansible_forked``
plugin, so each test runs in its own fork; rootdir and working directory at the sdist root).
The tests import the *installed* ansible-core, which is what ansible-accel patches.

The run with the accelerator on loads ``accel_conformance_plugin`` with
``ACCEL_CONFORMANCE_MODE=on``, which calls ``ansible_accel.install()`` before collection.
Exit status 1 when a test that passes off does not pass on, or when "on" did not install.
"""

from __future__ import annotations

import argparse
import glob
import json
import locale
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# ansible-core's unit tests for the code paths ansible-accel replaces, relative to the sdist.
TEST_PATHS = [
    "test/units/executor/module_common",
    "test/units/module_utils/common/arg_spec",
    "test/units/module_utils/common/validation",
    "test/units/module_utils/common/parameters",
    "test/units/module_utils/basic/test_argument_spec.py",
    "test/units/module_utils/basic/test_no_log.py",
    "test/units/module_utils/basic/test_sanitize_keys.py",
    "test/units/module_utils/basic/test_heuristic_log_sanitize.py",
    # Beyond the list in the issue: module exit and invocation logging apply no_log masking.
    "test/units/module_utils/basic/test_exit_json.py",
    "test/units/module_utils/basic/test__log_invocation.py",
]
# Secret masking (ansible-core 2.22+): these files exist only in versions that have it.
SECRET_TEST_GLOBS = ["test/units/**/test_*secret*.py"]
# Files included where they test secret masking: the register_secret filter's tests (2.22+).
SECRET_TEST_FILES = {"test/units/plugins/filter/test_core.py": "register_secret"}

FORKED_PLUGINS = "test/lib/ansible_test/_util/target/pytest/plugins"
PYTEST_INI = "test/lib/ansible_test/_data/pytest/config/default.ini"
EMPTY_ANSIBLE_CFG = "test/lib/ansible_test/_data/ansible.cfg"

UNITS_COMMAND = "test/lib/ansible_test/_internal/commands/units/__init__.py"
OPTIONAL_PYTEST_OPTIONS = ["--pythonwarnings=error:Passing a non-Collection iterable to parametrize is deprecated"]

OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.join(REPO, ".cache"), help="download/unpack directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    options = parser.parse_args(argv)

    started = time.monotonic()
    version = metadata.version("ansible-core")
    print(f"== conformance: ansible-core {version} on Python {sys.version.split()[0]} ({sys.executable})", flush=True)
    cache = os.path.abspath(options.cache)
    source = unpacked_sdist(version, cache)
    paths = selected_tests(source)
    print(f"   tests: {' '.join(os.path.relpath(p, source) for p in paths)}", flush=True)

    work = tempfile.mkdtemp(prefix=f"accel-conformance-{version}-")
    try:
        runs = {mode: run_mode(mode, source, paths, work, options.verbose) for mode in ("off", "on")}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    problems = compare(runs["off"], runs["on"])
    report(version, runs["off"], runs["on"], problems, time.monotonic() - started)
    return 1 if problems else 0


# --- the sdist -------------------------------------------------------------------------------


def unpacked_sdist(version: str, cache: str) -> str:
    """The unpacked sdist of ansible-core ``version``, downloading it into ``cache`` if needed."""
    root = os.path.join(cache, "conformance", f"ansible_core-{version}")
    if os.path.isfile(os.path.join(root, ".complete")):
        return root
    archive = download_sdist(version, os.path.join(cache, "sdist"))
    os.makedirs(os.path.dirname(root), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".unpack-", dir=os.path.dirname(root))
    try:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(staging, filter="data")
            else:  # Python < 3.11.4; the archive comes from PyPI over TLS
                tar.extractall(staging)
        (top,) = os.listdir(staging)
        shutil.rmtree(root, ignore_errors=True)
        os.replace(os.path.join(staging, top), root)
        open(os.path.join(root, ".complete"), "w").close()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def download_sdist(version: str, into: str) -> str:
    os.makedirs(into, exist_ok=True)
    names = [f"ansible_core-{version}.tar.gz", f"ansible-core-{version}.tar.gz"]
    for name in names:
        if os.path.isfile(os.path.join(into, name)):
            return os.path.join(into, name)
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
        "--no-deps", "--no-binary", ":all:", f"ansible-core=={version}", "-d", into,
    ]  # fmt: skip
    print(f"   downloading the ansible-core {version} sdist into {into}", flush=True)
    for attempt in (1, 2, 3):
        if subprocess.run(command).returncode == 0:
            break
        if attempt < 3:
            time.sleep(5 * attempt)
    for name in names:
        if os.path.isfile(os.path.join(into, name)):
            return os.path.join(into, name)
    raise SystemExit(f"could not download the ansible-core {version} sdist (ran: {' '.join(command)})")


def selected_tests(source: str) -> list[str]:
    paths = [os.path.join(source, p) for p in TEST_PATHS]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"test paths missing from the sdist: {missing}")
    for pattern in SECRET_TEST_GLOBS:
        paths.extend(sorted(glob.glob(os.path.join(source, pattern), recursive=True)))
    for path, marker in SECRET_TEST_FILES.items():
        full = os.path.join(source, path)
        if os.path.isfile(full):
            with open(full) as handle:
                if marker in handle.read():
                    paths.append(full)
    return paths


# --- running pytest --------------------------------------------------------------------------


def utf8_locale() -> str:
    """The locale ansible-test would choose: en_US.UTF-8, else C.UTF-8."""
    current = locale.setlocale(locale.LC_ALL)
    try:
        for candidate in ("en_US.UTF-8", "C.UTF-8"):
            try:
                locale.setlocale(locale.LC_ALL, candidate)
                return candidate
            except locale.Error:
                continue
        return "C.UTF-8"
    finally:
        locale.setlocale(locale.LC_ALL, current)


def split_by_context(source: str, paths: list[str]) -> dict[str, list[str]]:
    """ansible-test's test contexts: module_utils tests run without the controller code."""
    module_utils = os.path.join(source, "test", "units", "module_utils")
    split: dict[str, list[str]] = {"controller": [], "module_utils": []}
    for path in paths:
        inside = os.path.commonpath([path, module_utils]) == module_utils
        split["module_utils" if inside else "controller"].append(path)
    return {context: selected for context, selected in split.items() if selected}


def module_utils_only_path(work: str) -> str:
    """A PYTHONPATH entry whose ``ansible`` package holds only the installed module_utils,
    as ansible-test builds for module_utils unit tests (controller code is not importable,
    so module_utils behaves as it does inside a module)."""
    root = os.path.join(work, "module_utils_only")
    if not os.path.isdir(root):
        import ansible

        package = os.path.join(root, "ansible")
        os.makedirs(package)
        open(os.path.join(package, "__init__.py"), "w").close()
        os.symlink(
            os.path.join(os.path.dirname(ansible.__file__), "module_utils"), os.path.join(package, "module_utils")
        )
    return root


def test_environment(source: str, context: str, mode: str, results: str, work: str) -> dict[str, str]:
    """A clean environment like ansible-test's for units: no ANSIBLE_* from the caller."""
    env = {"LC_ALL": utf8_locale(), "PATH": os.environ.get("PATH", os.defpath)}
    for name in ("HOME", "TMPDIR", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(
        ANSIBLE_CONFIG=os.path.join(source, EMPTY_ANSIBLE_CFG),
        ANSIBLE_INVENTORY="/dev/null",
        ANSIBLE_LIBRARY="/dev/null",
        ANSIBLE_DEPRECATION_WARNINGS="false",
        ANSIBLE_DEVEL_WARNING="false",
        ANSIBLE_FORCE_COLOR="false",
        ANSIBLE_HOST_KEY_CHECKING="false",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        ANSIBLE_CONTROLLER_MIN_PYTHON_VERSION=f"{sys.version_info[0]}.{sys.version_info[1]}",
        PAGER="/bin/cat",
        PYTHONPATH=os.pathsep.join(
            ([module_utils_only_path(work)] if context == "module_utils" else [])
            + [os.path.join(source, FORKED_PLUGINS), HERE]
        ),
        PYTEST_PLUGINS="ansible_forked",
        PYTHONDONTWRITEBYTECODE="1",
        ACCEL_CONFORMANCE_MODE=mode,
        ACCEL_CONFORMANCE_RESULTS=results,
    )
    return env


def run_mode(mode: str, source: str, paths: list[str], work: str, verbose: bool) -> dict:
    """Both test contexts with the accelerator ``mode``; outcomes merged, the rest per context."""
    merged: dict = {"outcomes": {}, "seconds": 0.0, "contexts": {}}
    for context, selected in split_by_context(source, paths).items():
        run = run_pytest(context, mode, source, selected, work, verbose)
        merged["contexts"][context] = run
        merged["outcomes"].update(run["outcomes"])
        merged["seconds"] += run["seconds"]
    return merged


def version_specific_options(source: str) -> list[str]:
    """Options this version's ``ansible-test units`` adds beyond the common ones.

    Newer ansible-test versions turn pytest deprecations into errors once their own tests
    are fixed; older sdists' tests are not, so each version gets only what it asks for.
    """
    with open(os.path.join(source, UNITS_COMMAND)) as handle:
        text = handle.read()
    return [option for option in OPTIONAL_PYTEST_OPTIONS if option in text]


def run_pytest(context: str, mode: str, source: str, paths: list[str], work: str, verbose: bool) -> dict:
    results = os.path.join(work, f"{context}-{mode}.json")
    command = [
        sys.executable, "-m", "pytest",
        "-q", "-r", "fE", "--color", "no", "--tb", "short",
        "-p", "no:cacheprovider",
        "-p", "accel_conformance_plugin",
        "-c", os.path.join(source, PYTEST_INI),
        "--rootdir", source,
        "--confcutdir", source,
        "--strict-markers",
        *version_specific_options(source),
        *paths,
    ]  # fmt: skip
    started = time.monotonic()
    completed = subprocess.run(
        command, cwd=source, env=test_environment(source, context, mode, results, work),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    if verbose:
        print(completed.stdout)
    if completed.returncode not in (0, 1) or not os.path.isfile(results):
        print(completed.stdout[-20000:])
        raise SystemExit(
            f"pytest ({context} context, accelerator {mode}) did not complete: exit status {completed.returncode}"
        )
    with open(results) as handle:
        data = json.load(handle)
    data["seconds"] = elapsed
    data["output"] = completed.stdout
    return data


# --- comparing and reporting -----------------------------------------------------------------


def compare(off: dict, on: dict) -> list[str]:
    problems = []
    for context, run in on["contexts"].items():
        status = run.get("install_status") or {}
        if not status.get("installed") or not run.get("still_installed"):
            problems.append(f"{context}: the 'on' run did not install ansible-accel: {status.get('reason')}")
        for path, info in status.items():
            if isinstance(info, dict) and str(info.get("reason") or "").startswith("failed to switch on"):
                problems.append(f"{context}: path {path} broke while switching on: {info['reason']}")
    for context, run in off["contexts"].items():
        if run.get("accel_installed"):
            problems.append(f"{context}: ansible-accel was installed during the 'off' run")
    if not any(o == "passed" for o in off["outcomes"].values()):
        problems.append("no test passed in the 'off' run")
    for nodeid, outcome in sorted(off["outcomes"].items()):
        if outcome in ("passed", "xpassed") and on["outcomes"].get(nodeid) not in ("passed", "xpassed"):
            problems.append(f"passes off, {on['outcomes'].get(nodeid, 'missing')} on: {nodeid}")
    return problems


def counts(outcomes: dict[str, str]) -> dict[str, int]:
    result = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes.values():
        result[outcome] += 1
    return result


def report(version: str, off: dict, on: dict, problems: list[str], seconds: float) -> None:
    print(f"   {'run':<24} {'tests':>6} " + " ".join(f"{o:>7}" for o in OUTCOMES) + f" {'seconds':>8}")
    for context in off["contexts"]:
        for mode, run in (("off", off["contexts"][context]), ("on", on["contexts"].get(context))):
            if run is None:
                continue
            row = counts(run["outcomes"])
            print(
                f"   {context + ' context, ' + mode:<24} {len(run['outcomes']):>6} "
                + " ".join(f"{row[o]:>7}" for o in OUTCOMES)
                + f" {run['seconds']:>8.1f}"
            )
    for mode, run in (("off", off), ("on", on)):
        row = counts(run["outcomes"])
        print(
            f"   {'TOTAL ' + mode:<24} {len(run['outcomes']):>6} "
            + " ".join(f"{row[o]:>7}" for o in OUTCOMES)
            + f" {run['seconds']:>8.1f}"
        )
    for mode, run in (("off", off), ("on", on)):
        bad = sorted(n for n, o in run["outcomes"].items() if o in ("failed", "error"))
        if bad:
            print(f"   failing {mode}: " + ", ".join(bad[:20]) + (" ..." if len(bad) > 20 else ""))
    print_accelerator(on)
    if problems:
        print(f"   FAIL: {len(problems)} problem(s):")
        for problem in problems[:50]:
            print(f"     {problem}")
        if len(problems) > 50:
            print(f"     ... and {len(problems) - 50} more")
        if any(p.startswith("passes off") for p in problems):
            for context, run in on["contexts"].items():
                print(f"   --- pytest output ({context} context, on), last lines ---")
                print("\n".join(run["output"].splitlines()[-60:]))
    else:
        print(f"   OK: every test that passes off passes on (ansible-core {version})")
    print(f"   conformance time: {seconds:.1f}s", flush=True)


def print_accelerator(on: dict) -> None:
    """Per context: did install() run, which paths were active, and their counters."""
    for context, run in on["contexts"].items():
        status = run.get("install_status") or {}
        counters = run.get("counters") or {}
        paths = {p: info for p, info in status.items() if isinstance(info, dict) and "active" in info}
        active = [p for p, info in paths.items() if info["active"]]
        print(
            f"   accelerator on ({context} context): installed={'yes' if status.get('installed') else 'no'}, "
            f"active paths: {', '.join(active) or 'none'}"
        )
        for path, info in paths.items():
            c = counters.get(path, {})
            fallbacks = c.get("fallback", {})
            detail = (
                (f"  fallbacks: {', '.join(f'{k}: {v}' for k, v in sorted(fallbacks.items()))}" if fallbacks else "")
                if info["active"]
                else f"  (inactive: {info.get('reason')})"
            )
            print(f"     {path:<9} native {c.get('native', 0):>7}  fallback {sum(fallbacks.values()):>6}{detail}")


if __name__ == "__main__":
    sys.exit(main())
