//! Deflated entries remembered by content, for the process.
//!
//! Each zip entry is its own deflate stream, so the same bytes deflate to the same stream
//! whatever archive they go into.  Every payload of a run carries the same module_utils
//! (`basic.py` and its closure); remembering their deflated form spares zlib for all but the
//! first payload.  A hit is only taken when the stored data equals the new data byte for
//! byte (the CRC and length just pick the candidates), so a hit is exactly what zlib would
//! have produced.  The lock is only ever tried, never waited for: a fork while another
//! thread held it cannot leave the child stuck, it only skips the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// What the cache may hold (data and deflated bytes together).
const DEFAULT_BUDGET: usize = 64 << 20;

struct Cached {
    data: Vec<u8>,
    deflated: Arc<Vec<u8>>,
}

/// Deflated streams keyed by (CRC-32, length) of their data, checked by equality.
pub struct DeflateCache {
    entries: HashMap<(u32, usize), Vec<Cached>>,
    bytes: usize,
    budget: usize,
    hits: u64,
    misses: u64,
}

/// Hits, misses and bytes held, for `payload_cache_stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: usize,
}

impl DeflateCache {
    pub fn new(budget: usize) -> DeflateCache {
        DeflateCache {
            entries: HashMap::new(),
            bytes: 0,
            budget,
            hits: 0,
            misses: 0,
        }
    }

    /// The deflated stream of `data` if it was stored before.
    pub fn get(&mut self, crc: u32, data: &[u8]) -> Option<Arc<Vec<u8>>> {
        let found = self
            .entries
            .get(&(crc, data.len()))
            .and_then(|c| c.iter().find(|c| c.data == data))
            .map(|c| Arc::clone(&c.deflated));
        if found.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        found
    }

    /// Remember `deflated` as the stream of `data`, while the budget allows.
    pub fn insert(&mut self, crc: u32, data: &[u8], deflated: &Arc<Vec<u8>>) {
        let size = data.len() + deflated.len();
        if self.bytes + size > self.budget {
            return;
        }
        let candidates = self.entries.entry((crc, data.len())).or_default();
        if candidates.iter().any(|c| c.data == data) {
            return;
        }
        candidates.push(Cached {
            data: data.to_vec(),
            deflated: Arc::clone(deflated),
        });
        self.bytes += size;
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.hits = 0;
        self.misses = 0;
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            misses: self.misses,
            bytes: self.bytes,
        }
    }
}

fn process_cache() -> &'static Mutex<DeflateCache> {
    static CACHE: OnceLock<Mutex<DeflateCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(DeflateCache::new(DEFAULT_BUDGET)))
}

/// The stored stream for `data`, from the process cache (None: not there, or the cache
/// busy).
///
/// Every entry is cached, however small: zlib's set-up alone (deflateInit allocates and
/// clears some 256 KiB of state) costs more than a lookup, and payloads hold many tiny
/// package `__init__.py` files.
pub fn lookup(crc: u32, data: &[u8]) -> Option<Arc<Vec<u8>>> {
    process_cache().try_lock().ok()?.get(crc, data)
}

/// Offer a freshly deflated stream to the process cache.
pub fn remember(crc: u32, data: &[u8], deflated: &Arc<Vec<u8>>) {
    if let Ok(mut cache) = process_cache().try_lock() {
        cache.insert(crc, data, deflated);
    }
}

/// Empty the process cache (tests and benchmarks measure cold runs with it).
pub fn clear() {
    if let Ok(mut cache) = process_cache().lock() {
        cache.clear();
    }
}

pub fn stats() -> CacheStats {
    process_cache()
        .lock()
        .map(|c| c.stats())
        .unwrap_or_default()
}
