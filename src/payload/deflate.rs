//! One entry's CRC and compressed bytes, computed the way zipfile's `_ZipWriteFile` does.
//!
//! zipfile compresses with `zlib.compressobj(Z_DEFAULT_COMPRESSION, DEFLATED, -15)`
//! (memLevel 8, default strategy), feeds the whole data in one `compress()` (Z_NO_FLUSH)
//! and then `flush()` (Z_FINISH).  flate2's zlib backend calls `deflateInit2` with the same
//! window, memLevel and strategy; level 6 is what zlib makes of Z_DEFAULT_COMPRESSION.  The
//! same two phases are driven here, through the system zlib, so the stream is the same.

use std::sync::Arc;

use flate2::{Compress, Compression, FlushCompress, Status};

use super::disk_cache::DiskCache;
use super::{cache, Method, ZipError};

/// What zlib turns `Z_DEFAULT_COMPRESSION` into.
const ZLIB_DEFAULT_LEVEL: u32 = 6;

/// One entry's data ready to be written: its CRC, size, and the bytes to store (None when
/// they are the data itself, for `ZIP_STORED`; shared with the process cache otherwise).
#[derive(Clone, Debug)]
pub struct Compressed {
    pub crc: u32,
    pub file_size: u64,
    pub deflated: Option<Arc<Vec<u8>>>,
}

impl Compressed {
    /// The bytes that follow the local header.
    pub fn stored_bytes<'a>(&'a self, data: &'a [u8]) -> &'a [u8] {
        self.deflated.as_ref().map_or(data, |d| d.as_slice())
    }
}

/// CRC-32 and compressed bytes of `data` for `method`.  A deflated stream comes from the
/// process cache, else from `disk` when given, else from zlib (and is then left in both).
pub fn compress_entry(
    method: Method,
    data: &[u8],
    disk: Option<&DiskCache>,
) -> Result<Compressed, ZipError> {
    let crc = crc32fast::hash(data);
    let deflated = match method {
        Method::Stored => None,
        Method::Deflated => Some(match cache::lookup(crc, data) {
            Some(stream) => stream,
            None => {
                let (stream, from_disk) = match disk.and_then(|d| d.load(crc, data)) {
                    Some(stream) => (Arc::new(stream), true),
                    None => (Arc::new(deflate_raw(data)?), false),
                };
                cache::remember(crc, data, &stream);
                if let (Some(disk), false) = (disk, from_disk) {
                    disk.store(crc, data, &stream);
                }
                stream
            }
        }),
    };
    Ok(Compressed {
        crc,
        file_size: data.len() as u64,
        deflated,
    })
}

/// Raw deflate of `data` by zlib, fed as zipfile feeds it (never from the cache).
pub fn deflate_raw(data: &[u8]) -> Result<Vec<u8>, ZipError> {
    let mut compressor = Compress::new(Compression::new(ZLIB_DEFAULT_LEVEL), false);
    let mut out: Vec<u8> = Vec::with_capacity(data.len() / 3 + 64);
    let err = |e: flate2::CompressError| ZipError::Deflate(e.to_string());

    // compress(data): deflate(Z_NO_FLUSH) until zlib has taken all the input and stopped
    // with output space to spare (CPython calls it once even for empty data).
    loop {
        reserve_some(&mut out);
        let taken = usize::try_from(compressor.total_in())
            .unwrap_or(usize::MAX)
            .min(data.len());
        compressor
            .compress_vec(&data[taken..], &mut out, FlushCompress::None)
            .map_err(err)?;
        let all_taken = compressor.total_in() >= data.len() as u64;
        if all_taken && out.len() < out.capacity() {
            break;
        }
    }
    // flush(): deflate(Z_FINISH) until the stream ends.
    loop {
        reserve_some(&mut out);
        if compressor
            .compress_vec(&[], &mut out, FlushCompress::Finish)
            .map_err(err)?
            == Status::StreamEnd
        {
            return Ok(out);
        }
    }
}

fn reserve_some(out: &mut Vec<u8>) {
    if out.capacity() - out.len() < 64 {
        out.reserve(out.capacity().max(1024));
    }
}
