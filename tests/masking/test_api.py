"""Our own-registry API on every ansible-core version: results, trackers, failure closed."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

import ansible_accel
from ansible_accel import masking

from ._helpers import CASES, PLACEHOLDER, core_secrets, needs_222


def test_register_returns_value_and_strips():
    masker = masking.SecretMasker()
    value = "  hunter2\n"
    assert masker.register_secret_text(value) is value
    assert masker.mask_string("pw=hunter2;") == "pw=$REDACTED$;"
    assert masker.mask_string("  hunter2\n") == "  $REDACTED$\n"


def test_unchanged_text_is_the_same_object():
    masker = masking.SecretMasker()
    text = "nothing secret here" * 3
    assert masker.mask_string(text) is text
    masker.register_secret_text("secret-value")
    assert masker.mask_string(text) is text
    assert masker.mask_string("") == ""


def test_str_subclass_and_bytes():
    class Text(str):
        pass

    masker = masking.SecretMasker()
    masker.register_secret_text("abcd")
    unchanged = Text("xyz")
    assert masker.mask_string(unchanged) is unchanged
    masked = masker.mask_string(Text("xabcdx"))
    assert type(masked) is str and masked == "x$REDACTED$x"
    assert masker.mask_string(b"abcd") == b"abcd"


def test_failure_is_closed_and_carries_nothing():
    masker = masking.SecretMasker()
    masker.register_secret_text("abcd")
    with pytest.raises(masking.AnsibleSecretMaskError, match="^secret masking failed$") as info:
        masker.mask_string("abcd", mask_placeholder=7)  # type: ignore[arg-type]
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert "abcd" not in repr(info.value.args)
    # a placeholder that is not used is not an error, as in 2.22
    assert masker.mask_string("none here", mask_placeholder=7) == "none here"  # type: ignore[arg-type]
    with pytest.raises(masking.AnsibleSecretMaskError) as info:
        masker.mask_string(12345)  # type: ignore[arg-type]
    assert info.value.__context__ is None


def test_mask_object_failure_is_closed():
    masker = masking.SecretMasker()
    masker.register_secret_text("abcd")

    class Exploding(dict):
        def items(self):
            raise ValueError("abcd leaked")

    with pytest.raises(masking.AnsibleSecretMaskError) as info:
        masking._mask_object_with(masker, [Exploding(a=1)], "*", None)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_mask_object_observable_details():
    masker = masking.SecretMasker()
    masker.register_secret_texts(["abcd", "123"])
    untouched = {"a": ["x", 1, 2.5, None, True, b"abcd", bytearray(b"abcd")]}
    assert masking._mask_object_with(masker, untouched, "*", None) is untouched
    result = masking._mask_object_with(
        masker,
        {"k abcd": 1, "k *": 2, "k * (2)": 3, "n": 123, "f": 1.123, "t": ("abcd", "x"), "s": {"abcd"},
         "stdout": "a\nabcd", "stdout_lines": ["a", "abcd"], "stderr": "abcd", "stderr_lines": ["edited"]},
        "*",
        {"stdout": "stdout_lines", "stderr": "stderr_lines"},
    )
    assert list(result)[:4] == ["k *", "k * (2)", "k * (2) (2)", "n"]
    assert result["n"] == "*" and result["f"] == "1.*" and result["t"] == ["*", "x"] and result["s"] == {"*"}
    assert result["stdout_lines"] == ["a", "*"] and result["stderr_lines"] == ["edited"]


def test_trackers_flush_and_unregister():
    masker = masking.SecretMasker()
    masker.register_secret_text("old")
    tracker = masker.track_new_secrets()
    masker.register_secret_texts(["new", " new ", "old", "\n"])
    assert tracker.flush() == frozenset({"new"})
    assert tracker.flush() == frozenset()
    tracker.unregister()
    masker.register_secret_text("later")
    assert tracker.flush() == frozenset()


def test_a_bad_item_keeps_what_came_before():
    masker = masking.SecretMasker()
    tracker = masker.track_new_secrets()
    with pytest.raises(AttributeError):
        masker.register_secret_texts(["first", 5])  # type: ignore[list-item]
    assert masker.mask_string("first") == "$REDACTED$"
    assert tracker.flush() == frozenset()


def test_matcher_interface():
    matcher = masking.SecretMatcher()
    for word in ("0000", "00", "\ud83d"):
        matcher.add(word)
    assert matcher.spans("a000\ud83d") == [(1, 3), (2, 4), (4, 5)]
    assert matcher.spans("😀") == []


@pytest.mark.parametrize("case", CASES[:12], ids=[c["name"] for c in CASES[:12]])
def test_module_functions_on_the_shared_registry(case):
    for secret in case["secrets"]:
        masking.register_secret(secret)
    assert masking.mask_secrets(case["input"], mask_placeholder=PLACEHOLDER) == case["expected"]


def test_module_functions_share_ansible_core_registry_on_2_22():
    masking.register_secrets(["shared-registry-secret"])
    masked = masking.mask_secrets("x shared-registry-secret")
    assert masked == "x $REDACTED$"
    try:
        _secrets, _ = core_secrets()
    except ImportError:
        return
    if hasattr(_secrets, "_secret_masker"):
        assert "shared-registry-secret" in _secrets._secret_masker._secrets


def test_threads_get_consistent_results():
    masker = masking.SecretMasker()
    errors = []

    def work(n):
        try:
            for i in range(200):
                secret = f"thread{n}-secret{i}"
                masker.register_secret_text(secret)
                if masker.mask_string(f"<{secret}>") != "<$REDACTED$>":
                    errors.append(secret)
        except Exception as ex:  # noqa: BLE001
            errors.append(repr(ex))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    big = " ".join(f"thread{n}-secret{i}" for n in range(4) for i in range(200)) * 100
    assert set(masker.mask_string(big, mask_placeholder="#").split()) == {"#"}


def _cpu_beside_a_long_mask(masker, text):
    """(CPU this thread's loop used while another thread masked ``text``, the CPU that mask
    took): with the GIL held through the scan, this thread could run nothing meanwhile.  CPU
    time, not wall time: on a loaded machine either thread may wait for a core anyway."""
    go, timing = threading.Event(), []
    beside = time.pthread_getcpuclockid(threading.get_ident())

    def mask():
        go.wait()
        begin, other = time.thread_time(), time.clock_gettime(beside)
        for _ in range(10):
            masker.mask_string(text, acquire_lock=False)
        timing.append((time.clock_gettime(beside) - other, time.thread_time() - begin))

    thread = threading.Thread(target=mask)
    thread.start()
    go.set()
    while thread.is_alive():
        pass
    thread.join()
    return timing[0]


def test_long_scans_release_the_gil():
    """Another thread keeps running while a long text is scanned: with the GIL held it would
    get no CPU for the whole scan.  (Tried a few times.)"""
    masker = masking.SecretMasker()
    masker.register_secret_texts([f"secret-{i}-value" for i in range(100)])
    text = "an ordinary line of log output, nothing secret in it\n" * 600_000
    masker.mask_string(text)  # builds whatever the first search builds
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        results = [_cpu_beside_a_long_mask(masker, text) for _ in range(3)]
    finally:
        sys.setswitchinterval(interval)
    assert any(beside > scan / 4 for beside, scan in results), results


def _fork_while_registering(masker, register, mask):
    """Fork while another thread registers and masks in a loop; the child must work."""
    stop = threading.Event()

    def busy():
        i = 0
        while not stop.is_set():
            register(f"busy-{i}")
            mask("x busy-1 " * 2000)
            i += 1

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    try:
        for _ in range(5):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    register("child-secret")
                    if mask("a child-secret b busy-0") == "a $REDACTED$ b $REDACTED$":
                        code = 0
                finally:
                    os._exit(code)
            deadline_ok = _wait_child(pid, 30)
            assert deadline_ok == 0
    finally:
        stop.set()
        thread.join(30)


def _wait_child(pid, timeout):
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "timed out (deadlock in the child)"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_registers_own_masker():
    masker = masking.SecretMasker()
    masker.register_secret_text("busy-0")
    _fork_while_registering(masker, masker.register_secret_text, masker.mask_string)


@needs_222
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_registers_installed(accel):
    from ansible.module_utils.secrets import mask_secrets, register_secret

    assert accel.status()["masking"]["active"]
    register_secret("busy-0")
    _fork_while_registering(None, register_secret, mask_secrets)
