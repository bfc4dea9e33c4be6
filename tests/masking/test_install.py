"""Switching the masking path on and off inside ansible-core 2.22, and its counters."""

from __future__ import annotations

import pytest

import ansible_accel
from ansible_accel import masking

from ._helpers import IS_222, core_secrets, needs_222


@pytest.mark.skipif(IS_222, reason="on 2.22 the path is available")
def test_unavailable_before_2_22_with_reason(accel):
    state = accel.status()["masking"]
    assert state["active"] is False
    assert "2.22" in state["reason"] and "no_log" in state["reason"]


@needs_222
def test_install_keeps_earlier_secrets_and_uninstall_keeps_later_ones():
    from ansible.module_utils.secrets import mask_secrets, register_secret

    _secrets, _ = core_secrets()
    masker = _secrets._secret_masker
    original_matcher = masker._matcher
    register_secret("registered-before-install")
    ansible_accel.install()
    try:
        assert type(masker._matcher) is masking.SecretMatcher
        register_secret("registered-while-on")
        before = ansible_accel.status()["masking"]["native"]
        assert mask_secrets("a registered-before-install b registered-while-on c") == "a $REDACTED$ b $REDACTED$ c"
        assert ansible_accel.status()["masking"]["native"] == before + 1
    finally:
        ansible_accel.uninstall()
    assert masker._matcher is original_matcher
    assert _secrets.SecretMasker.__dict__["mask_string"].__module__ == "ansible.module_utils._internal._secrets"
    # ansible-core's own code now masks everything registered while the accelerator was on
    assert mask_secrets("registered-while-on") == "$REDACTED$"
    assert original_matcher.spans("x registered-while-on") == [(2, 21)]


@needs_222
def test_trackers_keep_working_across_install():
    from ansible.module_utils.secrets import register_secret

    _secrets, _ = core_secrets()
    tracker = _secrets._secret_masker.track_new_secrets()
    try:
        ansible_accel.install()
        register_secret("tracked-while-on")
        ansible_accel.uninstall()
        register_secret("tracked-after")
        assert {"tracked-while-on", "tracked-after"} <= tracker.flush()
    finally:
        tracker.unregister()
        ansible_accel.uninstall()


@needs_222
def test_mask_object_goes_native_wherever_used(accel):
    from ansible.executor import task_result
    from ansible.module_utils._internal import _secrets_object
    from ansible.module_utils.secrets import register_secret

    register_secret("result-secret")
    result = {"stdout": "one\nresult-secret", "stdout_lines": ["one", "result-secret"], "rc": 0}
    before = accel.status()["masking"]["native"]
    masked = task_result._secrets_object.mask_object(result, lines_keys={"stdout": "stdout_lines"})
    assert masked == {"stdout": "one\n$REDACTED$", "stdout_lines": ["one", "$REDACTED$"], "rc": 0}
    assert accel.status()["masking"]["native"] == before + 1
    assert _secrets_object.mask_object.__wrapped__ is not None
    nothing = {"rc": 0, "msg": "ok"}
    assert _secrets_object.mask_object(nothing) is nothing


@needs_222
def test_acquire_lock_false_under_held_lock(accel):
    from ansible.module_utils.secrets import register_secret

    _secrets, _ = core_secrets()
    masker = _secrets._secret_masker
    register_secret("lock-secret")
    with masker._lock:
        assert masker.mask_string("lock-secret", acquire_lock=False) == "$REDACTED$"
    assert not masker._lock.locked()


@needs_222
def test_other_masker_instances_keep_their_own_matcher(accel):
    _secrets, _ = core_secrets()
    other = _secrets.SecretMasker()
    other.register_secret_text("other-secret")
    fallbacks = accel.status()["masking"]["fallback"].get("masker without the native matcher", 0)
    assert other.mask_string("x other-secret") == "x $REDACTED$"
    assert accel.status()["masking"]["fallback"]["masker without the native matcher"] == fallbacks + 1


@needs_222
def test_display_and_module_args_go_native(accel):
    from ansible.module_utils.secrets import register_secret
    from ansible.utils.display import Display

    _secrets, _ = core_secrets()
    register_secret("display-secret")
    before = accel.status()["masking"]["native"]
    # Display masks every message through mask_secrets before writing it
    import io
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        Display().display("the display-secret here")
    assert "display-secret" not in out.getvalue() and "$REDACTED$" in out.getvalue()
    assert accel.status()["masking"]["native"] > before
    assert _secrets._secret_masker.secrets_in_json('{"a": "display-secret"}') == frozenset({"display-secret"})


@needs_222
def test_ansible_core_failure_class_is_raised(accel):
    _secrets, _ = core_secrets()
    from ansible.module_utils.secrets import register_secret

    register_secret("fail-secret")
    with pytest.raises(_secrets.AnsibleSecretMaskError, match="^secret masking failed$") as info:
        _secrets._secret_masker.mask_string("fail-secret", mask_placeholder=3)
    assert info.value.__cause__ is None and info.value.__context__ is None


@needs_222
def test_mask_object_calls_an_overridden_mask_string(accel, monkeypatch):
    """2.22's walk masks through masker.mask_string; one replaced on the instance is used."""
    _secrets, _secrets_object = core_secrets()
    private = _secrets.SecretMasker()
    private._matcher = masking.SecretMatcher()
    monkeypatch.setattr(_secrets_object, "_secret_masker", private)
    private.register_secret_text("hunter2secret")
    assert _secrets_object.mask_object(["x hunter2secret"]) == ["x $REDACTED$"]

    def boom(*args, **kwargs):
        raise ValueError("hunter2secret")

    monkeypatch.setattr(private, "mask_string", boom)
    with pytest.raises(_secrets.AnsibleSecretMaskError) as info:
        _secrets_object.mask_object(["hunter2secret"])
    assert "hunter2secret" not in str(info.value) and info.value.__cause__ is None


@needs_222
def test_playbook_run_masks_natively(tmp_path):
    """A real ansible-playbook run with the accelerator's callback: output masked, and the
    run's counters (controller and workers) show the masking went native, with no fallback."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    callbacks = pathlib.Path(ansible_accel.__file__).parent / "ansible_plugins" / "callback"
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\ncallback_plugins = {callbacks}\ncallbacks_enabled = ansible_accel\n")
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  vars:\n    pw: \"{{ 'hunter2-topsecret' | register_secret }}\"\n"
        "  tasks:\n    - command: echo \"the password is {{ pw }} ok\"\n      register: out\n"
        "    - debug: var=out.stdout\n"
    )
    stats = tmp_path / "stats.json"
    env = {**os.environ, "ANSIBLE_ACCEL_STATS": str(stats), "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}
    run = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "play.yml"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "hunter2-topsecret" not in run.stdout
    assert '"out.stdout": "the password is $REDACTED$ ok"' in run.stdout
    counters = json.loads(stats.read_text())["masking"]
    assert counters["active"] and counters["native"] > 5 and counters["fallback"] == {}
