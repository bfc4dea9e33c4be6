"""Writes the golden archives the Rust tests compare against, with CPython's zipfile.

Run from this directory with any Python >= 3.11: ``python make_fixtures.py``.  The inputs are
made by the same two generators as in ``../tests.rs``, so only the archives are stored.
"""

import io
import zipfile

MASK64 = (1 << 64) - 1


def text(n: int) -> bytes:
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"line %d: the quick brown fox jumps over the lazy dog\n" % i
        i += 1
    return bytes(out[:n])


def noise(n: int, seed: int) -> bytes:
    x = seed
    out = bytearray()
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & MASK64
        out.append(x >> 56)
    return bytes(out)


ANSIBLE_LIKE = [
    ("ansible/__init__.py", text(200)),
    ("ansible/module_utils/__init__.py", text(80)),
    ("ansible/module_utils/basic.py", text(100_000)),
    ("ansible/modules/ping.py", noise(5000, 7)),
    ("ansible/modules/__init__.py", b""),
]
ODD_NAMES = [
    ("\u00fcn\u00efcode/\u0444\u0430\u0439\u043b.py", text(300)),
    ("cut\0here.py", noise(10, 1)),
    ("dir/", b""),
]
SMALL = [(f"f{i}.bin", noise(400 * i, i) + text(300 * i)) for i in range(5)]


def build(entries, date_time, compression, *, zip64_limit=None, file_count_limit=None) -> bytes:
    saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    if zip64_limit is not None:
        zipfile.ZIP64_LIMIT = zip64_limit
    if file_count_limit is not None:
        zipfile.ZIP_FILECOUNT_LIMIT = file_count_limit
    try:
        buf = io.BytesIO()
        zf = zipfile.ZipFile(buf, mode="w", compression=compression)
        for name, data in entries:
            info = zipfile.ZipInfo(filename=name, date_time=date_time)
            info.compress_type = zf.compression
            zf.writestr(info, data)
        zf.close()
        return buf.getvalue()
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved


FIXTURES = {
    "empty.zip": build([], (2024, 1, 1, 0, 0, 0), zipfile.ZIP_STORED),
    "ansible_like_stored.zip": build(ANSIBLE_LIKE, (2024, 2, 29, 13, 45, 59), zipfile.ZIP_STORED),
    "ansible_like_deflated.zip": build(ANSIBLE_LIKE, (2024, 2, 29, 13, 45, 59), zipfile.ZIP_DEFLATED),
    "odd_names_deflated.zip": build(ODD_NAMES, (1980, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED),
    "spilling_date_stored.zip": build(ODD_NAMES, (2000, 13, 40, 25, 70, 99), zipfile.ZIP_STORED),
    "zip64_stored.zip": build(SMALL, (2030, 6, 15, 8, 0, 1), zipfile.ZIP_STORED, zip64_limit=1000, file_count_limit=3),
    "zip64_deflated.zip": build(SMALL, (2030, 6, 15, 8, 0, 1), zipfile.ZIP_DEFLATED, zip64_limit=1000, file_count_limit=3),
}

if __name__ == "__main__":
    for name, data in FIXTURES.items():
        with open(name, "wb") as f:
            f.write(data)
        print(name, len(data))
