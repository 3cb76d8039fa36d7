//! The build script of the five Lambda crates (each `Cargo.toml` says
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

fn main() {
    println!("cargo::rerun-if-changed=../link.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
