"""An internal failure of a native engine (a Rust panic, caught at the pyo3 boundary and
answered as a decline with its reason, or raised as the engine's exception) never reaches the
caller as such: the Python side answers with ansible-core's own code (or zipfile's), counted
as a fallback where it is counted.  A real panic cannot be provoked from Python, so the entry
points are replaced by ones answering exactly what the glue answers."""

from __future__ import annotations

import io
import zipfile

import pytest

from ansible_accel import _counters, _native, argspec, masking, payload

ENTRIES = [("a.py", b"print(1)\n" * 300), ("b/c.py", b"x = 2\n"), ("a.py", b"again")]
WHEN = (2024, 5, 6, 7, 8, 10)


def _zipfile(entries, compression):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, WHEN)
            info.compress_type = compression
            archive.writestr(info, data)
    return buffer.getvalue()


def _failing(*args, **kwargs):
    return "the payload archive was handed over to zipfile"  # the writer's answer after a panic


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_build_zip_internal_failure_gives_zipfile_bytes(monkeypatch, compression):
    reason = "build_zip: internal error in the native writer"
    monkeypatch.setattr(_native, "payload_build_zip", lambda *args: reason)
    before = _counters.snapshot()["payload"]["fallback"].get(reason, 0)
    assert payload.build_zip(ENTRIES[:2], WHEN, compression) == _zipfile(ENTRIES[:2], compression)
    assert _counters.snapshot()["payload"]["fallback"].get(reason, 0) == before + 1


class _WriterFailingAt:
    """The native writer, failing at its ``n``-th ``add`` (or at ``finish`` when n is None)."""

    def __init__(self, n):
        self.n = n

    def __call__(self, *args):
        real = _RealWriter(*args)
        fail_at = self.n

        class Writer:
            calls = 0

            def add(self, *a):
                Writer.calls += 1
                if fail_at is not None and Writer.calls == fail_at:
                    return _failing()
                return real.add(*a)

            def finish(self, comment):
                if fail_at is None:
                    return _failing()
                return real.finish(comment)

        return Writer()


_RealWriter = _native.PayloadZipWriter


@pytest.mark.parametrize("fail_at", [1, 2, None])
def test_payload_zipfile_internal_failure_hands_over_to_zipfile(monkeypatch, fail_at):
    monkeypatch.setattr(_native, "PayloadZipWriter", _WriterFailingAt(fail_at))
    entries = ENTRIES[:2]
    buffer = io.BytesIO()
    archive = payload.PayloadZipFile(buffer, zipfile.ZIP_DEFLATED)
    for name, data in entries:
        info = zipfile.ZipInfo(name, WHEN)
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, data)
    archive.close()
    assert buffer.getvalue() == _zipfile(entries, zipfile.ZIP_DEFLATED)
    assert archive._delegate is not None  # zipfile finished the archive


class _WriterFailingIn:
    """The native writer, its ``method`` answering as the glue does after a panic inside."""

    def __init__(self, method):
        self.method = method

    def __call__(self, *args):
        real = _RealWriter(*args)
        method = self.method

        class Writer:
            def __getattr__(self, name):
                return _failing if name == method else getattr(real, name)

        return Writer()


def _counted_archive(buffer, compression):
    from ansible_accel._integrations.payload import _CountedPayloadZipFile

    return _CountedPayloadZipFile(buffer, compression)


def _handed_over_count():
    return _counters.snapshot()["payload"]["fallback"].get(_failing(), 0)


def _zipinfos(archive):
    fields = ("filename", "date_time", "compress_type", "header_offset", "CRC", "compress_size", "file_size",
              "flag_bits", "external_attr", "create_version", "extract_version")  # fmt: skip
    return [tuple(getattr(i, f) for f in fields) for i in archive.infolist()]


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_writestr_many_internal_failure_hands_over_to_zipfile(monkeypatch, compression):
    """``add_many`` declining (a panic inside): zipfile writes the batch after the entries
    written before it, counted as the archive handed over."""
    monkeypatch.setattr(_native, "PayloadZipWriter", _WriterFailingIn("add_many"))

    def items():
        made = []
        for name, data in [("first.py", b"first\n"), *ENTRIES[:2]]:
            info = zipfile.ZipInfo(name, WHEN)
            info.compress_type = compression
            made.append((info, data))
        return made

    before = _handed_over_count()
    buffer, reference_buffer = io.BytesIO(), io.BytesIO()
    archive = _counted_archive(buffer, compression)
    reference = zipfile.ZipFile(reference_buffer, "w", compression)
    first, *batch = items()
    archive.writestr(*first)
    archive.writestr_many(batch)
    first, *batch = items()
    reference.writestr(*first)
    for info, data in batch:
        reference.writestr(info, data)
    assert archive._delegate is not None  # zipfile took the archive
    assert _zipinfos(archive) == _zipinfos(reference)
    archive.close()
    reference.close()
    assert buffer.getvalue() == reference_buffer.getvalue()
    assert _handed_over_count() == before + 1


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_writestr_kept_internal_failure_hands_over_to_zipfile(monkeypatch, compression):
    """``add_block`` declining (a panic inside): nothing kept is written, zipfile takes the
    empty archive and the caller writes the entries the ordinary way."""
    def items():
        made = []
        for name, data in ENTRIES[:2]:
            info = zipfile.ZipInfo(name, WHEN)
            info.compress_type = compression
            made.append((info, data))
        return made

    first = payload.PayloadZipFile(io.BytesIO(), compression)
    first.writestr_many(items())
    kept = first.keep_entries()
    assert kept is not None
    monkeypatch.setattr(_native, "PayloadZipWriter", _WriterFailingIn("add_block"))
    before = _handed_over_count()
    buffer = io.BytesIO()
    archive = _counted_archive(buffer, compression)
    assert archive.writestr_kept(kept, WHEN, [data for _, data in items()]) is False
    assert archive._delegate is not None and archive.namelist() == []
    archive.writestr_many(items())  # what the caller does where kept entries were not written
    archive.close()
    assert buffer.getvalue() == _zipfile(ENTRIES[:2], compression)
    assert _handed_over_count() == before + 1


class _BrokenFastPath:
    """Stands in for the native ArgspecFastPath, failing as an internal error would."""

    def validate(self, *args):
        raise RuntimeError("internal error in native argspec validate")

    def compiled(self, validator):
        raise RuntimeError("internal error in native argspec compile")


def test_argspec_internal_failure_is_a_counted_fallback(accel, monkeypatch):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    argspec._fast_path()
    monkeypatch.setattr(argspec, "_fast", _BrokenFastPath())
    spec = {"n": {"type": "int"}}
    before = _counters.snapshot()["argspec"]
    result = ArgumentSpecValidator(spec).validate({"n": "3"})
    assert result.validated_parameters == {"n": 3} and not result.error_messages
    after = _counters.snapshot()["argspec"]
    assert after["native"] == before["native"]
    assert after["fallback"].get("internal: native validate error", 0) == before["fallback"].get("internal: native validate error", 0) + 1
    assert after["fallback"].get("spec: native compile error", 0) == before["fallback"].get("spec: native compile error", 0) + 1
