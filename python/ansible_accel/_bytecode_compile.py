"""Compiling a payload's Python sources into ``.pyc`` data, exactly as zipimport compiles them.

zipimport compiles a ``.py`` entry with ``compile(source, path, 'exec', dont_inherit=True)``
after turning ``\\r\\n`` and ``\\r`` into ``\\n``.  ``compile_pyc`` does the same (at
optimization level 0, the level of a target run without ``-O``), under a placeholder file
name that the payload's shim replaces on the target (see ``_bytecode_shim``), and wraps the
code in an *unchecked hash-based* pyc header (PEP 552): whatever the entries' dates and the
target's time zone, zipimport loads it without reading the ``.py`` entry beside it.  Unchecked
is safe here because a payload is one archive whose entries are final when their bytecode is
added: each ``.pyc`` is made from the very bytes of the ``.py`` beside it (its header carries
that source's hash), so checking again at every import (which decompresses and hashes every
source, twice per module) would only repeat what building the payload ensured.  A target run
with ``--check-hash-based-pycs always`` still checks, and finds the hashes equal.

A source that does not compile, or that warns when compiled (an invalid escape sequence...),
gets no bytecode: the target compiles it as before, with its own error or warning.

This file also runs, by path, under other local interpreters as a compile server
(``python -I -S _bytecode_compile.py``; frames on stdin/stdout, see ``serve``).  So it imports
nothing from its package and stays valid Python 3.8.
"""

import marshal
import struct
import sys
import warnings
from importlib import util as _importlib_util

# Hash-based pyc (PEP 552): bit 0 "hash-based"; bit 1 "check the source" is left clear.
UNCHECKED_HASH_FLAGS = 0b01
# co_filename of compiled code until the target's shim gives it the entry's real path.
PLACEHOLDER_FILENAME = "<ansible-accel bytecode>"
HELLO = b"ansible-accel bytecode server 1\n"

MAGIC = _importlib_util.MAGIC_NUMBER
# The full release: compilers of one magic number may still differ between releases.
RELEASE = sys.version.split()[0]


# A request to compile one source but check it against another's hash (the payload's shim,
# checked against the ``ansible/__init__.py`` it stands for).  No source starts with NUL.
_SUBSTITUTE = b"\0substitute\0"


def substitute_request(code_source, checked_source):
    """The request for bytecode of ``code_source`` that zipimport loads for ``checked_source``."""
    return _SUBSTITUTE + struct.pack("<I", len(code_source)) + code_source + checked_source


def compile_pyc(source):
    """``(True, pyc data)`` for ``source`` (bytes, or a ``substitute_request``), or
    ``(False, reason)`` when the target must compile it itself."""
    checked = source
    if source.startswith(_SUBSTITUTE):
        start = len(_SUBSTITUTE) + 4
        (size,) = struct.unpack("<I", source[len(_SUBSTITUTE) : start])
        source, checked = source[start : start + size], source[start + size :]
    normalized = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = compile(normalized, PLACEHOLDER_FILENAME, "exec", dont_inherit=True, optimize=0)
        except Exception as ex:  # noqa: BLE001 - SyntaxError, ValueError (NUL), RecursionError...
            return False, "does not compile (%s)" % type(ex).__name__
    if caught:
        return False, "warns when compiled"
    header = MAGIC + struct.pack("<I", UNCHECKED_HASH_FLAGS) + _importlib_util.source_hash(checked)
    return True, header + marshal.dumps(code)


def _read_exact(stream, size):
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def serve(stdin, stdout):
    """Answer batches until stdin closes.  Hello: HELLO, 4-byte magic, 1-byte length and the
    release ("3.12.1").  Request: u32 count, then per source u32 length and bytes.  Answer: per
    source a status byte (1 pyc, 0 reason) and u32 length and bytes."""
    version = RELEASE.encode()
    stdout.write(HELLO + MAGIC + bytes([len(version)]) + version)
    stdout.flush()
    while True:
        try:
            (count,) = struct.unpack("<I", _read_exact(stdin, 4))
            sources = []
            for _ in range(count):
                (size,) = struct.unpack("<I", _read_exact(stdin, 4))
                sources.append(_read_exact(stdin, size))
        except EOFError:
            return
        answer = []
        for source in sources:
            ok, data = compile_pyc(source)
            if not ok:
                data = data.encode()
            answer.append(bytes([1 if ok else 0]) + struct.pack("<I", len(data)) + data)
        stdout.write(b"".join(answer))
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
