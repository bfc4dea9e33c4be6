"""``ansible_accel._fork``: the package's one registration with ``os.register_at_fork``.

Each scenario runs in a fresh interpreter that really forks, twice: once with its callbacks
registered through ``_fork.register`` and once with the same callbacks registered with
``os.register_at_fork`` directly, and the two must tell the same story (which callback ran
where, in which order, what ``sys.unraisablehook`` was given, what the default hook printed).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from ansible_accel import _fork

PACKAGE = pathlib.Path(_fork.__file__).parent

# Run as ``python -c SCRIPT MODE`` (MODE ``registry`` or ``os``); prints one JSON line: what
# ran in the parent, what ran in the child (sent up a pipe), what the hook was given and what
# the default hook prints for it.
SCENARIO = textwrap.dedent('''
    import io, json, os, re, sys

    from ansible_accel import _fork

    register = _fork.register if sys.argv[1] == "registry" else os.register_at_fork
    ran, hooked = [], []

    def hook(args):
        frame = args.exc_traceback.tb_frame.f_code.co_name if args.exc_traceback else None
        stderr, sys.stderr = sys.stderr, io.StringIO()
        try:
            sys.__unraisablehook__(args)  # what the default hook prints, addresses left out
            printed = re.sub(r"0x[0-9a-f]+", "0x...", sys.stderr.getvalue())
        finally:
            sys.stderr = stderr
        hooked.append([type(args).__name__, args.exc_type.__name__, str(args.exc_value), args.err_msg,
                       getattr(args.object, "__name__", None), frame, printed])

    sys.unraisablehook = hook

    def recorder(label):
        def callback():
            ran.append(label)
        callback.__name__ = label.replace(" ", "_")
        return callback

    def raising(label):
        def callback():
            ran.append(label)
            raise ValueError(label)
        callback.__name__ = label.replace(" ", "_")
        return callback

    def late_registration():
        ran.append("before B registers D")
        register(before=recorder("before D"), after_in_child=recorder("child D"))

    register(before=recorder("before A"), after_in_parent=recorder("parent A"), after_in_child=recorder("child A"))
    register(before=late_registration)
    if os.environ.get("RAISING"):
        register(before=raising("before R"), after_in_parent=raising("parent R"), after_in_child=raising("child R"))
    register(after_in_child=recorder("child C"))
    register(before=recorder("before E"), after_in_parent=recorder("parent E"))

    def fork():
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write_end, json.dumps({"ran": ran, "hooked": hooked}).encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            child = json.loads(pipe.read())
        _, status = os.waitpid(pid, 0)
        return child, os.waitstatus_to_exitcode(status)

    forks = []
    for _ in range(2):  # the second fork also runs what the first one's callbacks registered
        ran.clear(); hooked.clear()
        child, code = fork()
        forks.append({"parent": list(ran), "parent_hooked": list(hooked), "child": child, "exit": code})
    print(json.dumps(forks))
''')


def run_scenario(mode: str, **env: str) -> list:
    result = subprocess.run(
        [sys.executable, "-c", SCENARIO, mode], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_callbacks_run_in_cpythons_order_around_a_real_fork():
    forks = run_scenario("registry")
    expected_first = {
        # before: the reverse of registration; after: registration order
        "parent": ["before E", "before B registers D", "before A", "parent A", "parent E"],
        "child": ["before E", "before B registers D", "before A", "child A", "child C", "child D"],
    }
    first = forks[0]
    assert first["parent"] == expected_first["parent"]
    assert first["child"]["ran"] == expected_first["child"]
    assert first["exit"] == 0
    # D was registered during the first fork's before phase: its before runs from the next fork on
    assert forks[1]["parent"][:2] == ["before D", "before E"]
    assert forks[1]["child"]["ran"][-2:] == ["child D", "child D"]  # B registered it again
    assert forks == run_scenario("os")


def test_a_raising_callback_is_reported_as_cpython_reports_it_and_the_others_still_run():
    forks = run_scenario("registry", RAISING="1")
    first = forks[0]
    assert first["parent"] == ["before E", "before R", "before B registers D", "before A", "parent A", "parent R", "parent E"]
    assert first["child"]["ran"] == ["before E", "before R", "before B registers D", "before A", "child A", "child R",
                                     "child C", "child D"]
    assert first["exit"] == 0
    reported = [report[:6] for report in first["parent_hooked"]]
    assert reported == [
        ["UnraisableHookArgs", "ValueError", "before R", None, "before_R", "callback"],
        ["UnraisableHookArgs", "ValueError", "parent R", None, "parent_R", "callback"],
    ]
    assert [report[:6] for report in first["child"]["hooked"]] == [
        reported[0],
        ["UnraisableHookArgs", "ValueError", "child R", None, "child_R", "callback"],
    ]
    printed = first["parent_hooked"][0][6]
    assert printed.startswith("Exception ignored in: <function raising.<locals>.callback at 0x...>\nTraceback")
    assert printed.endswith("ValueError: before R\n") and "_fork" not in printed  # the callback's frames only
    assert forks == run_scenario("os", RAISING="1")


@pytest.mark.parametrize("kwargs", [{}, {"before": 1}, {"after_in_parent": "x"}, {"after_in_child": 2.0}])
def test_wrong_arguments_are_refused_as_os_refuses_them(kwargs):
    with pytest.raises(TypeError) as ours:
        _fork.register(**kwargs)
    with pytest.raises(TypeError) as theirs:
        os.register_at_fork(**kwargs)
    assert str(ours.value) == str(theirs.value)


def test_the_package_registers_with_os_once_and_its_callbacks_in_import_order():
    script = textwrap.dedent('''
        import json, os, sys
        calls = []
        original = os.register_at_fork
        def spy(**kwargs):
            calls.append(sys._getframe(1).f_code.co_filename)
            return original(**kwargs)
        os.register_at_fork = spy
        import ansible_accel
        ansible_accel.install()
        from ansible_accel import _fork, masking
        masking.SecretMasker()
        name = lambda c: c.__module__ + "." + c.__qualname__
        print(json.dumps({
            "os": [c for c in calls if "ansible_accel" in c],
            "before": [name(c) for c in _fork._before],
            "after_in_parent": [name(c) for c in _fork._after_in_parent],
            "after_in_child": [name(c) for c in _fork._after_in_child],
        }))
    ''')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert [pathlib.Path(c).name for c in seen["os"]] == ["_fork.py"]
    assert seen["before"] == [
        "ansible_accel._integrations._finder_prewarm._before_fork",
        "ansible_accel.masking._ForkSafeLock._before_fork",
    ]
    assert seen["after_in_parent"] == ["ansible_accel.masking._ForkSafeLock._after_fork"]
    assert seen["after_in_child"] == [
        "ansible_accel._counters.reset",
        "ansible_accel.payload._renew_kept_lock",
        "ansible_accel._integrations._memo._after_fork_in_child",
        "ansible_accel._integrations._finder_scan._after_fork_in_child",
        "ansible_accel._bytecode._after_fork_in_child",
        "ansible_accel.masking._ForkSafeLock._after_fork",
    ]


def test_no_module_of_the_package_registers_with_os_itself():
    registering = sorted(
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if "register_at_fork(" in path.read_text()
    )
    assert registering == ["_fork.py"]
