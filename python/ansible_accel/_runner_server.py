"""A warm interpreter for AnsiBallZ modules on the local machine.

Run as ``INTERPRETER _runner_server.py SOCKET LIFELINE_FD LOCK_FD PROBE LOG`` by the interpreter
the modules name, with the environment they start with (``ansible_accel._runner_pool`` starts
it).  First it runs PROBE: this controller's own AnsiBallZ wrapper, on a payload of this
controller's module_utils whose module stops at once.  That imports, in the very order a
module's interpreter does, everything the wrapper imports before a module's own code runs.
Then it serves ``ansible-accel-run`` clients on SOCKET: each request forks a child that becomes
what ``INTERPRETER [SCRIPT]`` would have been (argv, environment, working directory, umask,
signal dispositions and mask, resource limits, standard streams) and runs the
script as ``__main__``.

Standard library only, and nothing imported before the probe has run: a child's ``sys.modules``
then holds what a fresh interpreter's holds when the module's own code starts, in the same
order.  A script whose wrapper or preloaded module_utils files differ from the probe's is run
by a fresh interpreter exec'd in the child (the ordinary way, once).

It ends when LIFELINE_FD reads end-of-file (the controller and every process it forked are
gone) or on SIGTERM.  docs/runner.md describes the protocol and what a child inherits.

It runs on Python 3.8 and later (the remote runner serves hosts with interpreters older than the
controller's; docs/runner-ssh.md lists what differs before 3.11).

One file, longer than the project's others: it is run by path with whatever interpreter the
modules name, so it cannot import a package of its own (and must import nothing before the
probe).
"""

import sys

# A fresh interpreter's state at start, taken before anything else is imported.
_STARTUP_MODULES = frozenset(sys.modules)
# Python 3.8 to 3.10 have no sys.flags.safe_path (-P, PYTHONSAFEPATH): sys.path[0] is always the
# script's directory there.
_SAFE_PATH = getattr(sys.flags, "safe_path", False)
_STARTUP_PATH_TAIL = list(sys.path) if _SAFE_PATH else list(sys.path[1:])
_BUILTINS = __builtins__

PROBE_EXIT = "ansible-accel-probe"
_MAIN_CALL = b'\n\n\nif __name__ == "__main__":\n    _ansiballz_main(\n'
_LOADER = "ansible.module_utils._internal._ansiballz._loader"
_TRACEBACKS_ASKED = None  # a regex, compiled after the probe (see main)
# Children started before the preloaded heap is made immortal (_make_immortal): the marking
# costs a runner about as much CPU as the page copies it then saves in that many children.
IMMORTAL_AFTER = 128


class _State:
    """What the probe established; read by every child."""

    interpreter = ""
    wrapper_head = b""  # the wrapper code (everything before the call) a script must carry
    preloaded = ()  # module names the probe loaded, in order
    preloaded_files = {}  # payload member -> (crc, size) of each preloaded module's file
    probe_zip = ""  # the probe payload's zip path (removed): prefix of preloaded modules' paths
    significant = {}  # start-up environment entries a request must share (bytes -> bytes)
    coerced_ctype = None  # LC_CTYPE as the interpreter coerced it at start (PEP 538), if it did
    fallbacks_path = ""
    socket_path = ""
    socket_module = None
    retarget_plan = ()
    current_zip = ""
    kept_modules = frozenset()  # the start-up modules and the preloaded ones
    kept_fds = frozenset()  # descriptors the preload opened and left open (a child keeps them)
    dispositions = ()  # (signal, the runner's handler) for every signal a child may set


def _run_probe(probe_path):
    with open(probe_path, "rb") as handle:
        source = handle.read()
    head = source[: source.rindex(_MAIN_CALL)]
    namespace = {"__name__": "__ansible_accel_probe__", "__builtins__": _BUILTINS}
    code = compile(source.replace(b'if __name__ == "__main__":', b"if True:", 1), probe_path, "exec", dont_inherit=True)
    try:
        exec(code, namespace)
    except SystemExit as ex:
        if ex.code != PROBE_EXIT:
            raise
    else:
        raise RuntimeError("the probe module did not stop the wrapper")
    return source, head


def _preload(probe_path):
    source, _State.wrapper_head = _run_probe(probe_path)
    import tempfile
    import zipimport

    # What the probe's wrapper cached that a module's wrapper computes again itself.
    tempfile.tempdir = None
    tempfile._name_sequence = None
    probes = [p for p in zipimport._zip_directory_cache if "/ansible_accelprobe_payload_" in p]
    if len(probes) != 1:
        raise RuntimeError(f"expected one probe payload zip, found {probes}")
    _State.probe_zip = probes[0]
    del zipimport._zip_directory_cache[_State.probe_zip]
    sys.path[:] = _STARTUP_PATH_TAIL
    for path in [p for p in sys.path_importer_cache if p.startswith(_State.probe_zip)]:
        del sys.path_importer_cache[path]
    sys.modules.pop("ansible_accel_runner_probe", None)
    # The wrapper's import of its loader module is when a child learns its payload's path:
    # the loader is imported afresh there, once the preloaded packages point into that payload.
    if _LOADER in sys.modules:
        del sys.modules[_LOADER]
        parent = sys.modules.get(_LOADER.rpartition(".")[0])
        if parent is not None and "_loader" in vars(parent):
            delattr(parent, "_loader")
    _State.preloaded = tuple(n for n in sys.modules if n not in _STARTUP_MODULES)
    _State.kept_modules = _STARTUP_MODULES.union(_State.preloaded)
    _State.preloaded_files = _preloaded_files(source)
    _State.retarget_plan = _retarget_plan()


def _payload_archive(source):
    """The payload a wrapper script carries, as an open ``zipfile.ZipFile``, or None."""
    import base64
    import io
    import zipfile

    start = source.find(b"\nzip_data='", source.rfind(_MAIN_CALL))
    if start < 0:
        return None
    start += len(b"\nzip_data='")
    end = source.find(b"'", start)
    try:
        return zipfile.ZipFile(io.BytesIO(base64.b64decode(source[start:end], validate=True)))
    except (ValueError, zipfile.BadZipFile):
        return None


def _payload_members(archive):
    """The (crc, size) of each member of a payload archive."""
    return {i.filename: (i.CRC, i.file_size) for i in archive.infolist()}


_BYTECODE_SHIM = "ansible/__init__.pyc"
_BYTECODE_LOADS = "_ansible_accel_bytecode_loads"


def _bytecode_loads(pyc):
    """From a payload's ``ansible/__init__.pyc`` (the accelerator's shim, ``_bytecode_shim``),
    the code of its function that makes the payload's ``.pyc`` loads look like loads of their
    sources; None where this interpreter's zipimport skips the file (another magic number: then
    it skips every ``.pyc`` of the payload, as the target would); False where the file holds no
    such function."""
    import marshal
    from importlib.util import MAGIC_NUMBER

    if pyc[:4] != MAGIC_NUMBER:
        return None
    code = marshal.loads(pyc[16:])
    for const in getattr(code, "co_consts", ()):
        if type(const) is type(_bytecode_loads.__code__) and const.co_name == _BYTECODE_LOADS:
            return const
    return False


def _preloaded_files(source):
    archive = _payload_archive(source)
    members = _payload_members(archive) if archive is not None else {}
    prefix = _State.probe_zip + "/"
    files = {}
    for name in _State.preloaded:
        origin = getattr(getattr(sys.modules[name], "__spec__", None), "origin", None) or ""
        if origin.startswith(prefix):
            member = origin[len(prefix):]
            if member not in members:
                raise RuntimeError(f"{name} was loaded from {member}, which the probe payload lacks")
            files[member] = members[member]
    return files


def _script_mismatch(source, at, params):
    """Why this script cannot run on what the runner preloaded, or None."""
    if at < 0 or at != len(_State.wrapper_head) or not source.startswith(_State.wrapper_head):
        return "not this controller's AnsiBallZ wrapper"
    tail = source[at:]
    if b"\nextensions={},\n" not in tail:
        return "AnsiBallZ extensions (coverage or a debugger)"
    if _TRACEBACKS_ASKED.search(source[params[0]:params[1]] if params else tail):
        # A module's captured call stack would show the runner's frames below the script's.
        return "tracebacks asked for (ANSIBLE_DISPLAY_TRACEBACK)"
    start = tail.find(b"\nzip_data='")
    encoded = tail[start + 11:tail.find(b"'", start + 11)] if start >= 0 else b""
    if encoded in _VERIFIED:
        return None
    archive = _payload_archive(source)
    if archive is None:
        return "payload not readable"
    members = _payload_members(archive)
    for member, stamp in _State.preloaded_files.items():
        if members.get(member) != stamp:
            return "payload module_utils differ from the preloaded ones"
    if any(name.endswith(".pyc") for name in members):
        try:
            loads = _bytecode_loads(archive.read(_BYTECODE_SHIM))
        except KeyError:
            return "payload carries bytecode without its set-up"
        except Exception:  # noqa: BLE001 - marshal's ValueError, EOFError; zlib's error...
            return "payload bytecode set-up not readable"
        if loads is False:
            return "payload bytecode set up by another shim"
    if _seen_before(hash(encoded)):
        _report(b"AARV", encoded)
    return None


# --- serving ----------------------------------------------------------------------------------
# Everything below runs after the probe: the modules it imports that the probe did not are
# taken out of a child's sys.modules again (_Child.enter).


def _significant(key):
    """Environment keys that act when an interpreter starts (or when the preloaded modules
    were imported): a request must carry the runner's own values for them."""
    return key.startswith((b"PYTHON", b"LC_")) or key in (b"LANG", b"TZ")


def _read_env_file(path):
    with open(path, "rb") as handle:
        data = handle.read()
    env = {}
    for entry in data.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        if sep:
            env.setdefault(key, value)
    return env


class Request:
    """One run asked for by a client: what its interpreter would have started with."""

    def __init__(self, body):
        import struct

        if body[:4] != b"AAR1":
            raise ValueError("not a version 1 request")
        pos = 4

        def u32():
            nonlocal pos
            (value,) = struct.unpack_from("<I", body, pos)
            pos += 4
            return value

        def strings():
            nonlocal pos
            items = []
            for _ in range(u32()):
                size = u32()
                items.append(bytes(body[pos:pos + size]))
                pos += size
            return items

        self.argv = strings()
        self.env = strings()
        self.umask = u32()
        (self.pgid,) = struct.unpack_from("<i", body, pos)
        self.blocked, self.ignored = struct.unpack_from("<QQ", body, pos + 4)
        pos += 20
        self.rlimits = []
        for _ in range(u32()):
            self.rlimits.append(struct.unpack_from("<IQQ", body, pos))
            pos += 20
        if pos != len(body) or not self.argv:
            raise ValueError("malformed request")
        self.named = None  # the environment's named entries, first of a key kept (by refusal())

    def environ(self):
        """The environment as the interpreter's os.environ would hold it: first entry of a
        key wins, entries without '=' skipped, LC_CTYPE coerced as the runner's was."""
        if self.named is None:
            self.named = {}
            for key, value in _env_pairs(self.env):
                self.named.setdefault(key, value)
        env = dict(self.named)
        if _State.coerced_ctype is not None:
            env[b"LC_CTYPE"] = _State.coerced_ctype
        return env

    def refusal(self):
        """Why this request goes the ordinary way, or None."""
        if self.argv[0] != _State.interpreter.encode():
            return "another interpreter"
        if len(self.argv) >= 2 and self.argv[1].startswith(b"-"):
            return "interpreter options or arguments"
        env = self.named = {}
        for entry in self.env:
            key, sep, value = entry.partition(b"=")
            if sep:
                if not key:
                    return "an environment entry without a name"
                env.setdefault(key, value)
        mine = {k: v for k, v in env.items() if _significant(k)}
        if mine != _State.significant:
            return "start-up environment (PYTHON*, LC_*, LANG, TZ) unlike the runner's"
        import resource

        for res, _cur, limit in self.rlimits:
            try:
                _, mine_max = resource.getrlimit(res)
            except (OSError, ValueError):
                continue
            if _rlim(limit) > _rlim(mine_max) and mine_max != resource.RLIM_INFINITY:
                return "a resource limit above the runner's"
        return None


def _rlim(value):
    import resource

    return resource.RLIM_INFINITY if value == 0xFFFFFFFFFFFFFFFF else value


def _note(path, line):
    """Append one line to a file of the runner's directory; never fails the caller."""
    import os

    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace") + b"\n")
        finally:
            os.close(fd)
    except OSError:
        pass


def _fail(socket_path, log_path, message):
    _note(log_path, message)
    _note(socket_path + ".failed", message)


class Server:
    def __init__(self, socket_path, lifeline_fd, lock_fd, log_path):
        import os
        import selectors
        import socket

        self.socket_path = socket_path
        self.log_path = log_path
        self.lifeline_fd = lifeline_fd
        self.lock_fd = lock_fd
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = f"{socket_path}.{os.getpid()}.tmp"
        old_umask = os.umask(0o177)
        try:
            self.listener.bind(temporary)
        finally:
            os.umask(old_umask)
        self.listener.listen(64)
        os.replace(temporary, socket_path)  # appears only once it accepts
        self.socket_inode = os.stat(socket_path).st_ino
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        self.selector.register(lifeline_fd, selectors.EVENT_READ, self._lifeline)
        self.running = {}  # pidfd (pid without pidfds) -> (pid, connection)
        self.started = 0  # children started
        self.immortal = False  # whether the heap has been made immortal
        self.done = False
        self.pidfds = _pidfds_work()
        self.wakeup = ()
        if not self.pidfds:
            # Python 3.8 (or a kernel before Linux 5.3): a child's end is seen by SIGCHLD, whose
            # arrival the interpreter writes to this pipe, then by waitpid.
            import signal

            self.wakeup = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            signal.set_wakeup_fd(self.wakeup[1], warn_on_full_buffer=False)
            signal.signal(signal.SIGCHLD, _on_sigchld)
            self.selector.register(self.wakeup[0], selectors.EVENT_READ, self._reap)

    def serve(self):
        """Serve until the lifeline ends; returns None there, or in a forked child the
        _Child to run (so nothing of this loop is on the stack while a module runs)."""
        import gc
        import signal

        # The runner's own dispositions, as Python set them: a child changes those it must.
        _State.dispositions = tuple((sig, signal.getsignal(sig)) for sig in signal.valid_signals()
                                    if sig not in (signal.SIGKILL, signal.SIGSTOP))
        gc.freeze()  # the preloaded heap stays shared with the children, untouched by their gc
        while not self.done:
            for key, _ in self.selector.select():
                child = key.data(key.fileobj)
                if child is not None:
                    return child
                if self.done:
                    break
        self.close()
        return None

    def close(self):
        import os

        try:
            if os.stat(self.socket_path).st_ino == self.socket_inode:  # still ours
                os.unlink(self.socket_path)
        except OSError:
            pass
        self.listener.close()
        self.selector.close()

    def _lifeline(self, fd):
        import os

        if not os.read(fd, 64):
            self.done = True
        return None

    def _accept(self, listener):
        import socket
        import struct

        try:
            connection, _ = listener.accept()
        except OSError:
            return None
        import os

        _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            connection.close()
            return None
        connection.settimeout(10)
        try:
            request, fds = self._receive(connection)
            if request is None:
                connection.close()
                return None
        except (OSError, ValueError) as ex:
            _note(self.log_path, f"bad request: {type(ex).__name__}: {ex}")
            connection.close()
            return None
        reason = request.refusal()
        if reason is not None:
            self._refuse(connection, reason)
        else:
            child = self._start(connection, request, fds)
            if child is not None:
                return child
        for fd in fds:
            os.close(fd)
        return None

    def _receive(self, connection):
        import array
        import socket
        import struct

        fds = array.array("i")
        data = bytearray()
        try:
            while len(data) < 4 or len(data) < 4 + struct.unpack_from("<I", data)[0]:
                chunk, ancillary, _flags, _ = connection.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                if not chunk:
                    raise ValueError("connection closed mid-request")
                data += chunk
        except BaseException:
            import os

            for fd in fds:  # what came with a request that never arrived whole is not kept
                os.close(fd)
            raise
        fds = list(fds)
        if data[4:8] == b"AARC" and not fds:
            _keep_code(bytes(data[4:]))
            return None, []
        if data[4:8] == b"AARW" and not fds:
            _keep_wrapper(bytes(data[4:]))
            return None, []
        if data[4:8] == b"AARS" and not fds and len(data) == 16:
            if len(_SEEN) < _SEEN_LIMIT:
                _SEEN.add(struct.unpack_from("<q", data, 8)[0])
            return None, []
        if data[4:8] == b"AARV" and not fds:
            if len(_VERIFIED) < _VERIFIED_LIMIT:
                _VERIFIED.add(bytes(data[8:]))
            return None, []
        if len(fds) != 4:
            import os

            for fd in fds:
                os.close(fd)
            raise ValueError(f"{len(fds)} file descriptors instead of 4")
        return Request(memoryview(data)[4:]), fds

    def _refuse(self, connection, reason):
        import struct

        payload = reason.encode()
        try:
            connection.sendall(b"R" + struct.pack("<I", len(payload)) + payload)
        except OSError:
            pass
        connection.close()

    def _start(self, connection, request, fds):
        import os
        import selectors
        import struct

        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            os.close(go_w)
            return _Child(self, connection, request, fds, ready_w, go_r)
        os.close(ready_w)
        os.close(go_r)
        try:
            answer = os.read(ready_r, 4096)
        finally:
            os.close(ready_r)
        if answer != b"G":
            os.close(go_w)
            os.waitpid(pid, 0)
            self._refuse(connection, "child set-up failed: " + answer[1:].decode("utf-8", "replace"))
            return None
        try:
            connection.sendall(b"S" + struct.pack("<i", pid))
            os.write(go_w, b"g")
            self.started += 1
        except OSError:
            os.kill(pid, 9)  # the client is gone before the module started: it never runs
        finally:
            os.close(go_w)
        if self.pidfds:
            pidfd = os.pidfd_open(pid)
            self.running[pidfd] = (pid, connection)
            self.selector.register(pidfd, selectors.EVENT_READ, self._exited)
        else:
            self.running[pid] = (pid, connection)  # its SIGCHLD, even one already come, wakes _reap
        self.selector.register(connection, selectors.EVENT_READ, self._client_event)
        return None

    def _reap(self, wakeup):
        """Without pidfds: the children that have ended, once a SIGCHLD has come."""
        import os

        try:
            while os.read(wakeup, 512):
                pass
        except BlockingIOError:
            pass
        for pid, connection in list(self.running.values()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0xFF00  # reaped elsewhere: nothing to tell but a failure
            if done == pid:
                del self.running[pid]
                self._tell_end(connection, status)
        return None

    def _exited(self, pidfd):
        import os

        pid, connection = self.running.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self._tell_end(connection, status)

    def _tell_end(self, connection, status):
        import struct

        try:
            self.selector.unregister(connection)
        except KeyError:
            pass  # the client went away first
        try:
            connection.sendall(b"X" + struct.pack("<i", status))
        except OSError:
            pass
        connection.close()
        if not self.running and not self.immortal and self.started >= IMMORTAL_AFTER:
            self._settle()

    def _settle(self):
        """Make the heap immortal, at a moment no child runs and no client is connected: what
        is immortal is never freed, so nothing of a request may be held then."""
        import gc

        self.immortal = True
        _make_immortal(gc)
        gc.freeze()

    def _client_event(self, connection):
        # A client says nothing after its request: readable means it went away.  Its module
        # (the process the client stood for) goes with it, as the interpreter would have.
        import os

        try:
            if connection.recv(1, 0x40):  # MSG_DONTWAIT
                return None
        except BlockingIOError:
            return None
        except OSError:
            pass
        for pid, held in self.running.values():
            if held is connection:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
                self.selector.unregister(connection)
                break
        return None


class _Child:
    """The forked child: becomes the client's interpreter, then runs its script."""

    def __init__(self, server, connection, request, fds, ready_fd, go_fd):
        self.server, self.connection, self.request = server, connection, request
        self.fds, self.ready_fd, self.go_fd = fds, ready_fd, go_fd

    def run(self):
        import os

        try:
            self._drop_runner()
            self._become()
        except BaseException as ex:  # noqa: BLE001 - any set-up failure: the client runs it
            os.write(self.ready_fd, b"F" + f"{type(ex).__name__}: {ex}".encode()[:2000])
            os._exit(0)
        os.write(self.ready_fd, b"G")
        os.close(self.ready_fd)
        go = os.read(self.go_fd, 1)
        os.close(self.go_fd)
        if go != b"g":
            os._exit(1)  # the runner ended before the client knew: never run the module
        _close_all_but(_State.kept_fds.union((0, 1, 2)))
        _run_script(self.request)

    def _drop_runner(self):
        import os

        server = self.server
        server.listener.close()
        server.selector.close()
        self.connection.close()
        for pidfd, (_pid, connection) in server.running.items():
            connection.close()
            if server.pidfds:
                os.close(pidfd)
        server.running = {}
        if server.wakeup:
            import signal

            signal.set_wakeup_fd(-1)  # before its pipe is closed: no signal writes to that number
            for fd in server.wakeup:
                os.close(fd)
        os.close(server.lifeline_fd)
        os.close(server.lock_fd)

    def _become(self):
        import os
        import signal

        request = self.request
        # The process group stays the runner's: ansible-core's workers are leaders of their
        # own group (and session), which no process of another session can join.  Signals a
        # worker sends its group reach the module through the client, which forwards them.
        signal.set_wakeup_fd(-1)
        for sig, runners in _State.dispositions:
            handler = _fresh_disposition(sig, request.ignored)
            if runners is not handler:
                try:
                    signal.signal(sig, handler)
                except (OSError, ValueError):
                    pass
        signal.pthread_sigmask(signal.SIG_SETMASK, [s for s in range(1, 65) if request.blocked >> (s - 1) & 1])
        if request.rlimits:
            import resource

            for res, cur, limit in request.rlimits:
                wanted = (_rlim(cur), _rlim(limit))
                try:
                    if resource.getrlimit(res) != wanted:
                        resource.setrlimit(res, wanted)
                except ValueError:
                    continue  # a resource this interpreter does not know
        os.umask(request.umask)
        os.fchdir(self.fds[3])
        for target, fd in enumerate(self.fds[:3]):
            os.dup2(fd, target)
        _set_environ(request.environ())


def _pidfds_work():
    """Whether a child's end can be waited for with a pidfd (Python 3.9 and later on Linux 5.3
    and later)."""
    import os

    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def _on_sigchld(_signum, _frame):
    """The runner's SIGCHLD handler where there are no pidfds: the wakeup pipe does the work."""


def _make_immortal(gc):
    """Mark every object the runner holds immortal, as the interpreter marks its own
    singletons and interned strings (CPython 3.12 and 3.13 only, where that is a reference
    count the reference operations leave alone).  A child started after it writes no
    reference count of the preloaded heap, so the pages it shares with the runner stay
    shared (each written one is copied: docs/runner.md gives the pages and CPU saved).  Nothing
    changes for the objects a module makes, nor for what it can see of the preloaded ones,
    but ``sys.getrefcount`` of them; they were never freed in a child anyway (see
    ``_finish``)."""
    if sys.version_info[:2] not in ((3, 12), (3, 13)):
        return
    import ctypes

    count = ctypes.c_ssize_t
    immortal = count.from_address(id(None)).value
    if immortal != sys.getrefcount(None) or immortal != 0xFFFFFFFF:
        return  # another object layout (a free-threaded build): left as it is
    code_type = type(_make_immortal.__code__)
    seen = set()
    pending = gc.get_objects()
    while pending:
        obj = pending.pop()
        key = id(obj)
        if key in seen:
            continue
        seen.add(key)
        cell = count.from_address(key)
        if cell.value != immortal:
            cell.value = immortal
        if type(obj) is code_type:  # code objects do not list what they hold
            pending.extend((obj.co_consts, obj.co_names, obj.co_code, obj.co_linetable, obj.co_exceptiontable,
                            obj.co_varnames, obj.co_cellvars, obj.co_freevars, obj.co_filename, obj.co_name,
                            obj.co_qualname))
        else:
            pending.extend(gc.get_referents(obj))


def _fresh_disposition(sig, ignored_mask):
    """What a fresh interpreter starts with for ``sig``: ignored stays ignored (exec keeps
    SIG_IGN), SIGINT gets Python's handler, SIGPIPE and SIGXFSZ are ignored, the rest default."""
    import signal

    if ignored_mask >> (sig - 1) & 1:
        return signal.SIG_IGN
    if sig == signal.SIGINT:
        return signal.default_int_handler
    if sig in (signal.SIGPIPE, getattr(signal, "SIGXFSZ", None)):
        return signal.SIG_IGN
    return signal.SIG_DFL


def _set_environ(env):
    """Make the process environment ``env`` (bytes -> bytes, in order), in C and in os.environ."""
    import os
    import posix

    for key in [*os.environ._data, *posix.environ]:
        try:
            os.unsetenv(key)
        except (OSError, ValueError):
            pass
    os.environ._data.clear()
    posix.environ.clear()
    posix.environ.update(env)
    for key, value in env.items():
        os.putenv(key, value)
        os.environ._data[key] = value


def _exec_fresh(request, stdin_source, reason):
    """Run the script the ordinary way from here: a fresh interpreter in this process, with
    the script on standard input again if it came from there."""
    import os
    import signal

    _note(_State.fallbacks_path, reason)
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_IGN if request.ignored >> (sig - 1) & 1 else signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    if stdin_source is not None:
        read_end, write_end = os.pipe()
        writer = os.fork()
        if writer == 0:  # the feeder's own child writes, so no process is left for the module to reap
            if os.fork() == 0:
                os.close(read_end)
                try:
                    view = memoryview(stdin_source)
                    while view:
                        view = view[os.write(write_end, view):]
                finally:
                    os._exit(0)
            os._exit(0)
        os.waitpid(writer, 0)
        os.close(write_end)
        os.dup2(read_end, 0)
        os.close(read_end)
    argv = request.argv
    env = [e for e in request.env]
    try:
        os.execve(argv[0], argv, dict(_env_pairs(env)))
    except OSError as ex:
        os.write(2, f"ansible-accel-run: cannot execute {os.fsdecode(argv[0])}: {ex.strerror}\n".encode())
        os._exit(126)


def _env_pairs(entries):
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if sep:
            yield key, value


def _read_all(fd):
    import os

    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _run_script(request):
    """Run the request's script as ``__main__``, as ``python [SCRIPT]`` would."""
    import os

    from_stdin = len(request.argv) == 1
    if from_stdin:
        source = _read_all(0)
        filename = "<stdin>"
    else:
        script = os.fsdecode(request.argv[1])
        try:
            with open(script, "rb") as handle:
                source = handle.read()
        except OSError:
            _exec_fresh(request, None, "script not readable")
        filename = os.path.abspath(script)
    at = source.rfind(_MAIN_CALL)
    params = _params_span(source, at)
    code = _wrapper_code(source, at, params, filename)
    if code is None:
        reason = _script_mismatch(source, at, params)
        if reason is not None:
            _exec_fresh(request, source if from_stdin else None, reason)
    _enter_main(request, filename, from_stdin)
    main_module = sys.modules["__main__"]
    try:
        if code is None:
            code = compile(source, filename, "exec", dont_inherit=True)
            _report_wrapper(source, at, params, code)
        exec(code, vars(main_module))
    except SystemExit as ex:
        status = _system_exit_status(ex)
    except BaseException as ex:  # noqa: BLE001 - what the interpreter does with an uncaught one
        status = _uncaught(ex, main_module)
    else:
        _forget_file(main_module)
        status = 0
    _finish(status)


def _system_exit_status(ex):
    """The exit status the interpreter gives a SystemExit: its code if an int, 0 for None,
    else 1 once the code has been written to sys.stderr."""
    code = ex.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _flush_std(status):
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001 - the interpreter reports it and exits with 120
            status = 120
    return status


def _finish(status):
    """End the process as the interpreter finalizes: non-daemon threads joined, atexit
    callbacks run, standard streams flushed (120 if that fails), the module's own objects
    released (their finalizers run), streams flushed again.  The preloaded heap, shared with
    the runner, is not torn down: nothing a module made lives there to be finalized, and
    tearing it down would copy every page of it."""
    import gc
    import os

    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # noqa: BLE001
            pass
    import atexit

    atexit._run_exitfuncs()
    status = _flush_std(status)
    collect, exit_now = gc.collect, os._exit
    collect()
    # The script's namespace and the modules it imported from its payload, last first.
    payload = _State.current_zip + "/"
    keep = _State.kept_modules
    ours = [n for n, m in sys.modules.items() if n == "__main__" or (
        n not in keep and _State.current_zip and (getattr(getattr(m, "__spec__", None), "origin", None) or "").startswith(payload))]
    for name in reversed(ours):
        namespace = getattr(sys.modules.get(name), "__dict__", None)
        if namespace is None:
            continue
        for underscore in (True, False):
            for key in [k for k in namespace if k.startswith("_") == underscore and k != "__builtins__"]:
                namespace[key] = None
    collect()
    if _MODSIDE is not None:
        _MODSIDE.flush()
    exit_now(_flush_std(status))


def _enter_main(request, filename, from_stdin):
    import os

    sys.argv = [""] if from_stdin else [os.fsdecode(a) for a in request.argv[1:]]
    if hasattr(sys, "orig_argv"):  # 3.10 and later: an older interpreter has none to set
        sys.orig_argv = [os.fsdecode(a) for a in request.argv]
    if _SAFE_PATH:
        sys.path = list(_STARTUP_PATH_TAIL)
    else:
        head = "" if from_stdin else os.path.dirname(os.path.realpath(filename))
        sys.path = [head, *_STARTUP_PATH_TAIL]
    keep = _State.kept_modules
    for name in [n for n in sys.modules if n not in keep]:
        del sys.modules[name]
    main_module = type(sys)("__main__")
    main_module.__annotations__ = {}
    main_module.__builtins__ = _BUILTINS
    if from_stdin:
        main_module.__loader__ = sys.modules["_frozen_importlib"].BuiltinImporter
    else:
        main_module.__loader__ = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", filename)
    main_module.__file__ = filename
    main_module.__cached__ = None
    sys.modules["__main__"] = main_module
    sys.meta_path.insert(0, _Retarget())


def _forget_file(main_module):
    # The interpreter removes the __file__ and __cached__ it set once the script has run.
    namespace = vars(main_module)
    namespace.pop("__file__", None)
    namespace.pop("__cached__", None)


def _uncaught(ex, main_module):
    """Print an uncaught exception as the interpreter does (through sys.excepthook, from the
    script's own frame) and end the process as it would."""
    import os
    import signal

    tb = ex.__traceback__.tb_next if ex.__traceback__ is not None else None
    ex.__traceback__ = tb
    sys.last_type, sys.last_value, sys.last_traceback = type(ex), ex, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = ex
    try:
        sys.excepthook(type(ex), ex, tb)
    except BaseException:  # noqa: BLE001
        pass
    _forget_file(main_module)
    if isinstance(ex, KeyboardInterrupt):
        # The interpreter finalizes, then ends itself with SIGINT.
        import atexit
        import threading

        threading._shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return 1


class _Retarget:
    """Points the preloaded ansible packages and modules at this child's payload when the
    wrapper imports its loader module, then leaves sys.meta_path."""

    def find_spec(self, name, path=None, target=None):
        if name != _LOADER:
            return None
        sys.meta_path.remove(self)
        _retarget(sys.path[0])
        return None

    def invalidate_caches(self):
        pass


def _retarget_plan():
    """Per preloaded module from the probe payload: (module, member, whether a package, the
    payload directory its loader serves), worked out once in the runner."""
    import os

    prefix = _State.probe_zip + "/"
    plan = []
    for name in _State.preloaded:
        module = sys.modules[name]
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None) or ""
        if origin.startswith(prefix):
            member = origin[len(prefix):]
            is_package = spec.submodule_search_locations is not None
            plan.append((module, member, is_package, os.path.dirname(os.path.dirname(member) if is_package else member)))
    return plan


def _directory_importer(root, directory):
    """What ``zipimporter(ARCHIVE/DIRECTORY/)`` makes, from the archive's own importer
    ``root``: the same attributes, in the same order, with the directory as its prefix (the
    constructor would find the archive again by a stat of each path component first)."""
    importer = object.__new__(type(root))
    vars(importer).update(vars(root))
    importer.prefix = directory + "/"
    return importer


def _retarget(payload_zip):
    """The preloaded modules as this payload's own imports would have made them: paths,
    package search paths, and one zipimporter per directory (as the path hooks make them)."""
    import zipimport

    old = _State.probe_zip
    _State.current_zip = payload_zip
    zipimport._compile_source = _cached_compile
    loaders = {}
    root = None
    for module, member, is_package, directory in _State.retarget_plan:
        key = payload_zip + "/" + directory if directory else payload_zip
        loader = loaders.get(key)
        if loader is None:
            if directory and root is not None:
                loader = _directory_importer(root, directory)
            else:
                loader = zipimport.zipimporter(key + "/" if directory else key)
                root = root if directory else loader
            loaders[key] = loader
            sys.path_importer_cache.setdefault(key, loader)
        spec = module.__spec__
        spec.origin = payload_zip + "/" + member
        spec.loader = loader
        if getattr(module, "__file__", None) is not None:
            module.__file__ = spec.origin
        module.__loader__ = loader
        if is_package:  # the spec's locations, and __path__ (extend_path makes it a copy)
            for locations in {id(x): x for x in (spec.submodule_search_locations, getattr(module, "__path__", None))}.values():
                if isinstance(locations, list):
                    locations[:] = [payload_zip + p[len(old):] if p.startswith(old + "/") else p for p in locations]
    toc = zipimport._zip_directory_cache.get(payload_zip)
    if root is not None and toc is not None and _BYTECODE_SHIM in toc:
        # What the payload's shim does as the target imports the ``ansible`` package from it (here
        # imported already): the shim's own function, checked before the script ran.
        loads = _bytecode_loads(root.get_data(_BYTECODE_SHIM))
        if loads:
            ansible = sys.modules["ansible"]
            type(_retarget)(loads, vars(ansible))(payload_zip)


# --- compiled wrapper scripts, kept by the runner ----------------------------------------------
# A wrapper script is this controller's wrapper code, then the call with the payload's values, one
# per line: the module's name, its serialization profile, the payload's date, its arguments as
# ``params='<JSON>'``, and the payload zip (the bulk of the script).  The same module's scripts
# differ in their arguments only, and compiling one costs as much as a small module's run.  A
# child that compiles a script (after the script passed every check) sends the code to the
# runner, keyed by the script with its arguments' literal cut out and that literal's length.  A
# later script with the same key compiles to that code with one constant, the arguments string,
# replaced: its source differs in that literal only, and the literal has the same length, so
# the same bytecode, line table and every other constant follow.  Where the arguments string
# could share its object with another constant of the script (an equal string), or would be
# interned (identifier characters only), the script is compiled as usual.

_WRAPPERS = {}  # (text before the arguments, text after them, literal's length) -> (code, slot, other strings)
_WRAPPERS_LIMIT = 32
# What children have compiled or checked once: hashes of wrapper keys, of (member, source)
# pairs and of payloads.  A child sends code (AARW, AARC) or a checked payload (AARV) only for
# what another child compiled or checked before it; the first one sends the hash alone (AARS).
# Keeping code costs the runner a compile of the script (to prove the template) and both ends a
# copy of the code, which pays only where the same script or file comes again: on a host's
# runner most of a playbook's modules come once.  The hash is the runner's own (children share
# its hash secret); a collision only sends something early.
_SEEN = set()
_SEEN_LIMIT = 8192


def _params_span(source, at):
    """Where the arguments' string literal is in a wrapper script (start, end), or None."""
    if at < 0:
        return None
    start = source.find(b"\nparams=", at)
    if start < 0:
        return None
    start += len(b"\nparams=")
    end = source.find(b"\n", start) - 1
    if end < start + 2 or source[end:end + 1] != b"," or source[start:start + 1] not in (b"'", b'"'):
        return None
    if source[end - 1:end] != source[start:start + 1]:
        return None
    return start, end


def _literal_value(literal):
    """The str a repr'd string literal stands for, or None."""
    if b"\\" not in literal and literal[:1] == b"'" and b"'" not in literal[1:-1]:
        try:
            return literal[1:-1].decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        value = eval(compile(literal, "<params>", "eval", dont_inherit=True), {"__builtins__": {}})  # noqa: S307 - a string literal of the script the child runs anyway
    except Exception:  # noqa: BLE001
        return None
    return value if type(value) is str else None


def _name_chars_only(value):
    return value.isascii() and value.replace("_", "a").isalnum()


def _strings_of(code, skip=None):
    """Every str constant of a code object and those nested in it, but co_consts[skip]."""
    code_type = type(code)
    found = set()
    for index, const in enumerate(code.co_consts):
        if index == skip:
            continue
        if type(const) is str:
            found.add(const)
        elif type(const) is code_type:
            found |= _strings_of(const)
        elif type(const) in (tuple, frozenset):
            found.update(c for c in const if type(c) is str)
    return found


# The line table's attribute: co_lnotab before Python 3.10 (deprecated from 3.12 on).
_LINE_TABLE = "co_linetable" if sys.version_info >= (3, 10) else "co_lnotab"


def _code_shape(code):
    """Everything of a code object that compiling its source determines, nested ones included
    (co_exceptiontable and co_qualname exist from Python 3.11 on)."""
    code_type = type(code)
    return (
        code.co_code, getattr(code, _LINE_TABLE), getattr(code, "co_exceptiontable", None), code.co_names,
        code.co_varnames, code.co_cellvars, code.co_freevars, code.co_filename, code.co_name,
        getattr(code, "co_qualname", None),
        code.co_firstlineno, code.co_flags, code.co_argcount, code.co_posonlyargcount,
        code.co_kwonlyargcount, code.co_stacksize, code.co_nlocals,
        tuple(_code_shape(c) if type(c) is code_type else (type(c), c) for c in code.co_consts),
    )


def _wrapper_key(source, at, params):
    start, end = params
    return source[at:start], source[end:], end - start


def _wrapper_code(source, at, params, filename):
    """The code of a script whose template the runner keeps, or None."""
    if params is None or not _WRAPPERS or at != len(_State.wrapper_head):
        return None
    kept = _WRAPPERS.get(_wrapper_key(source, at, params))
    if kept is None or not source.startswith(_State.wrapper_head):
        return None
    literal = source[params[0]:params[1]]
    if _TRACEBACKS_ASKED.search(literal):
        return None
    value = _literal_value(literal)
    if value is None or value in kept[2] or _name_chars_only(value):
        return None
    code, slot, _others = kept
    consts = list(code.co_consts)
    consts[slot] = value
    return _rename(code.replace(co_consts=tuple(consts)), filename)


def _wrapper_template(code, params_value):
    """(slot of the arguments string in co_consts, the code's other strings), or None."""
    if params_value is None or _name_chars_only(params_value):
        return None
    slots = [i for i, c in enumerate(code.co_consts) if type(c) is str and c == params_value]
    if len(slots) != 1:
        return None
    others = frozenset(_strings_of(code, slots[0]))
    if params_value in others:
        return None
    return slots[0], others


def _report_wrapper(source, at, params, code):
    import marshal

    if params is None:
        return
    template = _wrapper_template(code, _literal_value(source[params[0]:params[1]]))
    if template is not None:
        key = _wrapper_key(source, at, params)
        if not _seen_before(hash(key)):
            return
        try:
            _report(b"AARW", marshal.dumps((*key, code, template[0])))
        except ValueError:
            pass


def _keep_wrapper(body):
    import marshal

    try:
        before, after, length, code, slot = marshal.loads(body[4:])
    except (ValueError, TypeError, EOFError):
        return
    if not (type(before) is bytes and type(after) is bytes and type(length) is int and type(slot) is int
            and type(code) is type(_keep_wrapper.__code__) and before.startswith(_MAIN_CALL)
            and 0 <= slot < len(code.co_consts) and type(code.co_consts[slot]) is str):
        return
    template = _wrapper_template(code, code.co_consts[slot])
    if template is None or template[0] != slot or length < 4:
        return
    # A script of this key with other arguments must compile to the code with that one constant
    # replaced (nothing else in it is the arguments string): compile one and compare.
    other = "{" + "~" * (length - 4) + "}"
    if other in template[1]:
        return
    source = _State.wrapper_head + before + ("'" + other + "'").encode() + after
    try:
        compiled = compile(source, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return
    consts = list(code.co_consts)
    consts[slot] = other
    if _code_shape(compiled) != _code_shape(code.replace(co_consts=tuple(consts))):
        return
    if len(_WRAPPERS) >= _WRAPPERS_LIMIT:
        del _WRAPPERS[next(iter(_WRAPPERS))]  # the oldest
    _WRAPPERS[(before, after, length)] = (code, slot, template[1])


# --- compiled code of payload files, kept by the runner ---------------------------------------
# A payload's files that the runner did not preload are compiled in each child that imports
# them.  A child that compiles one sends the code to the runner, which keeps it for the next
# children: they get the same code object (renamed to their own payload path) for the same
# member and the same source bytes, instead of compiling it again.

_CODE = {}  # payload member -> (source bytes, code)
_CODE_LIMIT = 4096
_VERIFIED = set()  # payloads (base64, as in scripts) whose preloaded files matched
_VERIFIED_LIMIT = 512
_ORIGINAL_COMPILE = None
_MODSIDE = None  # the module-side paths (_runner_modside.py), once switched on


def _rename(code, filename):
    code_type = type(code)
    consts = code.co_consts
    if any(type(c) is code_type for c in consts):
        consts = tuple(_rename(c, filename) if type(c) is code_type else c for c in consts)
        return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)


_LAST_COMPILE = [None]  # (pathname, source, the other arguments, code) of the last quiet compile


def _compile_counting(compile_source, pathname, source, more):
    """The code ``compile_source`` makes, and how many warnings its compile showed (a
    ``SyntaxWarning``: an invalid escape sequence from Python 3.12 on, ``return`` in ``finally``
    from 3.14 on), counted as they are shown; None where that cannot be told (the ``warnings``
    module not imported: the interpreter prints them itself)."""
    warnings = sys.modules.get("warnings")
    show = getattr(warnings, "_showwarnmsg", None)
    if show is None:
        return compile_source(pathname, source, *more), None
    shown = [0]

    def counted(message):
        shown[0] += 1
        return show(message)

    warnings._showwarnmsg = counted
    try:
        code = compile_source(pathname, source, *more)
    finally:
        warnings._showwarnmsg = show
    return code, shown[0]


def _compile_noting(compile_source, pathname, source, more):
    """zipimport compiles a module's source twice as it imports it (for ``get_filename``, which
    drops the code, then for ``get_code``): the second compile of the same file and bytes in a
    row gives the first's code object, which is what a new compile would make, where the first
    showed no warning (a fresh interpreter shows them at each compile).  Returns the code and
    whether its compile showed none.  ``more``: the module's name, which zipimport passes on
    from Python 3.15 on (``compile(module=...)``)."""
    last = _LAST_COMPILE[0]
    if last is not None and last[0] == pathname and last[1] == source and last[2] == more:
        return last[3], True
    code, shown = _compile_counting(compile_source, pathname, source, more)
    quiet = shown == 0
    _LAST_COMPILE[0] = (pathname, source, more, code) if quiet else None
    return code, quiet


def _compile_once(compile_source, pathname, source, *more):
    return _compile_noting(compile_source, pathname, source, more)[0]


def _cached_compile(pathname, source, *more):
    prefix = _State.current_zip + "/"
    if not pathname.startswith(prefix):
        return _compile_once(_ORIGINAL_COMPILE, pathname, source, *more)
    member = pathname[len(prefix):]
    kept = _CODE.get(member)
    if kept is not None and kept[0] == source:
        return _rename(kept[1], pathname)
    last = _LAST_COMPILE[0]
    if last is not None and last[0] == pathname and last[1] == source and last[2] == more:
        return last[3]
    code, quiet = _compile_noting(_ORIGINAL_COMPILE, pathname, source, more)
    if quiet:  # code whose compile shows warnings is never kept: each child compiles it, and shows them
        _report_code(member, source, code)
    return code


def _report_code(member, source, code):
    import marshal

    if not _seen_before(hash((member, bytes(source)))):
        return
    try:
        _report(b"AARC", marshal.dumps((member, bytes(source), code)))
    except ValueError:
        pass


def _seen_before(digest):
    """Whether a child compiled what this hash stands for before; if not, the runner is told it
    has now."""
    import struct

    if digest in _SEEN:
        return True
    _report(b"AARS", struct.pack("<q", digest))
    return False


def _report(kind, payload):
    """Tell the runner something it keeps for later children (a new connection, closed at
    once; never fails the module)."""
    import struct

    socket = _State.socket_module
    try:
        body = kind + payload
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as connection:
            connection.settimeout(2)
            connection.connect(_State.socket_path)
            connection.sendall(struct.pack("<I", len(body)) + body)
    except OSError:
        pass  # the next child does the work again


def _keep_code(body):
    import marshal

    if len(_CODE) >= _CODE_LIMIT:
        return
    try:
        member, source, code = marshal.loads(body[4:])
    except (ValueError, TypeError, EOFError):
        return
    if isinstance(member, str) and isinstance(source, bytes) and type(code) is type(_keep_code.__code__):
        _CODE[member] = (source, code)


# The runner's own inherited descriptors (lifeline, lock) are moved to this number and up before
# the preload, which then opens its files at the numbers a fresh interpreter's imports would.
_OWN_FDS_FROM = 64


def _out_of_the_way(fd):
    """``fd`` (one of the runner's own, 3 and up) moved to the first free number from
    _OWN_FDS_FROM on; the number it has now where it cannot be moved (a lower limit)."""
    import os

    if fd < 3 or fd >= _OWN_FDS_FROM:
        return fd
    for target in range(_OWN_FDS_FROM, _OWN_FDS_FROM + 64):
        try:
            os.fstat(target)
        except OSError:
            break  # free
    else:
        return fd
    try:
        os.dup2(fd, target, inheritable=os.get_inheritable(fd))
    except OSError:
        return fd
    os.close(fd)
    return target


def _open_fds(but):
    """The descriptors open now, but ``but``: those the preload left open (Python 3.14's
    ``_ctypes`` makes a closure as it is imported, and libffi keeps its own file open for its
    trampolines from then on).  A fresh interpreter has them open from that import on."""
    import os

    try:
        listed = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return frozenset()
    found = set()
    for fd in listed:
        if fd in but:
            continue
        try:
            os.fstat(fd)
        except OSError:
            continue  # the listing's own, closed by now
        found.add(fd)
    return frozenset(found)


def _close_all_but(keep):
    """Close every inherited file descriptor but ``keep``: whatever started the runner, it
    must hold no other end of its lifeline (it would never see the lifeline end), nor anything
    a child could inherit."""
    import os

    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = max(low, fd + 1)
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _load_modside(socket_path):
    """Switch the module-side paths on in the preloaded modules, once, before any child forks
    (``_runner_modside.py`` beside this file, loaded by path); the children inherit them."""
    import os

    global _MODSIDE
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_runner_modside.py")
    module = type(sys)("_ansible_accel_runner_modside")
    module.__file__ = path
    try:
        with open(path, "rb") as handle:
            exec(compile(handle.read(), path, "exec", dont_inherit=True), vars(module))
    except (OSError, SyntaxError):
        return
    module.install(_State.preloaded, _State.preloaded_files, socket_path)
    _MODSIDE = module


def _own_argv0():
    """The interpreter's argv[0] as it was started (``sys.orig_argv``, which Python 3.8 and 3.9
    lack: there, the first entry of ``/proc/self/cmdline``)."""
    if hasattr(sys, "orig_argv"):
        return sys.orig_argv[0]
    import os

    with open("/proc/self/cmdline", "rb") as handle:
        return os.fsdecode(handle.read().split(b"\0", 1)[0])


def main():
    import os

    socket_path, lifeline_fd, lock_fd, probe_path, log_path = sys.argv[1:6]
    lifeline_fd, lock_fd = int(lifeline_fd), int(lock_fd)
    _close_all_but({0, 1, 2, lifeline_fd, lock_fd})
    lifeline_fd, lock_fd = _out_of_the_way(lifeline_fd), _out_of_the_way(lock_fd)
    _State.interpreter = _own_argv0()
    _State.fallbacks_path = socket_path + ".fallbacks"
    _State.socket_path = socket_path
    try:
        import zipimport

        global _ORIGINAL_COMPILE
        _ORIGINAL_COMPILE = zipimport._compile_source
        zipimport._compile_source = lambda pathname, source, *more: _compile_once(_ORIGINAL_COMPILE, pathname, source,
                                                                                   *more)
        try:
            _preload(probe_path)
            _State.kept_fds = _open_fds({0, 1, 2, lifeline_fd, lock_fd})
        finally:
            zipimport._compile_source = _ORIGINAL_COMPILE
            _LAST_COMPILE[0] = None
        _load_modside(socket_path)
        import signal
        import socket
        _State.socket_module = socket
        import re

        global _TRACEBACKS_ASKED
        # The module arguments' "_ansible_tracebacks_for": [...] (JSON, repr'd in the wrapper's
        # call), not empty.
        _TRACEBACKS_ASKED = re.compile(rb'_ansible_tracebacks_for\\*"\s*:\s*\[\s*\\*"')

        start_env = _read_env_file(probe_path + ".env")
        _State.significant = {k: v for k, v in start_env.items() if _significant(k)}
        now = os.environb.get(b"LC_CTYPE")
        if now != start_env.get(b"LC_CTYPE"):
            _State.coerced_ctype = now
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_IGN)
        os.chdir("/")
        server = Server(socket_path, lifeline_fd, lock_fd, log_path)
    except BaseException as ex:  # noqa: BLE001 - whatever stops the start stops the runner, said once
        _fail(socket_path, log_path, f"the runner could not start: {type(ex).__name__}: {ex}")
        raise SystemExit(3) from None
    for path in (probe_path, probe_path + ".env"):
        try:
            os.unlink(path)
        except OSError:
            pass
    child = server.serve()
    if child is not None:
        child.run()  # ends the process as the module's interpreter would have ended


if __name__ == "__main__":
    main()
