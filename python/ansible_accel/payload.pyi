import typing as t
import zipfile

__all__ = ["PayloadZipFile", "build_zip", "native_zlib_matches"]

ZIP_STORED: int
ZIP_DEFLATED: int

def build_zip(
    entries: t.Iterable[tuple[str, bytes | bytearray | str]],
    date_time: t.Sequence[int],
    compression: int,
) -> bytes: ...
def native_zlib_matches() -> bool: ...

class PayloadZipFile:
    fp: t.IO[bytes] | None
    mode: str
    compression: int
    compresslevel: None
    debug: int
    filelist: list[zipfile.ZipInfo]
    NameToInfo: dict[str, zipfile.ZipInfo]
    comment: bytes
    def __init__(self, fp: t.IO[bytes], compression: int = ...) -> None: ...
    def writestr(
        self,
        zinfo_or_arcname: zipfile.ZipInfo | str,
        data: bytes | bytearray | str,
        compress_type: int | None = None,
        compresslevel: int | None = None,
    ) -> None: ...
    def close(self) -> None: ...
    def namelist(self) -> list[str]: ...
    def infolist(self) -> list[zipfile.ZipInfo]: ...
    def getinfo(self, name: str) -> zipfile.ZipInfo: ...
    def hand_over(self) -> zipfile.ZipFile: ...
    def __enter__(self) -> PayloadZipFile: ...
    def __exit__(self, *exc_info: object) -> None: ...
    def __getattr__(self, name: str) -> t.Any: ...
