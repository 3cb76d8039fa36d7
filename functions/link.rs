//! The build script of the six Lambda crates (each `Cargo.toml` says
//! `build = "../link.rs"`): their bootstraps are linked as non-PIE
//! executables on Linux, so the loader has no relocations of their own
//! image to apply at every cold start.
//!
//! A position-independent `ingest` carries about 31,000 `R_X86_64_RELATIVE`
//! relocations (a hello-world `lambda_runtime` binary about 1,700), and
//! applying them was most of its init; linked with `-no-pie` it has none.
//! The trade-off (the executable's own image is no longer randomised;
//! shared libraries, stack and heap still are) is written down in
//! infra/README.md, "Cold start".
//!
//! Only the `[[bin]]` targets change (`rustc-link-arg-bins`): the crates'
//! tests, the tools and proc-macros keep rustc's defaults. The objects stay
//! position-independent (`-C relocation-model=static` cannot build this
//! workspace: a dependency links a cdylib); the linker resolves their GOT
//! entries at link time instead of leaving them to the loader.
//!
//! `HOOKBOX_LINK_PIE=1` at build time keeps rustc's default (PIE) for the
//! bootstraps too: the "before" of the cold-start comparison in
//! BENCHMARKS.md, built from the same source.

fn main() {
    println!("cargo::rerun-if-changed=../link.rs");
    println!("cargo::rerun-if-env-changed=HOOKBOX_LINK_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let keep_pie = std::env::var("HOOKBOX_LINK_PIE").is_ok_and(|v| v == "1");
    if os == "linux" && !keep_pie {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
