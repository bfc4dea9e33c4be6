"""The execution environment example (``examples/execution-environment/``) as ansible-builder
writes its build context.

``ansible-builder create`` runs for real, from the test bed's packaging environment
(``.venv/packaging``, which ``make test-py`` sets up), on a copy of the example with a wheel in
its ``wheels/``.  The tests read what it wrote: the Containerfile installs ansible-core and
ansible-accel (pip finding the wheel through ``PIP_FIND_LINKS`` where requirements are resolved
and installed), puts the context's callback on ansible-core's default callback path and its
``ansible.cfg`` in ``/etc/ansible``, and sets nothing that would override a job's own settings.
Then the context's callback and the build's own check (its last ``RUN``) run here, with the
ansible-core of this interpreter, in the environment AWX gives a job: callback paths and
``ANSIBLE_CALLBACKS_ENABLED`` of its own, without ``ansible_accel``.  No image is built: that
needs a container engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import ansible_accel

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "execution-environment"
BUILDER = ROOT / ".venv" / "packaging" / "bin" / "ansible-builder"
DEFAULT_CALLBACK_PATH = "/usr/share/ansible/plugins/callback"
BIN = Path(sys.executable).parent

PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.command: echo image
      register: echoed
      changed_when: false
    - ansible.builtin.copy:
        dest: "{{ work }}/image.txt"
        content: "{{ echoed.stdout }}\\n"
    - ansible.builtin.stat:
        path: "{{ work }}/image.txt"
      register: written
    - ansible.builtin.assert:
        that: written.stat.size == 6
"""

# A callback of the job's own, as AWX enables its own with ANSIBLE_CALLBACKS_ENABLED: it must
# still run beside the image's.
JOB_CALLBACK = """\
import os
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "job_events"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["JOB_EVENTS_FILE"], "a") as handle:
            handle.write("stats\\n")
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(example copy, build context, Containerfile text) from a real ``ansible-builder create``."""
    if not BUILDER.is_file():
        pytest.fail(f"{BUILDER} is missing: make test-py sets up .venv/packaging with ansible-builder")
    work = tmp_path_factory.mktemp("ee")
    copy = work / "execution-environment"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("*.whl", "context"))
    wheel = copy / "wheels" / f"ansible_accel-{ansible_accel.__version__}-cp311-abi3-manylinux_2_17_x86_64.whl"
    wheel.write_bytes(b"stands in for the wheel: ansible-builder create only copies it")
    context = work / "context"
    completed = subprocess.run([str(BUILDER), "create", "-f", "execution-environment.yml", "-c", str(context)],
                               cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert completed.returncode == 0, completed.stdout
    files = [context / name for name in ("Containerfile", "Dockerfile") if (context / name).is_file()]
    assert files, f"no Containerfile in {sorted(p.name for p in context.iterdir())}"
    return copy, context, files[0].read_text()


def stages(containerfile: str) -> dict[str, list[str]]:
    """The Containerfile's instructions by stage name (``FROM x AS name``), continuations joined."""
    found: dict[str, list[str]] = {"": []}
    current = ""
    for line in containerfile.replace("\\\n", " ").splitlines():
        line = line.strip()
        match = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.I)
        if match:
            current = match.group(1)
            found[current] = []
        elif line and not line.startswith("#"):
            found[current].append(line)
    return found


def index_of(lines: list[str], pattern: str) -> int:
    hits = [n for n, line in enumerate(lines) if re.search(pattern, line)]
    assert hits, f"no line matching {pattern!r} in:\n" + "\n".join(lines)
    return hits[0]


def test_ansible_core_and_runner_installed(built):
    copy, _, containerfile = built
    definition = yaml.safe_load((copy / "execution-environment.yml").read_text())
    core = definition["dependencies"]["ansible_core"]["package_pip"]
    assert re.fullmatch(r"ansible-core==2\.\d+\.\d+", core), core
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="([^"]*)"', containerfile, re.M)
    assert refs and core in refs.group(1).split() and "ansible-runner" in refs.group(1).split()
    base = stages(containerfile)["base"]
    index_of(base, r"^RUN \$PYCMD -m pip install .*\$ANSIBLE_INSTALL_REFS")


def test_the_wheel_is_resolved_and_installed_from_the_context(built):
    copy, context, containerfile = built
    wheels = sorted(p.name for p in (copy / "wheels").glob("*.whl"))
    assert [p.name for p in (context / "_build" / "wheels").glob("*.whl")] == wheels
    assert (context / "_build" / "wheels" / wheels[0]).read_bytes() == (copy / "wheels" / wheels[0]).read_bytes()
    assert "ansible-accel" in (context / "_build" / "requirements.txt").read_text().split()
    by_stage = stages(containerfile)
    # Where pip resolves the requirements (builder) and where it installs them (final), the
    # wheels are in a directory that PIP_FIND_LINKS names, before pip runs.
    for stage, pip_step in (("builder", r"^RUN /output/scripts/assemble"),
                            ("final", r"^RUN /output/scripts/install-from-bindep")):
        lines = by_stage[stage]
        copied = index_of(lines, r"^COPY _build/wheels/ ")
        directory = lines[copied].split()[2].rstrip("/")
        links = index_of(lines, rf"^ARG PIP_FIND_LINKS={re.escape(directory)}/?$")
        assert copied < index_of(lines, pip_step) and links < index_of(lines, pip_step), stage
    assert "ENV PIP_FIND_LINKS" not in containerfile  # a build setting, not the image's


def test_the_callback_and_configuration_go_where_ansible_core_looks(built):
    _, context, containerfile = built
    final = stages(containerfile)["final"]
    installed = index_of(final, r"^RUN /output/scripts/install-from-bindep")
    callback = index_of(final, rf"^COPY _build/callback/ansible_accel\.py {DEFAULT_CALLBACK_PATH}/ansible_accel\.py$")
    config = index_of(final, r"^COPY _build/configs/ansible\.cfg /etc/ansible/ansible\.cfg$")
    check = index_of(final, r"^RUN .*ANSIBLE_ACCEL_STATS=")
    assert installed < callback < check and config < check
    assert (context / "_build" / "callback" / "ansible_accel.py").read_bytes() == \
        (EXAMPLE / "callback" / "ansible_accel.py").read_bytes()
    cfg = (context / "_build" / "configs" / "ansible.cfg").read_text()
    assert re.search(r"^bin_ansible_callbacks = True$", cfg, re.M)
    # Nothing the image sets overrides a job's or a project's callback settings.
    assert not re.search(r"^ENV .*ANSIBLE_CALLBACK", containerfile, re.M)


def job_environment(work: Path, callback_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a job as AWX builds it, here: callback paths and enabled callbacks of
    its own (``callback_dir`` standing in for the image's default callback path)."""
    job_dir = work / "job-callbacks"
    job_dir.mkdir(exist_ok=True)
    (job_dir / "job_events.py").write_text(JOB_CALLBACK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        HOME=str(work / "home"),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_CALLBACK_PLUGINS=f"{job_dir}{os.pathsep}{callback_dir}",
        ANSIBLE_CALLBACKS_ENABLED="job_events",
        JOB_EVENTS_FILE=str(work / "job-events.txt"),
        **extra,
    )
    return env


def run_playbook(work: Path, env: dict[str, str]) -> str:
    (work / "files").mkdir(exist_ok=True)
    playbook = work / "site.yml"
    playbook.write_text(PLAYBOOK)
    completed = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
                                "-e", f"work={work / 'files'}"], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert completed.returncode == 0, completed.stdout
    return completed.stdout[completed.stdout.index("PLAY RECAP"):]


def test_callback_switches_on_in_a_job_that_does_not_enable_it(built, tmp_path):
    _, context, _ = built
    callbacks = tmp_path / "share-callback"
    callbacks.mkdir()
    shutil.copy(context / "_build" / "callback" / "ansible_accel.py", callbacks)
    empty = tmp_path / "no-callbacks"
    empty.mkdir()

    off = tmp_path / "off"
    off.mkdir()
    recap_off = run_playbook(off, job_environment(off, empty))

    on = tmp_path / "on"
    on.mkdir()
    stats_file = on / "stats.json"
    recap_on = run_playbook(on, job_environment(on, callbacks, ANSIBLE_ACCEL_STATS=str(stats_file)))

    assert recap_on == recap_off
    assert stats_file.is_file(), "the accelerator was never switched on: no ANSIBLE_ACCEL_STATS file"
    for work in (off, on):
        assert (work / "job-events.txt").read_text() == "stats\n"  # the job's own callback ran
    stats = json.loads(stats_file.read_text())
    assert stats["installed"], stats
    native = {path: stats["run"]["paths"][path].get("native", 0) for path in ("finder", "payload")}
    assert all(native.values()), native


def test_the_builds_own_check_passes_only_with_the_accelerator_on(built, tmp_path):
    _, context, containerfile = built
    check = next(line for line in stages(containerfile)["final"] if "ANSIBLE_ACCEL_STATS=" in line)
    command = check.removeprefix("RUN ")
    callbacks = tmp_path / "share-callback"
    callbacks.mkdir()
    shutil.copy(context / "_build" / "callback" / "ansible_accel.py", callbacks)
    base = {"PYCMD": sys.executable, "TMPDIR": str(tmp_path),
            "ANSIBLE_CONFIG": str(context / "_build" / "configs" / "ansible.cfg")}

    def run(**extra: str) -> subprocess.CompletedProcess:
        # No ansible.cfg of the job's: the image's in /etc/ansible, here ANSIBLE_CONFIG.
        env = job_environment(tmp_path, callbacks, **base, **extra)
        del env["ANSIBLE_CALLBACKS_ENABLED"]
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    passed = run()
    assert passed.returncode == 0, passed.stdout
    assert not (tmp_path / "home" / ".ansible").exists()  # the check cleans up after itself
    failed = run(ANSIBLE_ACCEL="0")
    assert failed.returncode != 0 and "ansible-accel is not on: disabled by ANSIBLE_ACCEL=0" in failed.stdout, \
        failed.stdout



def _documentation(path: Path) -> dict:
    """The options of a plugin's DOCUMENTATION, read from its file as ansible-core reads it."""
    import ast

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            return yaml.safe_load(ast.literal_eval(node.value))["options"]
    raise AssertionError(f"no DOCUMENTATION in {path}")


def test_the_images_callback_has_the_package_callbacks_options():
    """The image's callback must document every option the package's callback reads (its
    set_options reads them through get_option, which knows only documented ones)."""
    from ansible_accel.ansible_plugins.callback import ansible_accel as package_callback

    assert _documentation(EXAMPLE / "callback" / "ansible_accel.py") == _documentation(Path(package_callback.__file__))
