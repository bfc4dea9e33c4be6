"""The built wheel as a user gets it (``make package-check``, part of ``make test``).

Usage: ``python tests/packaging/check_package.py --python PYTHON --work DIR [--wheel WHEEL
--core VERSION] [--sdist SDIST]``, run by an interpreter with auditwheel, ansible-builder and
actionlint installed (the Makefile's packaging environment).

Steps, each timed:

- ``wheel``: the wheel is tagged ``manylinux_2_17`` (manylinux2014) and abi3, ``auditwheel show``
  agrees, and neither the extension nor the runner client it carries needs a symbol version
  newer than GLIBC_2.17 (``objdump -T``).
- ``install``: a fresh virtual environment of ``PYTHON`` gets the wheel and ansible-core
  ``VERSION`` from the package index; ``import ansible_accel`` gives the wheel's version, and
  ``ansible-accel status`` shows the paths active.
- ``playbook``: ``tests/packaging/smoke.yml`` runs off (plain ``ansible-playbook``) and on, the
  accelerator switched on the execution environment example's way (its ``ansible.cfg``, the
  callback linked into ansible-core's default callback path under a home directory of the
  check's own); both succeed with the same recap, and the counters show native calls.
- ``ee``: ``ansible-builder create`` writes the example's build context, whose Containerfile
  installs ansible-accel and the configuration.
- ``workflow``: actionlint finds nothing to say about ``.github/workflows/release.yml``.
- ``sdist`` (``--sdist``, ``make sdist-check``): a fresh environment installs the package from the sdist, which
  builds it with cargo (``CARGO_TARGET_DIR`` is passed through), and imports it.

Exit status 1 when a step fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(ROOT, "examples", "execution-environment")
WORKFLOW = os.path.join(ROOT, ".github", "workflows", "release.yml")
GLIBC_FLOOR = (2, 17)
PIP = ["-m", "pip", "install", "--disable-pip-version-check", "--quiet"]


class Failed(Exception):
    pass


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    if completed.returncode != 0:
        raise Failed(f"{' '.join(argv)} exited {completed.returncode}:\n{completed.stdout[-3000:]}")
    return completed


def wheel_version(wheel: str) -> str:
    return os.path.basename(wheel).split("-")[1]


def glibc_versions(path: str) -> list[tuple[int, ...]]:
    """The GLIBC_x.y symbol versions a binary's dynamic symbols ask for."""
    dump = run(["objdump", "-T", path]).stdout
    return sorted({tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_([0-9][0-9.]*[0-9])", dump)})


def check_glibc(name: str, path: str) -> str:
    versions = glibc_versions(path)
    if not versions:
        raise Failed(f"{name}: objdump -T shows no GLIBC symbol versions")
    newest = versions[-1]
    if newest > GLIBC_FLOOR:
        raise Failed(f"{name} needs GLIBC_{'.'.join(map(str, newest))}, newer than 2.17")
    return f"{name}: newest symbol version GLIBC_{'.'.join(map(str, newest))}"


def step_wheel(wheel: str, work: str) -> list[str]:
    name = os.path.basename(wheel)
    if "-abi3-" not in name or "manylinux_2_17_x86_64" not in name:
        raise Failed(f"{name} is not tagged abi3 and manylinux_2_17_x86_64")
    shown = run([sys.executable, "-m", "auditwheel", "show", wheel]).stdout
    flat = " ".join(shown.split())
    if 'consistent with the following platform tag: "manylinux_2_17_x86_64"' not in flat:
        raise Failed(f"auditwheel show:\n{shown}")
    unpacked = os.path.join(work, "unpacked")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    extension = [n for n in os.listdir(os.path.join(unpacked, "ansible_accel")) if n.endswith(".so")]
    if extension != ["_native.abi3.so"]:
        raise Failed(f"the wheel's extension files: {extension}")
    return [name, "auditwheel show: manylinux_2_17_x86_64",
            check_glibc("extension", os.path.join(unpacked, "ansible_accel", extension[0]))]


def step_install(wheel: str, python: str, core: str, work: str) -> tuple[list[str], str]:
    venv = os.path.join(work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", venv])
    vpython = os.path.join(venv, "bin", "python")
    run([vpython, *PIP, wheel, f"ansible-core=={core}"])
    version = run([vpython, "-c", "import ansible_accel; print(ansible_accel.__version__)"]).stdout.strip()
    if version != wheel_version(wheel):
        raise Failed(f"ansible_accel.__version__ is {version!r}, the wheel's {wheel_version(wheel)!r}")
    status = run([os.path.join(venv, "bin", "ansible-accel"), "status"]).stdout
    active = [name for name in re.findall(r"^(\w+)\s+yes\s", status, re.M) if name != "installed"]
    if f"ansible-core  {core} (supported)" not in status or "finder" not in active or "runner" not in active:
        raise Failed(f"ansible-accel status:\n{status}")
    client = os.path.join(work, "ansible-accel-run")
    run([vpython, "-c", "import sys; from ansible_accel import _native; "
                        "open(sys.argv[1], 'wb').write(_native.runner_client_binary())", client])
    lines = [f"fresh {venv}: ansible_accel {version}, ansible-core {core}, active: {' '.join(active)}",
             check_glibc("runner client", client)]
    return lines, venv


def playbook_run(venv: str, work: str, mode: str) -> tuple[str, dict | None]:
    home = os.path.join(work, f"home-{mode}")
    shutil.rmtree(home, ignore_errors=True)
    target = os.path.join(work, f"files-{mode}")
    os.makedirs(target, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(HOME=home, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=os.path.join(home, "tmp"),
               ANSIBLE_PYTHON_INTERPRETER=os.path.join(venv, "bin", "python"))
    stats_file = os.path.join(work, f"stats-{mode}.json")
    if mode == "on":
        # The execution environment example's way: the callback on the default callback path
        # (~/.ansible/plugins/callback here, /usr/share/ansible/plugins/callback in the image)
        # and the example's ansible.cfg.
        plugin_dir = os.path.join(home, ".ansible", "plugins", "callback")
        os.makedirs(plugin_dir)
        package = run([os.path.join(venv, "bin", "python"), "-c",
                       "import ansible_accel, os; print(os.path.dirname(ansible_accel.__file__))"]).stdout.strip()
        os.symlink(os.path.join(package, "ansible_plugins", "callback", "ansible_accel.py"),
                   os.path.join(plugin_dir, "ansible_accel.py"))
        env.update(ANSIBLE_CONFIG=os.path.join(EXAMPLE, "ansible.cfg"), ANSIBLE_ACCEL_STATS=stats_file)
    else:
        env["ANSIBLE_CONFIG"] = os.path.join(work, "empty.cfg")
        open(env["ANSIBLE_CONFIG"], "w").close()
    out = run([os.path.join(venv, "bin", "ansible-playbook"), "-i", "localhost,",
               os.path.join(HERE, "smoke.yml"), "-e", f"work={target}"], env=env, cwd=work).stdout
    recap = out[out.index("PLAY RECAP"):] if "PLAY RECAP" in out else ""
    stats = None
    if mode == "on" and os.path.exists(stats_file):
        with open(stats_file) as handle:
            stats = json.load(handle)
    return recap, stats


def step_playbook(venv: str, work: str) -> list[str]:
    recap_off, _ = playbook_run(venv, work, "off")
    recap_on, stats = playbook_run(venv, work, "on")
    if not recap_off or recap_off != recap_on:
        raise Failed(f"recaps differ:\noff: {recap_off}\non: {recap_on}")
    if not stats or not stats.get("installed"):
        raise Failed(f"the example's ansible.cfg did not switch the accelerator on: {stats}")
    paths = stats["run"]["paths"]
    native = {name: paths[name].get("native", 0) for name in ("finder", "payload", "runner")}
    if not all(native.values()):
        fallbacks = {name: paths[name].get("fallback", {}) for name in native if not native[name]}
        raise Failed(f"native calls by path: {native}; fallbacks: {fallbacks}")
    host = " ".join(recap_on.split("\n")[1].split())
    return [f"recap off and on: {host}",
            "on (example ansible.cfg): native " + ", ".join(f"{k} {v}" for k, v in native.items())]


def step_ee(work: str) -> list[str]:
    copy = os.path.join(work, "execution-environment")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(EXAMPLE, copy)
    context = os.path.join(copy, "context")
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    run([builder, "create", "-f", "execution-environment.yml", "-c", context], cwd=copy)
    files = [n for n in ("Containerfile", "Dockerfile") if os.path.exists(os.path.join(context, n))]
    if not files:
        raise Failed(f"no Containerfile in {context}")
    with open(os.path.join(context, files[0])) as handle:
        containerfile = handle.read()
    with open(os.path.join(context, "_build", "requirements.txt")) as handle:
        requirements = handle.read().split()
    wanted = ["COPY _build/configs/ansible.cfg /etc/ansible/ansible.cfg",
              "/usr/share/ansible/plugins/callback/ansible_accel.py", "ansible-core=="]
    missing = [w for w in wanted if w not in containerfile]
    if missing or "ansible-accel" not in requirements:
        raise Failed(f"the build context lacks {missing or 'ansible-accel in requirements.txt'}")
    return [f"ansible-builder create: {files[0]} with ansible-accel, the callback link and ansible.cfg"]


def step_workflow() -> list[str]:
    lint = shutil.which("actionlint", path=os.path.dirname(sys.executable))
    if not lint:
        raise Failed("actionlint is not installed beside this interpreter")
    version = run([lint, "-version"]).stdout.split("\n")[0]
    run([lint, "-no-color", "-shellcheck=", "-pyflakes=", WORKFLOW], cwd=ROOT)
    return [f"actionlint {version}: {os.path.relpath(WORKFLOW, ROOT)} clean"]


def step_sdist(sdist: str, python: str, work: str) -> list[str]:
    venv = os.path.join(work, "sdist-venv")
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", venv])
    vpython = os.path.join(venv, "bin", "python")
    run([vpython, *PIP, sdist])
    version = run([vpython, "-c", "import ansible_accel; print(ansible_accel.__version__)"]).stdout.strip()
    if version != os.path.basename(sdist).removesuffix(".tar.gz").split("-")[1]:
        raise Failed(f"the sdist's package says {version!r}")
    shutil.rmtree(venv)
    return [f"{os.path.basename(sdist)} built and installed in a fresh environment: ansible_accel {version}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", help="the wheel to check")
    parser.add_argument("--python", required=True, help="the interpreter of the fresh environments")
    parser.add_argument("--core", help="the ansible-core version to install beside the wheel")
    parser.add_argument("--work", required=True, help="a directory for the check (emptied first)")
    parser.add_argument("--sdist", help="install this sdist in a fresh environment")
    options = parser.parse_args(argv)
    if not options.wheel and not options.sdist:
        parser.error("nothing to check: give --wheel, --sdist or both")
    if options.wheel and not options.core:
        parser.error("--wheel needs --core")
    work = os.path.abspath(options.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    venv = None
    steps = []
    if options.wheel:
        steps += [
            ("wheel", lambda: step_wheel(options.wheel, work)),
            ("install", None),
            ("playbook", lambda: step_playbook(venv, work)),
            ("ee", lambda: step_ee(work)),
            ("workflow", step_workflow),
        ]
    if options.sdist:
        steps.append(("sdist", lambda: step_sdist(options.sdist, options.python, work)))
    failures = 0
    for name, action in steps:
        started = time.monotonic()
        try:
            if name == "install":
                lines, venv = step_install(options.wheel, options.python, options.core, work)
            elif name == "playbook" and venv is None:
                raise Failed("no environment to run it in")
            else:
                lines = action()
            verdict = "ok"
        except Failed as failure:
            lines, verdict = str(failure).splitlines(), "FAILED"
            failures += 1
        print(f"== {name:<9} {verdict:<6} {time.monotonic() - started:6.1f}s")
        for line in lines:
            print(f"   {line}")
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
