"""Switching the accelerator on and off: install/uninstall/status, the CLI, ANSIBLE_ACCEL,
ANSIBLE_ACCEL_STATS, and the patch mechanism itself.  Runs against the installed
ansible-core, whatever paths are active in this build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import ansible_accel
import pytest
from ansible_accel import _activation, _counters

BIN = os.path.dirname(sys.executable)
DEMO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo")
ISSUE_PATHS = ("finder", "payload", "argspec", "masking", "no_log")


@pytest.fixture(autouse=True)
def clean_state(monkeypatch):
    """Each test starts and ends with the accelerator off and no stats file requested."""
    monkeypatch.delenv("ANSIBLE_ACCEL", raising=False)
    monkeypatch.delenv("ANSIBLE_ACCEL_STATS", raising=False)
    ansible_accel.uninstall()
    yield
    ansible_accel.uninstall()


def run(command: list[str], **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environment.update(env)
    return subprocess.run(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )


def raw(owner, attr):
    return vars(owner).get(attr, _activation._MISSING)


def patched_attributes() -> list[tuple[object, str]]:
    return [(item.owner, item.attr) for state in _activation._paths.values() for item in state.applied]


# --- install / uninstall / status ------------------------------------------------------------


def test_install_is_idempotent():
    first = ansible_accel.install()
    applied = {path: list(state.applied) for path, state in _activation._paths.items()}
    values = [getattr(owner, attr) for owner, attr in patched_attributes()]
    second = ansible_accel.install()
    assert first["installed"] and second["installed"]
    assert {p: first[p]["active"] for p in _activation.PATH_MODULES} == {
        p: second[p]["active"] for p in _activation.PATH_MODULES
    }
    assert {path: list(state.applied) for path, state in _activation._paths.items()} == applied
    assert [getattr(owner, attr) for owner, attr in patched_attributes()] == values  # not patched twice


def test_uninstall_restores_every_patched_attribute_identically():
    # Learn which attributes this build patches, then take their raw values while off.
    ansible_accel.install()
    targets = patched_attributes()
    ansible_accel.uninstall()
    before = [raw(owner, attr) for owner, attr in targets]

    ansible_accel.install()
    assert patched_attributes() == targets
    for (owner, attr), original in zip(targets, before):
        assert raw(owner, attr) is not original, f"{owner!r}.{attr} was not patched"
    report = ansible_accel.uninstall()
    for (owner, attr), original in zip(targets, before):
        assert raw(owner, attr) is original, f"{owner!r}.{attr} is not the original after uninstall()"
    assert report["installed"] is False
    assert all(not report[p]["active"] for p in _activation.PATH_MODULES)
    assert patched_attributes() == []


def test_uninstall_is_idempotent_and_safe_when_never_installed():
    first = ansible_accel.uninstall()
    second = ansible_accel.uninstall()
    assert first == second
    assert first["installed"] is False


def test_status_shape():
    for report in (ansible_accel.status(), ansible_accel.install()):
        assert isinstance(report["ansible_core"], str)
        assert report["supported"] is True
        assert isinstance(report["installed"], bool)
        for path in ISSUE_PATHS + tuple(_activation.PATH_MODULES):
            info = report[path]
            assert isinstance(info["active"], bool)
            assert isinstance(info["native"], int)
            assert isinstance(info["fallback"], dict)
            assert all(isinstance(k, str) and isinstance(v, int) for k, v in info["fallback"].items())
            # inactive paths say why; active ones have no reason
            assert (info["reason"] is None) == info["active"]
            assert info["active"] or (isinstance(info["reason"], str) and info["reason"])
    json.dumps(report)  # JSON-ready
    assert report["installed"] is True and report["reason"] is None
    from ansible.release import __version__

    assert report["ansible_core"] == __version__


def test_counters_show_in_status():
    ansible_accel.install()
    before = ansible_accel.status()["no_log"]
    _counters.native("no_log", 3)
    _counters.fallback("no_log", "test reason")
    after = ansible_accel.status()["no_log"]
    assert after["native"] == before["native"] + 3
    assert after["fallback"].get("test reason", 0) == before["fallback"].get("test reason", 0) + 1


# --- the patch mechanism on throwaway objects ------------------------------------------------


class _Base:
    inherited = "base value"

    def method(self):
        return "base method"


class _Child(_Base):
    own = "child value"
    static = staticmethod(lambda: "static")
    klass = classmethod(lambda cls: cls.__name__)


@pytest.mark.parametrize(
    "owner, attr",
    [
        pytest.param(_Child, "own", id="class-own"),
        pytest.param(_Child, "inherited", id="class-inherited"),
        pytest.param(_Child, "method", id="class-inherited-method"),
        pytest.param(_Child, "static", id="class-staticmethod"),
        pytest.param(_Child, "klass", id="class-classmethod"),
        pytest.param(_Child, "absent", id="class-missing"),
        pytest.param(types.SimpleNamespace(value=1), "value", id="object-own"),
        pytest.param(types.ModuleType("throwaway_module"), "absent", id="module-missing"),
    ],
)
def test_apply_and_revert_restore_raw_objects(owner, attr):
    own_before = attr in vars(owner)
    raw_before = raw(owner, attr)
    visible_before = getattr(owner, attr, None)
    replacement = object()

    applied = _activation._apply(_activation.Patch(owner, attr, replacement))
    assert raw(owner, attr) is replacement and getattr(owner, attr) is replacement
    if not own_before and isinstance(owner, type) and hasattr(owner.__mro__[1], attr):
        assert getattr(owner.__mro__[1], attr, None) is not replacement  # the base is untouched

    _activation._revert(applied)
    assert (attr in vars(owner)) is own_before  # an inherited attribute is not copied down
    assert raw(owner, attr) is raw_before  # the raw descriptor, not the bound/unwrapped one
    if own_before or hasattr(owner, attr):
        assert getattr(owner, attr) == visible_before or getattr(owner, attr) is visible_before


def test_staticmethod_and_classmethod_behave_after_revert():
    for attr in ("static", "klass"):
        _activation._revert(_activation._apply(_activation.Patch(_Child, attr, None)))
    assert _Child.static() == "static"
    assert _Child.klass() == "_Child"
    assert _Child().method() == "base method"


# --- the whole mechanism with a throwaway integration on real ansible-core objects -----------


@pytest.fixture
def throwaway_integration(monkeypatch):
    """Every path redirected: "argspec" to an integration patching three real ansible-core
    attributes (a module function, an own class attribute, an inherited class attribute),
    the others to an integration that is unavailable."""
    from ansible.module_utils import errors
    from ansible.module_utils.common import arg_spec, validation

    calls = []
    original_check = validation.check_type_bool

    def check_type_bool(value):
        _counters.native("argspec")
        return original_check(value)

    fake = types.ModuleType("ansible_accel._integrations._throwaway")
    fake.plan = lambda: [
        _activation.Patch(validation, "check_type_bool", check_type_bool),
        _activation.Patch(arg_spec.ArgumentSpecValidator, "validate", arg_spec.ArgumentSpecValidator.validate),
        _activation.Patch(errors.ArgumentTypeError, "msg", property(lambda self: "patched")),
    ]
    fake.after_install = lambda: calls.append("after_install")
    fake.before_uninstall = lambda: calls.append("before_uninstall")
    off = types.ModuleType("ansible_accel._integrations._throwaway_off")

    def unavailable():
        raise _activation.Unavailable("switched off for this test")

    off.plan = unavailable
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setitem(sys.modules, off.__name__, off)
    for path in _activation.PATH_MODULES:
        monkeypatch.setitem(_activation.PATH_MODULES, path, "_throwaway" if path == "argspec" else "_throwaway_off")
    targets = [
        (validation, "check_type_bool"),
        (arg_spec.ArgumentSpecValidator, "validate"),
        (errors.ArgumentTypeError, "msg"),
    ]
    return calls, targets


def test_throwaway_integration_round_trip(throwaway_integration):
    from ansible.module_utils import errors
    from ansible.module_utils.common import validation

    calls, targets = throwaway_integration
    before = [raw(owner, attr) for owner, attr in targets]
    assert "msg" not in vars(errors.ArgumentTypeError)  # inherited from AnsibleValidationError

    report = ansible_accel.install()
    assert report["argspec"]["active"] and report["argspec"]["reason"] is None
    assert not report["finder"]["active"] and report["finder"]["reason"] == "switched off for this test"
    assert calls == ["after_install"]
    native = report["argspec"]["native"]
    assert validation.check_type_bool("yes") is True
    assert ansible_accel.status()["argspec"]["native"] == native + 1
    assert errors.ArgumentTypeError("x").msg == "patched"

    ansible_accel.uninstall()
    assert calls == ["after_install", "before_uninstall"]
    for (owner, attr), original in zip(targets, before):
        assert raw(owner, attr) is original
    assert "msg" not in vars(errors.ArgumentTypeError)
    assert errors.ArgumentTypeError("x").msg == "x"


def test_failing_integration_is_reported_and_leaves_nothing_patched(monkeypatch):
    from ansible.module_utils.common import validation

    original = raw(validation, "check_type_bool")
    broken = types.ModuleType("ansible_accel._integrations._broken")
    broken.plan = lambda: [_activation.Patch(validation, "check_type_bool", len)]

    def explode():
        raise RuntimeError("boom")

    broken.after_install = explode
    monkeypatch.setitem(sys.modules, broken.__name__, broken)
    monkeypatch.setitem(_activation.PATH_MODULES, "argspec", "_broken")
    report = ansible_accel.install()
    assert report["installed"] is True
    assert report["argspec"]["active"] is False
    assert report["argspec"]["reason"] == "failed to switch on: RuntimeError: boom"
    assert raw(validation, "check_type_bool") is original


def test_two_paths_patching_one_attribute_unwind_in_order(monkeypatch):
    from ansible.module_utils.common import validation

    original = raw(validation, "check_type_bool")
    first, second = (types.ModuleType(f"ansible_accel._integrations._layer{i}") for i in (1, 2))
    first.plan = lambda: [_activation.Patch(validation, "check_type_bool", "first")]
    second.plan = lambda: [_activation.Patch(validation, "check_type_bool", "second")]
    for module in (first, second):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(_activation.PATH_MODULES, "finder", "_layer1")
    monkeypatch.setitem(_activation.PATH_MODULES, "bytecode", "_layer2")
    ansible_accel.install()
    assert validation.check_type_bool == "second"
    ansible_accel.uninstall()
    assert raw(validation, "check_type_bool") is original


# --- versions and ANSIBLE_ACCEL=0 ------------------------------------------------------------


@pytest.mark.parametrize(
    "version",
    ["2.19.0", "2.19.14", "2.19.0b1", "2.19.1rc1", "2.20.0", "2.20.4", "2.21.5", "2.21.0rc2",
     "2.22.0rc1", "2.22.0b3", "2.22.0a1", "2.22.0.dev0", "2.19.3.post1"],
)  # fmt: skip
def test_supported_versions(version):
    assert _activation.version_support(version) is None


@pytest.mark.parametrize(
    "version",
    ["2.18.9", "2.17.0", "2.22.0", "2.22.1", "2.22.1rc1", "2.23.0", "2.23.0.dev0", "3.0.0", "2.19",
     "2.19.x", "2.19.0-foo", "2.190.0", "12.19.0", "", "not a version"],
)  # fmt: skip
def test_unsupported_versions_say_why(version):
    reason = _activation.version_support(version)
    assert reason == f"ansible-core {version} is not supported (supported: {_activation.SUPPORTED_TEXT})"


def test_unimportable_core_says_why():
    assert _activation.version_support(None) == "ansible-core is not importable"


def test_unsupported_version_patches_nothing(monkeypatch, throwaway_integration):
    monkeypatch.setattr(_activation, "core_version", lambda: "2.18.3")
    calls, targets = throwaway_integration
    before = [raw(owner, attr) for owner, attr in targets]
    report = ansible_accel.install()
    assert report["installed"] is False
    assert report["supported"] is False
    assert report["reason"] == f"ansible-core 2.18.3 is not supported (supported: {_activation.SUPPORTED_TEXT})"
    assert all(
        report[p]["active"] is False and report[p]["reason"] == report["reason"] for p in _activation.PATH_MODULES
    )
    assert calls == []
    assert [raw(owner, attr) for owner, attr in targets] == before


_STATUS_SCRIPT = "import json, ansible_accel; print(json.dumps(ansible_accel.install()))"


@pytest.mark.parametrize("value", ["0", "false", "off", "no"])
def test_ansible_accel_0_disables_everything(value):
    completed = run([sys.executable, "-c", _STATUS_SCRIPT], ANSIBLE_ACCEL=value)
    assert completed.returncode == 0, completed.stdout
    report = json.loads(completed.stdout)
    assert report["installed"] is False
    assert report["reason"] == f"disabled by ANSIBLE_ACCEL={value}"
    for path in _activation.PATH_MODULES:
        assert report[path]["active"] is False
        assert report[path]["reason"] == f"disabled by ANSIBLE_ACCEL={value}"


def test_ansible_accel_1_does_not_disable():
    completed = run([sys.executable, "-c", _STATUS_SCRIPT], ANSIBLE_ACCEL="1")
    assert json.loads(completed.stdout)["installed"] is True


# --- the command-line tool -------------------------------------------------------------------


def test_cli_status_lists_version_and_paths():
    completed = run([os.path.join(BIN, "ansible-accel"), "status"])
    assert completed.returncode == 0, completed.stdout
    from ansible.release import __version__

    assert f"ansible-core  {__version__} (supported)" in completed.stdout
    assert "installed     yes" in completed.stdout
    lines = completed.stdout.splitlines()
    for path in _activation.PATH_MODULES:
        assert any(line.split()[:1] == [path] for line in lines), path


def test_cli_status_json_matches_status():
    completed = run([os.path.join(BIN, "ansible-accel"), "status", "--json"])
    report = json.loads(completed.stdout)
    in_process = ansible_accel.install()
    assert set(report) == set(in_process)
    for path in _activation.PATH_MODULES:
        assert report[path]["active"] == in_process[path]["active"]
        assert report[path]["reason"] == in_process[path]["reason"]


def test_cli_status_when_disabled():
    completed = run([os.path.join(BIN, "ansible-accel"), "status"], ANSIBLE_ACCEL="0")
    assert completed.returncode == 0
    assert "installed     no (disabled by ANSIBLE_ACCEL=0)" in completed.stdout


def test_cli_config_points_at_the_callback():
    completed = run([os.path.join(BIN, "ansible-accel"), "config"])
    assert completed.returncode == 0
    settings = dict(
        line.split(" = ", 1) for line in completed.stdout.splitlines() if " = " in line and not line.startswith("#")
    )
    assert settings["callbacks_enabled"] == "ansible_accel"
    assert os.path.isfile(os.path.join(settings["callback_plugins"], "ansible_accel.py"))
    assert "[defaults]" in completed.stdout
    assert f"#   ANSIBLE_CALLBACK_PLUGINS={settings['callback_plugins']}" in completed.stdout
    assert "#   ANSIBLE_CALLBACKS_ENABLED=ansible_accel" in completed.stdout


def test_cli_without_command_is_a_usage_error():
    completed = run([os.path.join(BIN, "ansible-accel")])
    assert completed.returncode == 2
    assert "usage:" in completed.stdout


FAILING_PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.fail:
        msg: this playbook fails on purpose
"""
GOOD_PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: fine
"""
BROKEN_PLAYBOOK = "- hosts: localhost\n  tasks: [\n"


@pytest.mark.parametrize(
    "text, expected",
    [pytest.param(GOOD_PLAYBOOK, 0, id="ok"), pytest.param(FAILING_PLAYBOOK, 2, id="task-fails"),
     pytest.param(BROKEN_PLAYBOOK, 4, id="parse-error")],
)  # fmt: skip
def test_wrapper_passes_the_exit_code_through(tmp_path, text, expected):
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(text)
    args = ["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook)]
    plain = run([os.path.join(BIN, args[0]), *args[1:]])
    wrapped = run([os.path.join(BIN, "ansible-accel"), *args])
    assert plain.returncode == expected, plain.stdout
    assert wrapped.returncode == expected, wrapped.stdout


@pytest.mark.parametrize("command", ["ansible-playbook", "ansible", "ansible-console"])
def test_wrapper_version_is_the_commands_own(command):
    wrapped = run([os.path.join(BIN, "ansible-accel"), command, "--version"])
    plain = run([os.path.join(BIN, command), "--version"])
    assert wrapped.returncode == 0
    assert f"{command} [core " in wrapped.stdout
    assert wrapped.stdout == plain.stdout  # including "executable location"


def test_wrapper_runs_adhoc_with_its_exit_code(tmp_path):
    command = ["ansible", "all", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.fail", "-a", "msg=no"]
    assert run([os.path.join(BIN, "ansible-accel"), *command]).returncode == 2
    command[-4:] = ["-m", "ansible.builtin.debug", "-a", "msg=yes"]
    assert run([os.path.join(BIN, "ansible-accel"), *command]).returncode == 0


# --- ANSIBLE_ACCEL_STATS ---------------------------------------------------------------------


def _probe_run(tmp_path, *extra_args: str, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    stats = tmp_path / "stats.json"
    config = tmp_path / "empty.cfg"
    config.write_text("")
    completed = run(
        [os.path.join(BIN, "ansible-accel"), "ansible-playbook", "-i", os.path.join(DEMO, "inventory.ini"),
         "--limit", "host01:host02:host03", os.path.join(DEMO, "route", "route.yml"), *extra_args],
        ANSIBLE_ACCEL_STATS=str(stats), ANSIBLE_CONFIG=str(config), **env,
    )  # fmt: skip
    assert stats.exists(), completed.stdout
    return completed, json.loads(stats.read_text())


def test_stats_file_adds_up_controller_and_workers(tmp_path):
    completed, stats = _probe_run(tmp_path, "-e", "expect_installed=true")
    assert completed.returncode == 0, completed.stdout
    assert stats["installed"] is True
    assert stats["ansible_core"] == ansible_accel.status()["ansible_core"]
    # 3 hosts x 2 probe tasks, each in its own forked worker, each counted once.
    assert stats["run"]["paths"]["finder"]["events"]["route_probe"] == 6
    assert stats["run"]["processes"] == 1 + 6
    for path in _activation.PATH_MODULES:
        assert set(stats[path]) >= {"active", "reason", "native", "fallback"}
        assert set(stats["run"]["paths"][path]) >= {"native", "fallback"}


def test_stats_file_written_when_the_playbook_fails(tmp_path):
    completed, stats = _probe_run(tmp_path, "-e", "expect_installed=false")
    assert completed.returncode == 2  # every probe fails: the accelerator is on
    assert stats["installed"] is True
    assert stats["run"]["paths"]["finder"]["events"]["route_probe"] == 3  # first task, then hosts are failed


def test_stats_file_says_why_when_disabled(tmp_path):
    completed, stats = _probe_run(tmp_path, "-e", "expect_installed=false", ANSIBLE_ACCEL="0")
    assert completed.returncode == 0, completed.stdout
    assert stats["installed"] is False
    assert stats["reason"] == "disabled by ANSIBLE_ACCEL=0"
    assert stats["run"]["processes"] == 1  # nothing hooked in the workers


_HOOK_SCRIPT = """
import json, ansible_accel
from ansible.executor.task_queue_manager import FinalQueue
original = vars(FinalQueue)["send_task_result"]
ansible_accel.install()
hooked = vars(FinalQueue)["send_task_result"]
ansible_accel.uninstall()
restored = vars(FinalQueue)["send_task_result"]
ansible_accel.install()
print(json.dumps({"hooked": hooked is not original and hooked.__wrapped__ is original,
                  "restored": restored is original,
                  "rehooked": vars(FinalQueue)["send_task_result"] is not original}))
"""


def test_stats_worker_hook_is_reverted_by_uninstall(tmp_path):
    """With ANSIBLE_ACCEL_STATS, workers report before sending their result; uninstall()
    puts ansible-core's own method back like any other patch."""
    completed = run([sys.executable, "-c", _HOOK_SCRIPT], ANSIBLE_ACCEL_STATS=str(tmp_path / "stats.json"))
    assert completed.returncode == 0, completed.stdout
    assert json.loads(completed.stdout) == {"hooked": True, "restored": True, "rehooked": True}
    assert json.loads((tmp_path / "stats.json").read_text())["installed"] is True


def test_no_stats_hooks_without_the_variable():
    script = (
        "import ansible_accel; from ansible_accel import _stats; ansible_accel.install();"
        "print(_stats._owner_pid, _stats._workers_hooked, len(_stats._send_hook))"
    )
    completed = run([sys.executable, "-c", script])
    assert completed.stdout.split() == ["None", "False", "0"]


@pytest.mark.parametrize("version, word", [
    ("2.19.14", "supported"), ("2.21.5", "supported"), ("2.22.0rc1", "supported"),
    ("2.20.4", "accepted, untested"), ("2.18.1", "not supported"), ("2.22.1", "not supported"), (None, "not supported"),
])
def test_support_word(version, word):
    assert _activation.support_word(version) == word
