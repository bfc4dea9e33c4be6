"""A module's AnsiBallZ script sent to a host's keeper by its parts (``_integrations/ssh_direct``
on the controller, ``_runner_remote`` on the host): the zip it carries in base64, its members
named by digest once the keeper holds them, rebuilt on the host byte for byte; a keeper that
does not hold a member named declines; a script without such a zip goes whole."""

from __future__ import annotations

import pytest

from ansible_accel import _runner_remote as keeper
from ansible_accel._integrations import ssh_direct

MODULES = ["command", "copy", "ping", "stat", "user"]


@pytest.fixture
def script(plugin_loader, tmp_path, monkeypatch):
    """``script(module, compression)``: the AnsiBallZ script ansible-core builds for it."""
    from ansible import constants as C
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import module_loader
    from ansible.template import Templar

    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(tmp_path), raising=False)

    def build(module: str, compression: str) -> bytes:
        task_vars = {"ansible_python_interpreter": "/usr/bin/python3"}
        built = module_common.modify_module(module_name=module, module_path=module_loader.find_plugin(module),
                                            module_args={"_raw_params": "echo hi", "name": "x"},
                                            templar=Templar(loader=DataLoader(), variables=task_vars),
                                            task_vars=task_vars, module_compression=compression)
        data = built[0] if isinstance(built, tuple) else built.b_module_data
        return data if isinstance(data, bytes) else data.encode()

    return build


@pytest.fixture(autouse=True)
def empty_keeper():
    keeper._MEMBERS.clear()
    keeper._MEMBERS_SIZE[0] = 0
    yield
    keeper._MEMBERS.clear()
    keeper._MEMBERS_SIZE[0] = 0


@pytest.mark.parametrize("compression", ["ZIP_DEFLATED", "ZIP_STORED"])
def test_scripts_are_rebuilt_byte_for_byte_and_held_members_are_named(script, compression):
    known: set[bytes] = set()
    for number, module in enumerate(MODULES):
        payload = script(module, compression)
        sent = ssh_direct._by_parts(payload, known)
        assert sent is not None, module
        # The first script sends every member whole; the next ones name the members of
        # module_utils the keeper holds from the first.
        assert (sent.refs == b"") == (number == 0), (module, len(sent.refs))
        assert all(digest in keeper._MEMBERS for digest in (sent.refs[i:i + 32] for i in range(0, len(sent.refs), 32)))
        assert keeper._rebuild(sent.frames) == payload, module
        known.update(sent.new)
        if number:
            assert len(sent.frames) < len(payload) // 2, (module, len(sent.frames), len(payload))


def test_a_keeper_without_a_named_member_declines(script):
    first = ssh_direct._by_parts(script("ping", "ZIP_DEFLATED"), set())
    keeper._rebuild(first.frames)
    second = ssh_direct._by_parts(script("stat", "ZIP_DEFLATED"), set(first.new))
    assert second.refs
    keeper._MEMBERS.clear()
    with pytest.raises(keeper._Declined, match=keeper.NOT_KEPT):
        keeper._rebuild(second.frames)
    assert keeper.NOT_KEPT == ssh_direct.NOT_KEPT


@pytest.mark.parametrize("payload", [b"#!/usr/bin/python\nprint('hi')\n", b"x = 'UEsDB" + b"A" * 5000 + b"!'\n",
                                     b"z = 'UEsDBBQAAAAIAA" + b"Q" * 8000 + b"'\n"])
def test_a_script_without_a_zip_in_base64_goes_whole(payload):
    assert ssh_direct._by_parts(payload, set()) is None
