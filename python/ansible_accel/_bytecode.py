"""Bytecode for AnsiBallZ payloads: compilers, the shared cache, and the entries to add.

``payload_bytecode(entries, compiler, cache)`` returns the ``.pyc`` entries to add beside the
``.py`` entries of a payload: one per source that compiles without a warning, and for
``ansible/__init__.py`` the shim of :mod:`ansible_accel._bytecode_shim` (without which no
bytecode is added at all: it is what gives loaded code its source path on the target).

Compilers: :class:`ControllerCompiler` (this interpreter) and :class:`ServerCompiler` (a
compile server of another local interpreter, started on first need and kept for the
process).  :func:`interpreter_compiler` finds the compiler for an interpreter path, probing
its version once (remembered by path and file identity, in memory and in the cache).

The cache (:class:`PycCache`) holds one answer per (source content, Python release): in memory,
and in a directory private to the user (``ANSIBLE_ACCEL_BYTECODE_CACHE``, else
``$XDG_CACHE_HOME/ansible-accel/bytecode`` or ``~/.cache/ansible-accel/bytecode``) shared by
workers and runs.  Files are named by the SHA-256 of the source and carry it, written whole
then renamed into place: a changed source has another name, so nothing stale is ever served.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import typing as t

from . import _bytecode_compile, _fork
from ._bytecode_shim import SHIM_SOURCE

__all__ = [
    "Compiler", "ControllerCompiler", "PycCache", "ServerCompiler", "default_cache_dir", "interpreter_compiler",
    "payload_bytecode",
]  # fmt: skip

SHIM_ENTRY = "ansible/__init__.py"
_FILE_PREFIX = b"ansible-accel pyc 2\n"  # 2: unchecked hash-based headers (1: checked)
_SERVER_SCRIPT = os.path.abspath(_bytecode_compile.__file__)


class CompileError(Exception):
    """A compiler could not be used (the message says why)."""


class Compiler:
    """Compiles sources for one Python release (``magic``, ``release`` like "3.12.1",
    ``version`` like "3.12")."""

    magic: bytes
    release: str

    @property
    def version(self) -> str:
        return ".".join(self.release.split(".")[:2])

    def compile_many(self, sources: list[bytes]) -> list[tuple[bool, bytes | str]]:
        raise NotImplementedError


class ControllerCompiler(Compiler):
    """This interpreter's own ``compile()``."""

    def __init__(self) -> None:
        self.magic = _bytecode_compile.MAGIC
        self.release = _bytecode_compile.RELEASE

    def compile_many(self, sources: list[bytes]) -> list[tuple[bool, bytes | str]]:
        return [_bytecode_compile.compile_pyc(source) for source in sources]


class ServerCompiler(Compiler):
    """A compile server of another local interpreter (``python -I -S _bytecode_compile.py``),
    started on the first batch; its hello must give the release it was probed with."""

    def __init__(self, interpreter: str, magic: bytes, release: str) -> None:
        self.interpreter, self.magic, self.release = interpreter, magic, release
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def compile_many(self, sources: list[bytes]) -> list[tuple[bool, bytes | str]]:
        with self._lock:
            process = self._process or self._start()
            request = [struct.pack("<I", len(sources))]
            for source in sources:
                request += [struct.pack("<I", len(source)), source]
            try:
                process.stdin.write(b"".join(request))
                process.stdin.flush()
                answers = []
                for _ in sources:
                    status = _read_exact(process.stdout, 1)[0]
                    (size,) = struct.unpack("<I", _read_exact(process.stdout, 4))
                    data = _read_exact(process.stdout, size)
                    answers.append((True, data) if status == 1 else (False, data.decode("utf-8", "replace")))
                return answers
            except (OSError, EOFError) as ex:
                self.close()
                raise CompileError(f"the compile server of {self.interpreter} stopped: {ex}") from ex

    def _start(self) -> subprocess.Popen:
        magic, release, process = _start_server(self.interpreter)
        if (magic, release) != (self.magic, self.release):
            _stop(process)
            raise CompileError(f"{self.interpreter} changed: Python {release}, expected {self.release}")
        self._process = process
        _servers.append(self)
        return process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _stop(process)

    def forget(self) -> None:
        """In a forked child: drop the parent's server without stopping it."""
        process, self._process = self._process, None
        if process is not None:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            process.returncode = 0  # not ours to wait for


def _read_exact(stream: t.IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("short read")
    return data


def _start_server(interpreter: str) -> tuple[bytes, str, subprocess.Popen]:
    try:
        process = subprocess.Popen(
            [interpreter, "-I", "-S", _SERVER_SCRIPT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
        )  # fmt: skip
    except OSError as ex:
        raise CompileError(f"cannot run {interpreter}: {ex}") from ex
    try:
        hello = _read_exact(process.stdout, len(_bytecode_compile.HELLO) + 5)
        if not hello.startswith(_bytecode_compile.HELLO):
            raise EOFError("no hello")
        magic, size = hello[-5:-1], hello[-1]
        release = _read_exact(process.stdout, size).decode("ascii")
    except (OSError, EOFError, UnicodeDecodeError) as ex:
        _stop(process)
        raise CompileError(f"{interpreter} did not start a compile server: {ex}") from ex
    return magic, release, process


def _stop(process: subprocess.Popen) -> None:
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_servers: list[ServerCompiler] = []
_compilers: dict[tuple, Compiler | None] = {}
_controller = ControllerCompiler()


def _after_fork_in_child() -> None:
    for server in _servers:
        server.forget()
    _servers.clear()


def _close_servers() -> None:
    for server in _servers:
        server.close()
    _servers.clear()


_fork.register(after_in_child=_after_fork_in_child)
atexit.register(_close_servers)


def controller_compiler() -> Compiler:
    return _controller


def _file_identity(path: str) -> tuple | None:
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or not os.access(real, os.X_OK):
        return None
    return (real, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def interpreter_compiler(interpreter: str, cache: PycCache | None = None) -> Compiler | None:
    """The compiler for the local interpreter at ``interpreter`` (an absolute path), or None
    when it is not there or does not run.  The controller's own interpreter compiles in
    process; another is probed once (remembered with its file identity) and compiles
    through a server only when something is not cached."""
    if not os.path.isabs(interpreter):
        return None
    identity = _file_identity(interpreter)
    if identity is None:
        return None
    if identity in _compilers:
        return _compilers[identity]
    if identity == _file_identity(sys.executable):
        _compilers[identity] = _controller
        return _controller
    probed = cache.probed(identity) if cache is not None else None
    if probed is None:
        try:
            magic, release, process = _start_server(interpreter)
        except CompileError:
            _compilers[identity] = None
            return None
        _stop(process)
        probed = (magic, release)
        if cache is not None:
            cache.remember_probe(identity, magic, release)
    magic, release = probed
    same = (magic, release) == (_controller.magic, _controller.release)
    compiler: Compiler = _controller if same else ServerCompiler(interpreter, magic, release)
    _compilers[identity] = compiler
    return compiler


def default_cache_dir() -> str:
    configured = os.environ.get("ANSIBLE_ACCEL_BYTECODE_CACHE")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ansible-accel", "bytecode")


def _private_dir(path: str) -> bool:
    """Create ``path`` (mode 0700) if needed; True when it is a directory of ours that no one
    else may write (pyc files read from there go into payloads)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


class PycCache:
    """Answers of ``compile_pyc`` per (source SHA-256, Python release): in memory, and on disk under
    ``directory`` when it is private to the user (else memory only, ``disk`` False)."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory if directory is not None and _private_dir(directory) else None
        self._memory: dict[tuple[bytes, bytes], tuple[bool, bytes | str]] = {}
        self.hits = self.compiled = 0

    @property
    def disk(self) -> bool:
        return self.directory is not None

    def get_many(self, compiler: Compiler, sources: list[bytes]) -> list[tuple[bool, bytes | str]]:
        """``compile_pyc`` answers for ``sources``; only the ones cached nowhere compile."""
        keys = [hashlib.sha256(source).digest() for source in sources]
        answers: list[tuple[bool, bytes | str] | None] = []
        for key in keys:
            answer = self._memory.get((compiler.release, key)) or self._read(compiler, key)
            answers.append(answer)
        missing = [i for i, answer in enumerate(answers) if answer is None]
        self.hits += len(sources) - len(missing)
        if missing:
            compiled = compiler.compile_many([sources[i] for i in missing])
            self.compiled += len(missing)
            for i, answer in zip(missing, compiled):
                answers[i] = answer
                self._write(compiler, keys[i], answer)
        for key, answer in zip(keys, answers):
            self._memory[(compiler.release, key)] = answer
        return t.cast("list[tuple[bool, bytes | str]]", answers)

    def _path(self, compiler: Compiler, key: bytes) -> str:
        digest = key.hex()
        release = "".join(c if c.isalnum() or c in ".+" else "_" for c in compiler.release)
        return os.path.join(t.cast(str, self.directory), f"{compiler.magic.hex()}-{release}", digest[:2], digest)

    def _read(self, compiler: Compiler, key: bytes) -> tuple[bool, bytes | str] | None:
        if self.directory is None:
            return None
        magic = compiler.magic
        try:
            with open(self._path(compiler, key), "rb") as f:
                data = f.read()
        except OSError:
            return None
        head = len(_FILE_PREFIX) + len(key) + 1
        if len(data) < head or not data.startswith(_FILE_PREFIX) or data[len(_FILE_PREFIX) : head - 1] != key:
            return None
        status, body = data[head - 1], data[head:]
        if status == 1 and body[:4] == magic:
            return True, body
        if status == 0:
            return False, body.decode("utf-8", "replace")
        return None

    def _write(self, compiler: Compiler, key: bytes, answer: tuple[bool, bytes | str]) -> None:
        if self.directory is None:
            return
        ok, body = answer
        data = _FILE_PREFIX + key + bytes([1 if ok else 0]) + (body if isinstance(body, bytes) else body.encode())
        _write_atomically(self._path(compiler, key), data)

    def probed(self, identity: tuple) -> tuple[bytes, str] | None:
        if self.directory is None:
            return None
        try:
            with open(self._probe_path(identity), encoding="utf-8") as f:
                record = json.load(f)
            if record["identity"] == list(identity):
                return bytes.fromhex(record["magic"]), str(record["release"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def remember_probe(self, identity: tuple, magic: bytes, release: str) -> None:
        if self.directory is not None:
            record = {"identity": list(identity), "magic": magic.hex(), "release": release}
            _write_atomically(self._probe_path(identity), json.dumps(record).encode())

    def _probe_path(self, identity: tuple) -> str:
        name = hashlib.sha256(identity[0].encode("utf-8", "surrogateescape")).hexdigest()
        return os.path.join(t.cast(str, self.directory), "interpreters", name + ".json")


def _write_atomically(path: str, data: bytes) -> None:
    """Write whole, then rename into place: a reader sees the old file, the new one or none."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


class PayloadBytecode(t.NamedTuple):
    entries: list[tuple[str, bytes]]  # (name of the .pyc, data), in the order of the sources
    left_as_source: dict[str, int]  # reason -> how many sources got no bytecode


def payload_bytecode(sources: list[tuple[str, bytes]], compiler: Compiler, cache: PycCache) -> PayloadBytecode | None:
    """The ``.pyc`` entries for a payload's ``(name, data)`` Python sources, or None when the
    payload must go without bytecode (its ``ansible/__init__.py`` gets no shim)."""
    stub = next((data for name, data in sources if name == SHIM_ENTRY), None)
    if stub is None:
        return None
    shim_request = _bytecode_compile.substitute_request(SHIM_SOURCE.encode(), stub)
    datas = [data for name, data in sources if name != SHIM_ENTRY]
    answers = cache.get_many(compiler, [*datas, shim_request])
    shim_ok, shim = answers.pop()
    if not shim_ok or not isinstance(shim, bytes):
        return None
    entries: list[tuple[str, bytes]] = []
    left: dict[str, int] = {}
    pending = iter(answers)
    for name, _data in sources:
        if name == SHIM_ENTRY:
            entries.append((name + "c", shim))
            continue
        ok, body = next(pending)
        if ok and isinstance(body, bytes):
            entries.append((name + "c", body))
        else:
            left[str(body)] = left.get(str(body), 0) + 1
    return PayloadBytecode(entries, left)
