//! `ansible-accel-run SOCKET INTERPRETER [ARG...]`: runs `INTERPRETER [ARG...]` through the
//! warm runner listening on the Unix socket SOCKET, and stands in for the module's process.
//!
//! The request carries the client's argv, environment, umask, process group, signal masks,
//! resource limits, standard fds and working directory; the runner forks the module's process
//! from them.  Until the runner says it started that process, any failure makes the client exec
//! INTERPRETER itself (the ordinary way), so the module runs exactly once.  After that the
//! client never execs: it forwards signals, waits, and ends as the module's process ended.
//! Started as `/dev/fd/N` (from a descriptor its shell opened, as the remote runner's command
//! does), it closes descriptor N first.
//!
//! build.rs compiles this file alone with plain rustc: std, the protocol file and the few libc
//! calls std does not offer, declared in `sys`.  `no_main`, because std's own start-up ignores
//! SIGPIPE and opens /dev/null on closed standard fds, and the client passes both on (to the
//! runner, or to the interpreter it execs) exactly as it got them.

#![no_main]

#[path = "../runner_proto.rs"]
mod proto;

use std::ffi::{c_char, c_int, c_long, c_void, CStr, OsStr};
use std::fs::OpenOptions;
use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicI32, Ordering};

use proto::Reply;
use sys::{SigSet, SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

/// The signals forwarded to the module's process while it runs.
const FORWARDED: [c_int; 7] = [SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGINT, SIGQUIT];

#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    // SAFETY: the C runtime passes argc NUL-terminated strings, then a NULL entry.
    let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    // SAFETY: as above; the strings live as long as the process.
    let arg = |i: usize| unsafe { CStr::from_ptr(args[i]) }.to_bytes();
    if args.len() == 2 && arg(1) == b"--probe" {
        let mut out = io::stdout().lock();
        return match out.write_all(proto::PROBE_LINE).and_then(|()| out.flush()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if args.len() < 3 {
        let _ = io::stderr().write_all(b"usage: ansible-accel-run SOCKET INTERPRETER [ARG...]\n");
        return 2;
    }
    if let Some(fd) = opened_by_shell(arg(0)) {
        // Run from a descriptor its shell opened (the remote runner's command): the module, run
        // through the runner or the ordinary way, must not inherit it.
        // SAFETY: the shell opened this descriptor for the client alone; nothing else owns it.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    // SAFETY: argv has argc + 1 entries, so argv + 2 is `[INTERPRETER, ARG..., NULL]`.
    let run = Run {
        socket: arg(1),
        argv: unsafe { argv.add(2) },
        envp,
    };
    // Held back until the client knows who handles them: once the module's process runs they
    // are forwarded to it; on a fallback the original mask is put back just before exec, and a
    // signal that came meanwhile then acts as it would have.
    let mut original = SigSet::EMPTY;
    // SAFETY: both are valid signal sets.
    unsafe { sys::sigprocmask(sys::SIG_BLOCK, &SigSet::of(&FORWARDED), &mut original) };
    match hand_over(&run, &original) {
        Ok(started) => wait_for_module(started, &original),
        Err(reason) => fall_back(&run, &original, &reason),
    }
}

/// N when the client was started as `/dev/fd/N` (N above the standard descriptors).
fn opened_by_shell(argv0: &[u8]) -> Option<RawFd> {
    let digits = argv0.strip_prefix(b"/dev/fd/")?;
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let fd = std::str::from_utf8(digits).ok()?.parse::<RawFd>().ok()?;
    (fd > 2).then_some(fd)
}

/// The command line and environment as the client received them.
struct Run {
    socket: &'static [u8],
    /// `[INTERPRETER, ARG..., NULL]`: the ordinary run's argv.
    argv: *const *const c_char,
    envp: *const *const c_char,
}

/// The runner started the module's process.
struct Started {
    sock: UnixStream,
    pid: i32,
    /// The signals the client received ignored.
    ignored: u64,
}

/// Send the request and read the runner's answer; `Err` holds the reason to fall back.
fn hand_over(run: &Run, original: &SigSet) -> Result<Started, Vec<u8>> {
    // First: were one of them closed, the fds opened below would take its number.
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the fd's flags.
        if unsafe { sys::fcntl(fd, sys::F_GETFD) } == -1 {
            return Err(format!("standard fd {fd} closed").into_bytes());
        }
    }
    // std opens every fd close-on-exec, so none is left behind for the interpreter.
    let cwd = OpenOptions::new()
        .read(true)
        .custom_flags(sys::O_PATH | sys::O_DIRECTORY)
        .open(".")
        .map_err(|_| b"no working directory".to_vec())?;
    let mut sock = UnixStream::connect(OsStr::from_bytes(run.socket))
        .map_err(|e| [&b"runner not reachable: "[..], &error_text(&e)].concat())?;
    let mut limits = [proto::Rlimit::default(); proto::RLIMIT_RESOURCES as usize];
    let mut count = 0;
    for resource in 0..proto::RLIMIT_RESOURCES {
        let mut got = sys::Rlimit { cur: 0, max: 0 };
        // SAFETY: `got` is an rlimit to fill.
        if unsafe { sys::getrlimit(resource as c_int, &mut got) } == 0 {
            limits[count] = proto::Rlimit {
                resource,
                cur: got.cur,
                max: got.max,
            };
            count += 1;
        }
    }
    let state = proto::ProcessState {
        umask: read_umask(),
        // SAFETY: getpgrp cannot fail.
        pgid: unsafe { sys::getpgrp() },
        // Signal n is bit n-1 of the first word, as the protocol has it.
        blocked: original.words[0],
        ignored: ignored_signals(),
        rlimits: &limits[..count],
    };
    // SAFETY: both are NULL-terminated arrays of strings that the client never changes.
    let (argv, env) = unsafe { (c_strings(run.argv), c_strings(run.envp)) };
    let request = proto::encode_request(argv, env, &state).ok_or(b"request too large".to_vec())?;
    send_request(&sock, &request, [0, 1, 2, cwd.as_raw_fd()])
        .map_err(|e| [&b"request not sent: "[..], &error_text(&e)].concat())?;
    let closed = |_| b"runner closed the connection".to_vec();
    let mut head = [0; proto::REPLY_HEAD];
    sock.read_exact(&mut head).map_err(closed)?;
    match proto::decode_reply(&head) {
        Reply::Started { pid } => Ok(Started {
            sock,
            pid,
            ignored: state.ignored,
        }),
        Reply::Refused { len } => {
            let mut reason = vec![0; len];
            sock.read_exact(&mut reason).map_err(closed)?;
            Err(reason)
        }
        Reply::Exited { .. } | Reply::Invalid => Err(b"runner sent an invalid reply".to_vec()),
    }
}

/// The umask, which can only be read by setting it: set again at once.
fn read_umask() -> u32 {
    // SAFETY: umask cannot fail.
    unsafe {
        let umask = sys::umask(0o077);
        sys::umask(umask);
        umask
    }
}

/// Bit n-1 set for each signal n the client received ignored.
fn ignored_signals() -> u64 {
    let mut ignored = 0;
    for sig in 1..=64 {
        let mut old = sys::SigAction::DEFAULT;
        // SAFETY: a query only; glibc refuses the signals it keeps for itself (skipped).
        if unsafe { sys::sigaction(sig, null(), &mut old) } == 0 && old.handler == sys::SIG_IGN {
            ignored |= proto::signal_bit(sig as u32);
        }
    }
    ignored
}

/// Run the module the ordinary way: exec the interpreter with everything as received.
fn fall_back(run: &Run, original: &SigSet, reason: &[u8]) -> ! {
    let path = proto::fallbacks_path(run.socket);
    let log = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(sys::O_NOFOLLOW)
        .open(OsStr::from_bytes(&path));
    if let Ok(mut log) = log {
        let _ = log.write_all(&proto::fallback_line(reason));
    }
    // SAFETY: the mask read at start-up; argv and envp as the C runtime gave them.
    unsafe {
        sys::sigprocmask(sys::SIG_SETMASK, original, null_mut());
        sys::execve(*run.argv, run.argv, run.envp);
    }
    let error = io::Error::last_os_error();
    // SAFETY: argv[2] is a NUL-terminated string.
    let interpreter = unsafe { CStr::from_ptr(*run.argv) }.to_bytes();
    let message = [
        &b"ansible-accel-run: cannot execute "[..],
        interpreter,
        b": ",
        &error_text(&error),
        b"\n",
    ];
    let _ = io::stderr().write_all(&message.concat());
    // As a shell reports a command it cannot run.
    exit(match error.raw_os_error() {
        Some(sys::EACCES) => 126,
        _ => 127,
    })
}

/// Stand in for the module's process until it ends; never falls back.
fn wait_for_module(started: Started, original: &SigSet) -> ! {
    let child = Child::new(started.pid);
    let signal_pipe = forward_signals(started.ignored);
    let pipe = signal_pipe.as_ref().map(|(read_end, _)| read_end);
    // SAFETY: the mask read at start-up; signals that came meanwhile now reach the handlers.
    unsafe { sys::sigprocmask(sys::SIG_SETMASK, original, null_mut()) };
    let mut head = [0; proto::REPLY_HEAD];
    let mut len = 0;
    while len < head.len() {
        wait_input(Some(started.sock.as_raw_fd()), -1, &child, pipe);
        match (&started.sock).read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let (proto::REPLY_HEAD, Reply::Exited { status }) = (len, proto::decode_reply(&head)) {
        end_as(status)
    }
    // The runner is gone before reporting: wait for the module's process all the same.
    match &child.pidfd {
        Some(pidfd) => while !wait_input(Some(pidfd.as_raw_fd()), -1, &child, pipe) {},
        None if child.pid > 0 => {
            // SAFETY: signal 0 only checks that the process exists.
            while unsafe { sys::kill(child.pid, 0) } == 0 || errno() != sys::ESRCH {
                wait_input(None, 10, &child, pipe);
            }
        }
        None => {}
    }
    let message =
        b"ansible-accel-run: the runner ended before the module's exit status was known\n";
    let _ = io::stderr().write_all(message);
    exit(1)
}

/// The module's process, as the client can reach it: not its parent, by pid and pidfd.
struct Child {
    pid: i32,
    /// Names the process even after it is reaped and its pid reused; none on kernels before 5.3.
    pidfd: Option<OwnedFd>,
}

impl Child {
    fn new(pid: i32) -> Child {
        let fd = match pid {
            // SAFETY: pidfd_open takes a pid and flags.
            1.. => unsafe { sys::syscall(sys::SYS_PIDFD_OPEN, pid as c_long, 0 as c_long) },
            _ => -1,
        };
        // SAFETY: a fd pidfd_open returned is the caller's to own.
        let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        Child { pid, pidfd }
    }

    fn signal(&self, sig: c_int) {
        // SAFETY: plain syscalls on the child's pidfd, or on its pid when positive (kill takes
        // 0 and negative pids for whole groups).
        unsafe {
            match &self.pidfd {
                Some(pidfd) => {
                    let (fd, info) = (pidfd.as_raw_fd() as c_long, null::<c_void>());
                    sys::syscall(
                        sys::SYS_PIDFD_SEND_SIGNAL,
                        fd,
                        sig as c_long,
                        info,
                        0 as c_long,
                    );
                }
                None if self.pid > 0 => _ = sys::kill(self.pid, sig),
                None => {}
            }
        }
    }
}

/// End as the module's process ended.
fn end_as(status: i32) -> ! {
    match proto::child_end(status) {
        proto::ChildEnd::Exited(code) => exit(code.into()),
        proto::ChildEnd::Signaled(sig) => {
            let mut core = sys::Rlimit { cur: 0, max: 0 };
            // SAFETY: plain calls with valid arguments.  The module's process wrote its own
            // core file if any; the client's would only overwrite or crowd it.
            unsafe {
                if sys::getrlimit(sys::RLIMIT_CORE, &mut core) == 0 {
                    core.cur = 0;
                    sys::setrlimit(sys::RLIMIT_CORE, &core);
                }
                sys::sigaction(sig, &sys::SigAction::DEFAULT, null_mut());
                sys::sigprocmask(sys::SIG_UNBLOCK, &SigSet::of(&[sig]), null_mut());
                sys::raise(sig);
            }
            exit(128 + sig)
        }
        proto::ChildEnd::Other => exit(1),
    }
}

/// The self-pipe's write end, for the signal handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Install the forwarding handlers, but not for signals received ignored (the module's process
/// ignores those too).  Returns the self-pipe (read end first), or `None`: nothing forwarded.
fn forward_signals(ignored: u64) -> Option<(UnixStream, UnixStream)> {
    let (read_end, write_end) = UnixStream::pair().ok()?;
    // Neither end may block: the handler must never wait, and draining stops when empty.
    read_end.set_nonblocking(true).ok()?;
    write_end.set_nonblocking(true).ok()?;
    SIGNAL_PIPE.store(write_end.as_raw_fd(), Ordering::Relaxed);
    let action = sys::SigAction {
        handler: on_signal as *const () as usize,
        flags: sys::SA_SIGINFO | sys::SA_RESTART,
        ..sys::SigAction::DEFAULT
    };
    for sig in FORWARDED {
        if ignored & proto::signal_bit(sig as u32) == 0 {
            // SAFETY: the handler only reads its siginfo and writes one byte to the pipe.
            unsafe { sys::sigaction(sig, &action, null_mut()) };
        }
    }
    Some((read_end, write_end))
}

extern "C" fn on_signal(sig: c_int, info: *mut sys::SigInfo, _context: *mut c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo.
    let code = unsafe { (*info).code };
    // si_code > 0: sent by the kernel, as a terminal sends these to its whole foreground
    // process group, the module's process included; forwarding would deliver them twice.
    if (sig == SIGINT || sig == SIGQUIT) && code > 0 {
        return;
    }
    let (fd, byte) = (SIGNAL_PIPE.load(Ordering::Relaxed), sig as u8);
    // SAFETY: write is async-signal-safe; errno is kept for the code this interrupted.
    unsafe {
        let errno = sys::__errno_location();
        let saved = *errno;
        sys::write(fd, (&byte as *const u8).cast(), 1);
        *errno = saved;
    }
}

/// Wait up to `timeout_ms` (-1: no limit) for `fd` to be readable or closed, forwarding the
/// signals that arrive meanwhile.  True when `fd` is ready, or when poll fails (the caller's
/// read then tells what happened, rather than this waiting again).
fn wait_input(
    fd: Option<RawFd>,
    timeout_ms: c_int,
    child: &Child,
    pipe: Option<&UnixStream>,
) -> bool {
    loop {
        let pipe_fd = pipe.map_or(-1, |p| p.as_raw_fd());
        let mut fds = [
            sys::PollFd::input(fd.unwrap_or(-1)),
            sys::PollFd::input(pipe_fd),
        ];
        // SAFETY: two pollfd entries (a negative fd is skipped).
        let ready = unsafe { sys::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        if ready < 0 {
            if errno() == sys::EINTR {
                continue;
            }
            return true;
        }
        if let (Some(mut pipe), true) = (pipe, fds[1].revents != 0) {
            let mut sigs = [0u8; 64];
            while let Ok(n @ 1..) = pipe.read(&mut sigs) {
                sigs[..n].iter().for_each(|&sig| child.signal(sig.into()));
            }
        }
        if fds[0].revents != 0 {
            return true;
        }
        if ready == 0 {
            return false;
        }
    }
}

/// Send the whole request, `fds` (SCM_RIGHTS) with its first part.
fn send_request(sock: &UnixStream, request: &[u8], fds: [RawFd; 4]) -> io::Result<()> {
    let size = std::mem::size_of::<sys::FdsMessage>();
    let mut control = sys::FdsMessage {
        len: size,
        level: sys::SOL_SOCKET,
        kind: sys::SCM_RIGHTS,
        fds,
    };
    let mut sent = 0;
    while sent < request.len() {
        let iov = IoSlice::new(&request[sent..]);
        let first = sent == 0;
        let msg = sys::MsgHdr {
            iov: (&iov as *const IoSlice).cast(),
            iovlen: 1,
            control: if first {
                (&mut control as *mut sys::FdsMessage).cast()
            } else {
                null_mut()
            },
            controllen: if first { size } else { 0 },
            ..sys::MsgHdr::EMPTY
        };
        // SAFETY: `msg` points to live buffers (IoSlice is an iovec).  MSG_NOSIGNAL: a runner
        // that went away gives an error, not SIGPIPE.
        let n = unsafe { sys::sendmsg(sock.as_raw_fd(), &msg, sys::MSG_NOSIGNAL) };
        match n {
            0.. => sent += n as usize,
            _ if errno() == sys::EINTR => {}
            _ => return Err(io::Error::last_os_error()),
        }
    }
    Ok(())
}

/// An error's text as strerror gives it (std's own adds " (os error N)").
fn error_text(error: &io::Error) -> Vec<u8> {
    match error.raw_os_error() {
        // SAFETY: strerror returns a NUL-terminated string, copied at once.
        Some(code) => unsafe { CStr::from_ptr(sys::strerror(code)) }
            .to_bytes()
            .to_vec(),
        None => error.to_string().into_bytes(),
    }
}

/// The strings of a NULL-terminated C array.
///
/// # Safety
/// `list` is NULL or a NULL-terminated array of NUL-terminated strings that stay unchanged for
/// the rest of the process.
unsafe fn c_strings(list: *const *const c_char) -> impl Iterator<Item = &'static [u8]> {
    let mut at = list;
    std::iter::from_fn(move || {
        // SAFETY: per the contract, `at` stays within the array until its NULL.
        unsafe {
            if at.is_null() || (*at).is_null() {
                return None;
            }
            let s = CStr::from_ptr(*at).to_bytes();
            at = at.add(1);
            Some(s)
        }
    })
}

fn errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn exit(code: c_int) -> ! {
    // SAFETY: nothing is buffered; the process ends at once.
    unsafe { sys::_exit(code) }
}

/// The libc calls std does not offer and the Linux constants they take, declared by hand (no
/// crates): glibc or musl on x86_64 and aarch64, which agree on these but two open() flags.
#[rustfmt::skip]
mod sys {
    use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
    use std::ptr::null_mut;

    pub const O_PATH: c_int = 0o10000000;
    #[cfg(target_arch = "x86_64")] pub const O_DIRECTORY: c_int = 0o200000;
    #[cfg(target_arch = "x86_64")] pub const O_NOFOLLOW: c_int = 0o400000;
    #[cfg(target_arch = "aarch64")] pub const O_DIRECTORY: c_int = 0o40000;
    #[cfg(target_arch = "aarch64")] pub const O_NOFOLLOW: c_int = 0o100000;
    pub const F_GETFD: c_int = 1;
    pub const SOL_SOCKET: c_int = 1;
    pub const SCM_RIGHTS: c_int = 1;
    pub const MSG_NOSIGNAL: c_int = 0x4000;
    pub const POLLIN: i16 = 1;
    pub const ESRCH: c_int = 3;
    pub const EINTR: c_int = 4;
    pub const EACCES: c_int = 13;
    pub const SIGHUP: c_int = 1;
    pub const SIGINT: c_int = 2;
    pub const SIGQUIT: c_int = 3;
    pub const SIGUSR1: c_int = 10;
    pub const SIGUSR2: c_int = 12;
    pub const SIGALRM: c_int = 14;
    pub const SIGTERM: c_int = 15;
    pub const SIG_BLOCK: c_int = 0;
    pub const SIG_UNBLOCK: c_int = 1;
    pub const SIG_SETMASK: c_int = 2;
    pub const SIG_IGN: usize = 1;
    pub const SA_SIGINFO: c_int = 4;
    pub const SA_RESTART: c_int = 0x1000_0000;
    pub const RLIMIT_CORE: c_int = 4;
    pub const SYS_PIDFD_SEND_SIGNAL: c_long = 424;
    pub const SYS_PIDFD_OPEN: c_long = 434;

    /// sigset_t: 1024 bits, signal n at bit n-1.
    #[repr(C)]
    pub struct SigSet { pub words: [u64; 16] }

    impl SigSet {
        pub const EMPTY: SigSet = SigSet { words: [0; 16] };

        /// The set of `signals` (each within 1..=64).
        pub fn of(signals: &[c_int]) -> SigSet {
            let mut set = SigSet::EMPTY;
            set.words[0] = signals.iter().fold(0, |bits, &s| bits | crate::proto::signal_bit(s as u32));
            set
        }
    }

    /// The C library's struct sigaction (not the kernel's: glibc and musl convert).
    #[repr(C)]
    pub struct SigAction { pub handler: usize, pub mask: SigSet, pub flags: c_int, pub restorer: usize }

    impl SigAction {
        /// SIG_DFL, nothing masked, no flags.
        pub const DEFAULT: SigAction = SigAction { handler: 0, mask: SigSet::EMPTY, flags: 0, restorer: 0 };
    }

    /// The head of siginfo_t, only ever read through the pointer the kernel passes.
    #[repr(C)]
    pub struct SigInfo { pub signo: c_int, pub errno: c_int, pub code: c_int }

    #[repr(C)]
    pub struct Rlimit { pub cur: u64, pub max: u64 }

    #[repr(C)]
    pub struct MsgHdr {
        pub name: *mut c_void, pub namelen: u32,
        pub iov: *const c_void, pub iovlen: usize,
        pub control: *mut c_void, pub controllen: usize,
        pub flags: c_int,
    }

    impl MsgHdr {
        pub const EMPTY: MsgHdr = MsgHdr {
            name: null_mut(), namelen: 0, iov: null_mut(), iovlen: 0,
            control: null_mut(), controllen: 0, flags: 0,
        };
    }

    /// A cmsghdr with four fds: CMSG_LEN(16) and CMSG_SPACE(16) are both its 32 bytes.
    #[repr(C)]
    pub struct FdsMessage { pub len: usize, pub level: c_int, pub kind: c_int, pub fds: [c_int; 4] }

    #[repr(C)]
    pub struct PollFd { pub fd: c_int, pub events: i16, pub revents: i16 }

    impl PollFd {
        /// Wait for input on `fd` (a negative fd is skipped).
        pub fn input(fd: c_int) -> PollFd { PollFd { fd, events: POLLIN, revents: 0 } }
    }

    extern "C" {
        pub fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        pub fn write(fd: c_int, buf: *const c_void, len: usize) -> isize;
        pub fn poll(fds: *mut PollFd, nfds: u64, timeout: c_int) -> c_int;
        pub fn sendmsg(fd: c_int, msg: *const MsgHdr, flags: c_int) -> isize;
        pub fn umask(mask: c_uint) -> c_uint;
        pub fn getpgrp() -> c_int;
        pub fn getrlimit(resource: c_int, limit: *mut Rlimit) -> c_int;
        pub fn setrlimit(resource: c_int, limit: *const Rlimit) -> c_int;
        pub fn sigprocmask(how: c_int, set: *const SigSet, old: *mut SigSet) -> c_int;
        pub fn sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
        pub fn kill(pid: c_int, sig: c_int) -> c_int;
        pub fn raise(sig: c_int) -> c_int;
        pub fn syscall(number: c_long, ...) -> c_long;
        pub fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
        pub fn strerror(code: c_int) -> *const c_char;
        pub fn __errno_location() -> *mut c_int;
        pub fn _exit(code: c_int) -> !;
    }
}
