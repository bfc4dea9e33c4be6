"""Import scanning, the module dependency walk and modify_module: ansible-core's pure Python
against the accelerator, per module, for the 8 builtin modules command, copy, file, user,
apt, dnf, uri, get_url and (where the ``ansible`` community package is installed) 40
collection modules spread evenly over the sorted list of its modules for which ansible-core
builds an AnsiBallZ payload, so runs ``recursive_finder`` (``builds_ansiballz``: not
PowerShell, not an action plugin's documentation-only ``.py``); see ``_collection_targets``.

- ``scan``: compile() + ModuleDepFinder against ``scan_imports``, file by file, over every
  file of ansible-core's module_utils, its biggest files alone, the modules themselves and
  the collection module_utils they reach; results compared as sets.
- ``recursive_finder warm``: in a process that has built every other module before; the
  payload zip opened as ``_find_module_utils`` opens it (so with the accelerator on, the
  ``payload`` path's writer), ZIP_DEFLATED as ansible-core's default; zip bytes and metadata
  compared.
- ``recursive_finder cold``: each side's first walk in a fresh interpreter, set up as a
  forked worker of ``ansible-playbook`` finds its process: ansible-core imported, the plugin
  loader set up, the task's module name resolved through the plugin loaders as the
  controller resolves it while parsing the task (so the module's own collection and its
  routing are loaded, on both sides) and, on the native side only, the accelerator
  installed as its callback plugin installs it (after parsing), with its controller
  pre-warm done; only the walk is timed, inside that process; zip digests and metadata
  compared.  The median of several fresh pairs (five per builtin module, three per
  collection module; one with ``--quick``).
  The accelerator finds the closures and deflate streams earlier processes left on disk
  (this benchmark's warm rows walked every module); ``cold, empty disk`` rows give every
  process a new local tmp root, as the very first run on a machine.
- ``modify_module``: the whole result (wrapper script with the base64 payload, metadata...)
  for a pinned clock, in a fresh AnsiBallZ cache directory each call (a new run).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import types
import zipfile

import ansible
from ansible.executor import module_common as mc

from ansible_accel._activation import _apply, _revert, core_minor
from ansible_accel._integrations import finder as finder_integration
from ansible_accel._integrations import payload as payload_integration
from ansible_accel.finder import scan_imports

from ._harness import Row, _spread, compare

BUILTIN_MODULES = ("command", "copy", "file", "user", "apt", "dnf", "uri", "get_url")
COLLECTION_MODULE_COUNT = 40
DATE_TIME = datetime.datetime(2024, 5, 6, 7, 8, 10, tzinfo=datetime.timezone.utc)
ROOT = pathlib.Path(ansible.__file__).parent
REPO = pathlib.Path(__file__).resolve().parent.parent

try:
    import ansible_collections
except ImportError:
    COLLECTIONS_ROOT = None
else:
    COLLECTIONS_ROOT = pathlib.Path(next(iter(ansible_collections.__path__)))


class Target:
    """One module: its short name, Python name and file."""

    def __init__(self, name: str, fqn: str, path: pathlib.Path) -> None:
        self.name, self.fqn, self.path = name, fqn, path
        self.label = name if fqn.startswith("ansible.") else fqn.removeprefix("ansible_collections.").replace(".plugins.modules", "")
        # the name a task gives it (fully qualified)
        self.action = f"ansible.builtin.{name}" if fqn.startswith("ansible.") else self.label


def _builtin_targets() -> list[Target]:
    return [Target(n, mc._get_ansible_module_fqn(str(ROOT / "modules" / f"{n}.py")), ROOT / "modules" / f"{n}.py")
            for n in BUILTIN_MODULES]


def builds_ansiballz(data: bytes) -> bool:
    """True for a module source that ``_find_module_utils`` packs as an AnsiBallZ payload
    (and so walks with ``recursive_finder``), by ansible-core's own tests in its order: not
    binary, then its module-replacer marker or its new-style Python import pattern.
    PowerShell modules and the documentation-only ``.py`` files of action-plugin modules
    (cisco.meraki's, for one) fail it: ansible-core builds no payload for them."""
    if mc._is_binary(data):
        return False
    return mc.REPLACER in data or mc.NEW_STYLE_PYTHON_MODULE_RE.search(data) is not None


def _collection_targets(count: int) -> list[Target]:
    """``count`` collection modules spread evenly over the sorted list of all of them: in
    each of ``count`` equal slices of that list, the first module for which ansible-core
    builds an AnsiBallZ payload (``builds_ansiballz``) and whose walk succeeds here (a module
    that needs something not installed is passed over)."""
    if COLLECTIONS_ROOT is None or not (COLLECTIONS_ROOT / "community").is_dir():
        return []
    paths = sorted(COLLECTIONS_ROOT.glob("*/*/plugins/modules/*.py"))
    every = [p for p in paths if p.name != "__init__.py"]
    paths = [p for p in every if builds_ansiballz(p.read_bytes())]
    print(f"finder: collection modules: the first that walks in each of {count} equal slices of the {len(paths)} "
          f"(of {len(every)}) modules ansible-core builds an AnsiBallZ payload for", flush=True)
    chosen: list[Target] = []
    step = len(paths) / count
    index = 0.0
    while len(chosen) < count and int(index) < len(paths):
        start = int(index)
        for path in paths[start:start + int(step) or start + 1]:
            parts = ("ansible_collections",) + path.relative_to(COLLECTIONS_ROOT).with_suffix("").parts
            target = Target(parts[-1], ".".join(parts), path)
            try:
                _walker(mc.recursive_finder, target, zipfile.ZipFile)()
            except Exception:  # noqa: BLE001 - this one cannot be built here; take the next
                continue
            chosen.append(target)
            break
        index += step
    return chosen


# --- scan ------------------------------------------------------------------------------------

def _python_files(root: pathlib.Path, prefix: tuple[str, ...]) -> list[tuple[str, bytes, bool]]:
    files = []
    for path in sorted(root.rglob("*.py")):
        parts = prefix + path.relative_to(root).with_suffix("").parts
        is_pkg_init = parts[-1] == "__init__"
        files.append((".".join(parts[:-1] if is_pkg_init else parts), path.read_bytes(), is_pkg_init))
    return files


def _python_scan(files):
    new_style = core_minor() >= (2, 21)
    out = []
    for fqn, data, is_pkg_init in files:
        if new_style:
            finder = mc.ModuleDepFinder(fqn, data, is_pkg_init=is_pkg_init)
        else:
            finder = mc.ModuleDepFinder(fqn, mc._compile_module_ast(fqn, data), is_pkg_init)
        out.append((finder.submodules, finder.optional_imports))
    return out


def _native_scan(files):
    out = []
    for fqn, data, is_pkg_init in files:
        scan = scan_imports(data, fqn, is_pkg_init)
        # (frozensets, against ModuleDepFinder's sets: equal when their members are)
        out.append((scan.submodules, scan.optional_imports))
    return out


def _scan_row(name: str, files, repeat: int, number: int = 1) -> Row:
    total = sum(len(data) for _, data, _ in files)
    inputs = f"{len(files)} files, {total // 1024} KiB"
    return compare("finder", f"scan: {name}", inputs, lambda: _python_scan(files), lambda: _native_scan(files),
                   repeat=repeat, number=number)


def _scan_rows(quick: bool, targets: list[Target], collection_utils: list) -> list[Row]:
    files = _python_files(ROOT / "module_utils", ("ansible", "module_utils"))
    repeat = 3 if quick else 7
    rows = [_scan_row("every module_utils file", files, repeat)]
    if quick:
        return rows
    for name in ("ansible.module_utils.basic", "ansible.module_utils.urls"):
        rows.append(_scan_row(name.rsplit(".", 1)[1] + ".py", [f for f in files if f[0] == name], repeat, number=3))
    modules = [(t.fqn, t.path.read_bytes(), False) for t in targets]
    rows.append(_scan_row("the benchmarked modules", modules, repeat))
    if collection_utils:
        rows.append(_scan_row("their collection module_utils", collection_utils, repeat))
    return rows


# --- recursive_finder, warm ------------------------------------------------------------------

def _walker(recursive_finder, target: Target, open_zip, compression: int = zipfile.ZIP_DEFLATED):
    from ansible._internal._ansiballz import _builder
    from ansible._internal._datatag._tags import Origin

    data = target.path.read_bytes()

    def walk():
        buffer = io.BytesIO()
        zf = open_zip(buffer, mode="w", compression=compression)
        metadata = recursive_finder(target.name, target.fqn, Origin(path=str(target.path)).tag(data), zf, DATE_TIME,
                                    _builder.ExtensionManager())
        zf.close()
        return buffer.getvalue(), metadata

    return walk


class _Accelerated:
    """The finder and payload paths' patches, applied only inside ``with``."""

    def __init__(self) -> None:
        self.patches = finder_integration.plan() + payload_integration.plan()

    def __enter__(self):
        self.applied = [_apply(p) for p in self.patches]

    def __exit__(self, *exc):
        for item in reversed(self.applied):
            _revert(item)

    def without(self, call):
        """``call`` made with the patches taken out (inside ``with self``), then put back."""
        def run():
            self.__exit__()
            try:
                return call()
            finally:
                self.__enter__()

        return run


def _warm_rows(targets: list[Target], accelerated: _Accelerated, quick: bool) -> list[Row]:
    original = mc.recursive_finder

    def native_walk(target):
        return _walker(lambda *a: mc.recursive_finder(*a), target, lambda *a, **k: mc.zipfile.ZipFile(*a, **k))

    rows = []
    # The patches are in for the whole phase, as install() leaves them; each pure-Python walk
    # takes them out and puts them back (~0.03 ms with cold caches, against its ~70 ms), so the
    # native walks' times hold only the walk.
    with accelerated:
        # "after other modules": every module walked once before any is timed
        for target in targets:
            native_walk(target)()
        for target in targets:
            # A native warm walk is a fraction of a millisecond, timed right after a pure-Python
            # walk that left the CPU caches cold (command on 2.21: ~0.5 ms so, 0.16 ms back to
            # back): one disturbed sample moves it by half, so the median of nine pairs.
            rows.append(compare("finder", f"recursive_finder warm: {target.label}", "zip bytes + metadata",
                                accelerated.without(_walker(original, target, zipfile.ZipFile)),
                                native_walk(target), repeat=3 if quick else 9))
    return rows


# --- recursive_finder, cold: each side in fresh interpreters ---------------------------------

_FRESH = r"""
import hashlib, io, json, sys, time
side, compression, name, fqn, path, task_action = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
from ansible.plugins.loader import action_loader, init_plugin_loader, module_loader
init_plugin_loader()
# as the controller does while it parses the task, before any worker forks (ModuleArgsParser):
# the module's name resolved, so its collection (and its routing) is already loaded
if not module_loader.find_plugin_with_context(task_action, collection_list=None).resolved:
    raise SystemExit(f"{task_action} does not resolve")
action_loader.find_plugin_with_context(task_action, collection_list=None)
from ansible.executor import module_common as mc
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
if side == "native":
    import ansible_accel
    ansible_accel.install()
    from ansible_accel._integrations import finder
    finder.wait_for_prewarm()
with open(path, "rb") as f:
    data = Origin(path=path).tag(f.read())
extensions = _builder.ExtensionManager()
date_time = __import__("datetime").datetime(2024, 5, 6, 7, 8, 10, tzinfo=__import__("datetime").timezone.utc)
start = time.perf_counter()
buffer = io.BytesIO()
zf = mc.zipfile.ZipFile(buffer, mode="w", compression=compression)
metadata = mc.recursive_finder(name, fqn, data, zf, date_time, extensions)
zf.close()
seconds = time.perf_counter() - start
if side == "native":  # the drop-in walked (its scans may all have been fallbacks: an embed...)
    assert ansible_accel.status()["finder"]["events"]["recursive_finder"] == 1
print(json.dumps({"seconds": seconds, "digest": hashlib.sha256(buffer.getvalue()).hexdigest() + repr(metadata)}))
"""


def _fresh(side: str, target: Target, compression: int, local_tmp: str | None = None) -> tuple[float, str]:
    env = dict(os.environ)
    env.pop("ANSIBLE_ACCEL", None)
    if local_tmp is not None:
        env["ANSIBLE_LOCAL_TEMP"] = local_tmp
    out = subprocess.run(
        [sys.executable, "-c", _FRESH, side, str(compression), target.name, target.fqn, str(target.path), target.action],
        env=env, cwd=REPO, capture_output=True, text=True,
    )
    if out.returncode:
        raise RuntimeError(f"fresh {side} walk of {target.label} failed:\n{out.stderr}")
    out = out.stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["seconds"], result["digest"]


def _cold_row(target: Target, repeat: int, empty_disk: bool = False) -> Row:
    """Each side's first walk in fresh interpreters.  Normally the accelerator finds what
    earlier processes left on disk (this benchmark's own warm rows walked every module);
    with ``empty_disk`` every process gets a new, empty local tmp root: a first run ever."""
    py_times, native_times, equal = [], [], True
    for _ in range(repeat):
        local_tmp = tempfile.mkdtemp(prefix="bench-cold-") if empty_disk else None
        try:
            py_s, py_digest = _fresh("python", target, zipfile.ZIP_DEFLATED, local_tmp)
            native_s, native_digest = _fresh("native", target, zipfile.ZIP_DEFLATED, local_tmp)
        finally:
            if local_tmp is not None:
                shutil.rmtree(local_tmp, ignore_errors=True)
        py_times.append(py_s)
        native_times.append(native_s)
        equal = equal and py_digest == native_digest
    kind = "cold, empty disk" if empty_disk else "cold"
    inputs = f"{'nothing on disk, ' if empty_disk else ''}median of {repeat} fresh pairs"
    row = Row("finder", f"recursive_finder {kind}: {target.label}", inputs,
              statistics.median(py_times), statistics.median(native_times), _spread(py_times), _spread(native_times), equal)
    print(row.line(), flush=True)
    return row


# --- modify_module -------------------------------------------------------------------------

@contextlib.contextmanager
def _pinned_clock():
    class FrozenDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return DATE_TIME if tz is not None else DATE_TIME.replace(tzinfo=None)

    frozen = types.ModuleType("datetime")
    frozen.__dict__.update(vars(datetime))
    frozen.datetime = FrozenDatetime
    saved = mc.datetime
    mc.datetime = frozen
    try:
        yield
    finally:
        mc.datetime = saved


def _modify_module_rows(targets: list[Target], accelerated: _Accelerated, quick: bool) -> list[Row]:
    from ansible import constants as C
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    task_vars = {"ansible_python_interpreter": "/usr/bin/python3"}
    templar = Templar(loader=DataLoader(), variables=task_vars)
    parent = tempfile.mkdtemp(prefix="bench-modify-module-")
    saved_tmp = getattr(C, "DEFAULT_LOCAL_TMP", None)

    def build(target: Target):
        def run():
            # a fresh local tmp, as a new run has: nothing in ansible-core's AnsiBallZ cache
            C.DEFAULT_LOCAL_TMP = tempfile.mkdtemp(dir=parent)
            return mc.modify_module(module_name=target.name, module_path=str(target.path),
                                    module_args={"_raw_params": "echo hi"}, templar=templar, task_vars=task_vars,
                                    module_compression="ZIP_DEFLATED")

        return run

    def native(target: Target):
        python = build(target)

        def run():
            with accelerated:
                return python()

        return run

    rows = []
    try:
        with _pinned_clock():
            for target in targets:
                native(target)()
            for target in targets:
                rows.append(compare("finder", f"modify_module: {target.label}", "whole result, ZIP_DEFLATED",
                                    build(target), native(target), repeat=3 if quick else 5))
    finally:
        C.DEFAULT_LOCAL_TMP = saved_tmp
        shutil.rmtree(parent, ignore_errors=True)
    return rows


def _collection_module_utils(targets: list[Target]) -> list[tuple[str, bytes, bool]]:
    """The collection module_utils files the targets' payloads hold, as scan inputs."""
    seen: dict[str, tuple[str, bytes, bool]] = {}
    for target in targets:
        if not target.fqn.startswith("ansible_collections."):
            continue
        payload, _ = _walker(mc.recursive_finder, target, zipfile.ZipFile)()
        archive = zipfile.ZipFile(io.BytesIO(payload))
        for info in archive.infolist():
            name = info.filename
            if not name.startswith("ansible_collections/") or name in seen:
                continue
            parts = tuple(name.removesuffix(".py").split("/"))
            is_pkg_init = parts[-1] == "__init__"
            fqn = ".".join(parts[:-1] if is_pkg_init else parts)
            seen[name] = (fqn, archive.read(info), is_pkg_init)
    return list(seen.values())


def run(quick: bool) -> list[Row]:
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()
    targets = _builtin_targets()
    if quick:
        targets = targets[:1]
    else:
        targets += _collection_targets(COLLECTION_MODULE_COUNT)
    accelerated = _Accelerated()
    rows = _scan_rows(quick, targets, [] if quick else _collection_module_utils(targets))
    rows += _warm_rows(targets, accelerated, quick)
    for target in targets:
        # A cold native walk is a few ms, and in some fresh processes (a third, at times;
        # any module, more often right after this process's own heavy phases) it takes ~5 ms
        # more, all of it inside the payload writer's batch call, with the same cache hits
        # (a CPU loop timed just before and after it in the same process is not slowed): one
        # such sample moves a ratio 2-3x, so the median of five fresh pairs per builtin
        # module, three per collection module.
        rows.append(_cold_row(target, 1 if quick else 5 if target.fqn.startswith("ansible.") else 3))
    if not quick:
        for target in targets[:len(BUILTIN_MODULES)]:
            rows.append(_cold_row(target, 3, empty_disk=True))
    rows += _modify_module_rows(targets, accelerated, quick)
    return rows
