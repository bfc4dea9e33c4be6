//! Builds `ansible-accel-run` (src/runner_client/main.rs), the small client program the
//! extension carries as bytes (`_native.runner_client_binary()`).  It links std alone, so it is
//! compiled here with plain rustc rather than as a cargo target: none of the crate's
//! dependencies, and its own profile (panic=abort, stripped).

use std::env;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

const CLIENT: &str = "src/runner_client/main.rs";
const PROTOCOL: &str = "src/runner_proto.rs";
/// Its own profile.  One unit, whole-program: about an eighth smaller, for three seconds.
const FLAGS: &str = "-C opt-level=2 -C panic=abort -C strip=symbols -C lto=fat -C codegen-units=1 \
                     --edition 2021 --crate-type bin";

fn main() {
    println!("cargo:rerun-if-changed={CLIENT}");
    println!("cargo:rerun-if-changed={PROTOCOL}");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let binary = out_dir.join("ansible-accel-run");
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux" || !matches!(arch.as_str(), "x86_64" | "aarch64") {
        // The client declares Linux's x86_64 and aarch64 ABI by hand; elsewhere the extension
        // carries no client (empty bytes) and module runs keep the ordinary way.
        println!("cargo:warning=ansible-accel-run is not built for {target}");
        std::fs::write(&binary, b"").expect("OUT_DIR is writable");
        return;
    }
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut rustc = Command::new(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    rustc
        .args(FLAGS.split_whitespace())
        .args(["--target", &target, "-o"]);
    rustc.arg(&binary).arg(manifest_dir.join(CLIENT));
    let linker_var = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace(['-', '.'], "_")
    );
    println!("cargo:rerun-if-env-changed={linker_var}");
    if let Some(linker) = env::var_os(&linker_var) {
        let mut flag = OsString::from("linker=");
        flag.push(linker);
        rustc.arg("-C").arg(flag);
    }
    let status = rustc.status().expect("rustc runs");
    assert!(status.success(), "building {CLIENT} failed: {status}");
}
