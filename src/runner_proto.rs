//! The wire format between `ansible-accel-run` and the warm runner (version 1): the request
//! that hands one module run to the runner, and the runner's replies.
//!
//! Pure functions over bytes.  The client program (`runner_client/main.rs`, built with plain
//! rustc and std only) includes this file by path; the crate compiles it too, so that
//! `cargo test` covers it.  Every integer is little-endian.

/// The first bytes of every request body.
pub const MAGIC: &[u8; 4] = b"AAR1";

/// What `ansible-accel-run --probe` prints: the program's name and protocol version.
pub const PROBE_LINE: &[u8] = b"ansible-accel-run 1\n";

/// The resource limits sent: getrlimit's resources `0..RLIMIT_RESOURCES` (CPU to RTTIME).
pub const RLIMIT_RESOURCES: u32 = 16;

/// The longest refusal reason taken; a longer one makes the reply invalid, so that a broken
/// runner cannot make the client read without end before it runs the module itself.
pub const MAX_REASON: usize = 1024;

/// Every reply starts with a tag byte and a 32-bit value.
pub const REPLY_HEAD: usize = 5;

/// One resource's limits as getrlimit gives them (on Linux RLIM_INFINITY is already u64::MAX).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rlimit {
    pub resource: u32,
    pub cur: u64,
    pub max: u64,
}

/// What the runner gives the module's process besides its argv, environment and fds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessState<'a> {
    pub umask: u32,
    pub pgid: i32,
    /// Bit n-1 set when signal n (1..=64) is blocked.
    pub blocked: u64,
    /// Bit n-1 set when signal n is ignored (SIG_IGN).
    pub ignored: u64,
    pub rlimits: &'a [Rlimit],
}

/// Signal `sig`'s bit in the `blocked` and `ignored` masks (none outside 1..=64).
pub fn signal_bit(sig: u32) -> u64 {
    match sig {
        1..=64 => 1 << (sig - 1),
        _ => 0,
    }
}

/// The request as sent: its body's length (`u32`), then the body.  `None` when a count or a
/// length does not fit in a `u32` (never for a real argv and environment: the kernel caps
/// them far lower).
pub fn encode_request<'a>(
    argv: impl IntoIterator<Item = &'a [u8]>,
    env: impl IntoIterator<Item = &'a [u8]>,
    state: &ProcessState<'_>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(MAGIC);
    put_strings(&mut out, argv)?;
    put_strings(&mut out, env)?;
    out.extend_from_slice(&state.umask.to_le_bytes());
    out.extend_from_slice(&state.pgid.to_le_bytes());
    out.extend_from_slice(&state.blocked.to_le_bytes());
    out.extend_from_slice(&state.ignored.to_le_bytes());
    put_u32(&mut out, state.rlimits.len())?;
    for limit in state.rlimits {
        out.extend_from_slice(&limit.resource.to_le_bytes());
        out.extend_from_slice(&limit.cur.to_le_bytes());
        out.extend_from_slice(&limit.max.to_le_bytes());
    }
    let body = u32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&body.to_le_bytes());
    Some(out)
}

/// A count, then each string as its length and bytes; the count is written once known.
fn put_strings<'a>(out: &mut Vec<u8>, items: impl IntoIterator<Item = &'a [u8]>) -> Option<()> {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut count = 0usize;
    for item in items {
        put_u32(out, item.len())?;
        out.extend_from_slice(item);
        count += 1;
    }
    let count = u32::try_from(count).ok()?;
    out[at..at + 4].copy_from_slice(&count.to_le_bytes());
    Some(())
}

fn put_u32(out: &mut Vec<u8>, n: usize) -> Option<()> {
    out.extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    Some(())
}

/// A reply, from its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `R`: the runner will not run the module; a reason of `len` bytes follows, and the
    /// client runs the module the ordinary way.
    Refused { len: usize },
    /// `S`: the runner forked the module's process.
    Started { pid: i32 },
    /// `X`: the module's process ended with this raw wait status.
    Exited { status: i32 },
    /// Anything else: the client treats the runner as broken.
    Invalid,
}

/// Decode a reply's head.
pub fn decode_reply(head: &[u8; REPLY_HEAD]) -> Reply {
    let value = i32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    match head[0] {
        b'R' if (value as u32 as usize) <= MAX_REASON => Reply::Refused {
            len: value as usize,
        },
        b'S' => Reply::Started { pid: value },
        b'X' => Reply::Exited { status: value },
        _ => Reply::Invalid,
    }
}

/// How the module's process ended, read from its raw wait status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildEnd {
    Exited(u8),
    Signaled(i32),
    /// A stopped or continued status: not an end.
    Other,
}

/// Linux's wait status encoding: the low 7 bits are 0 for an exit (code in the next byte),
/// 0x7f for a stop, else the terminating signal (bit 7 tells a core dump).
pub fn child_end(status: i32) -> ChildEnd {
    match status & 0x7f {
        0 => ChildEnd::Exited((status >> 8) as u8),
        0x7f => ChildEnd::Other,
        sig => ChildEnd::Signaled(sig),
    }
}

/// The line appended to `SOCKET.fallbacks`: the reason, its line breaks made spaces so that it
/// stays one line, then `\n`.
pub fn fallback_line(reason: &[u8]) -> Vec<u8> {
    let mut line: Vec<u8> = reason
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    line.push(b'\n');
    line
}

/// Where the reasons for falling back go: `SOCKET` + `.fallbacks`.
pub fn fallbacks_path(socket: &[u8]) -> Vec<u8> {
    [socket, b".fallbacks"].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: [Rlimit; 2] = [
        Rlimit {
            resource: 7,
            cur: 1024,
            max: 4096,
        },
        Rlimit {
            resource: 3,
            cur: 8 << 20,
            max: u64::MAX,
        },
    ];

    fn state() -> ProcessState<'static> {
        ProcessState {
            umask: 0o027,
            pgid: 4242,
            blocked: signal_bit(10) | signal_bit(64),
            ignored: signal_bit(1),
            rlimits: &LIMITS,
        }
    }

    /// A reader written apart from the encoder: the lists, then the fixed fields.
    struct Reader<'a>(&'a [u8]);

    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize) -> &'a [u8] {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        }
        fn u32(&mut self) -> u32 {
            u32::from_le_bytes(self.take(4).try_into().unwrap())
        }
        fn u64(&mut self) -> u64 {
            u64::from_le_bytes(self.take(8).try_into().unwrap())
        }
        fn strings(&mut self) -> Vec<&'a [u8]> {
            let n = self.u32();
            (0..n)
                .map(|_| {
                    let len = self.u32() as usize;
                    self.take(len)
                })
                .collect()
        }
    }

    #[test]
    fn request_carries_everything_in_order() {
        let argv: [&[u8]; 3] = [b"/usr/bin/python3", b"", b"/tmp/a b/\xff.py"];
        let env: [&[u8]; 3] = [b"Z=1", b"A=x=y", b"NOEQUALS"];
        let msg = encode_request(argv, env, &state()).unwrap();
        let mut r = Reader(&msg);
        assert_eq!(r.u32() as usize, msg.len() - 4);
        assert_eq!(r.take(4), MAGIC);
        assert_eq!(r.strings(), argv);
        assert_eq!(r.strings(), env);
        assert_eq!(r.u32(), 0o027);
        assert_eq!(r.u32() as i32, 4242);
        assert_eq!(r.u64(), (1 << 9) | (1 << 63));
        assert_eq!(r.u64(), 1);
        assert_eq!(r.u32(), 2);
        for limit in LIMITS {
            assert_eq!(
                (r.u32(), r.u64(), r.u64()),
                (limit.resource, limit.cur, limit.max)
            );
        }
        assert!(r.0.is_empty());
    }

    #[test]
    fn request_bytes_are_fixed() {
        let st = ProcessState {
            umask: 0o22,
            pgid: -1,
            blocked: 2,
            ignored: 0,
            rlimits: &[],
        };
        let msg = encode_request([&b"py"[..]], [&b"A=1"[..]], &st).unwrap();
        let mut want = vec![53, 0, 0, 0];
        want.extend_from_slice(b"AAR1\x01\0\0\0\x02\0\0\0py\x01\0\0\0\x03\0\0\0A=1");
        want.extend_from_slice(b"\x12\0\0\0\xff\xff\xff\xff\x02\0\0\0\0\0\0\0");
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(&[0; 4]);
        assert_eq!(msg, want);
    }

    #[test]
    fn empty_lists_encode_as_zero_counts() {
        let st = ProcessState {
            umask: 0,
            pgid: 0,
            blocked: 0,
            ignored: 0,
            rlimits: &[],
        };
        let msg = encode_request([], [], &st).unwrap();
        assert_eq!(msg.len(), 4 + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4);
    }

    #[test]
    fn signal_bits() {
        assert_eq!(signal_bit(1), 1);
        assert_eq!(signal_bit(15), 1 << 14);
        assert_eq!(signal_bit(64), 1 << 63);
        assert_eq!(signal_bit(0), 0);
        assert_eq!(signal_bit(65), 0);
    }

    #[test]
    fn replies() {
        assert_eq!(
            decode_reply(b"S\x39\x30\0\0"),
            Reply::Started { pid: 12345 }
        );
        assert_eq!(
            decode_reply(b"S\xff\xff\xff\xff"),
            Reply::Started { pid: -1 }
        );
        assert_eq!(decode_reply(b"R\x04\0\0\0"), Reply::Refused { len: 4 });
        assert_eq!(decode_reply(b"R\0\0\0\0"), Reply::Refused { len: 0 });
        assert_eq!(
            decode_reply(b"X\0\x03\0\0"),
            Reply::Exited { status: 0x300 }
        );
        assert_eq!(decode_reply(b"E\0\0\0\0"), Reply::Invalid);
        assert_eq!(decode_reply(b"s\0\0\0\0"), Reply::Invalid);
    }

    #[test]
    fn overlong_reason_is_invalid() {
        let most = (MAX_REASON as u32).to_le_bytes();
        let head = [b'R', most[0], most[1], most[2], most[3]];
        assert_eq!(decode_reply(&head), Reply::Refused { len: MAX_REASON });
        let over = (MAX_REASON as u32 + 1).to_le_bytes();
        assert_eq!(
            decode_reply(&[b'R', over[0], over[1], over[2], over[3]]),
            Reply::Invalid
        );
        assert_eq!(decode_reply(b"R\xff\xff\xff\xff"), Reply::Invalid);
    }

    #[test]
    fn wait_statuses() {
        assert_eq!(child_end(0), ChildEnd::Exited(0));
        assert_eq!(child_end(3 << 8), ChildEnd::Exited(3));
        assert_eq!(child_end(255 << 8), ChildEnd::Exited(255));
        assert_eq!(child_end(15), ChildEnd::Signaled(15));
        assert_eq!(child_end(0x80 | 11), ChildEnd::Signaled(11));
        assert_eq!(child_end((19 << 8) | 0x7f), ChildEnd::Other);
        assert_eq!(child_end(0xffff), ChildEnd::Other);
    }

    #[test]
    fn fallback_lines_stay_one_line() {
        assert_eq!(fallback_line(b"runner busy"), b"runner busy\n");
        assert_eq!(fallback_line(b"a\nb\rc"), b"a b c\n");
        assert_eq!(fallback_line(b""), b"\n");
    }

    #[test]
    fn fallbacks_path_is_beside_the_socket() {
        assert_eq!(fallbacks_path(b"/run/r.sock"), b"/run/r.sock.fallbacks");
    }

    #[test]
    fn probe_line_names_the_version() {
        assert_eq!(PROBE_LINE, b"ansible-accel-run 1\n");
    }
}
