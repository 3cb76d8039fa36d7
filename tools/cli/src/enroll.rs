//! `hookbox enroll-key`: the operator's key pair for enrolling a partner
//! whose provider hands its signing secret over in a handshake (Asana).
//! Ingest logs that secret sealed to the public key (`sealed_secret`); only
//! the private key, which never leaves the operator's machine, opens it.

use std::fs::OpenOptions;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use hookbox::config::enroll::EnrollPrivateKey;

use crate::common::Failure;

#[derive(Debug, Subcommand)]
pub enum EnrollKeyCommand {
    /// Make a key pair: the private key goes to a new file (mode 0600,
    /// never overwritten), the public key is printed, for the partner's
    /// `"enroll_key"`.
    New {
        /// The private key's file (must not exist).
        #[arg(long, value_name = "PATH")]
        out: PathBuf,
    },
    /// Open a sealed secret (the `sealed_secret` of ingest's "handshake
    /// answered" log line): prints the secret, for the partner's
    /// `"secrets"`.
    Open {
        /// The private key's file (from `enroll-key new`).
        #[arg(long, value_name = "PATH")]
        key: PathBuf,
        /// The sealed secret (base64); without it, read from stdin.
        #[arg(value_name = "SEALED")]
        sealed: Option<String>,
    },
}

pub fn run(command: &EnrollKeyCommand) -> Result<ExitCode, Failure> {
    match command {
        EnrollKeyCommand::New { out } => new_key(out),
        EnrollKeyCommand::Open { key, sealed } => open(key, sealed.as_deref()),
    }
}

fn new_key(out: &Path) -> Result<ExitCode, Failure> {
    let key = EnrollPrivateKey::generate();
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(out)
        .with_context(|| format!("cannot create {} (it must not exist)", out.display()))
        .map_err(Failure::Usage)?;
    writeln!(file, "{}", key.to_base64())
        .with_context(|| format!("cannot write {}", out.display()))
        .map_err(Failure::Failed)?;
    println!("{}", key.public().to_base64());
    eprintln!(
        "private key written to {}; put the line above in the partner's \"enroll_key\"",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn open(key: &Path, sealed: Option<&str>) -> Result<ExitCode, Failure> {
    let text = std::fs::read_to_string(key)
        .with_context(|| format!("cannot read the private key {}", key.display()))
        .map_err(Failure::Usage)?;
    let private = EnrollPrivateKey::from_base64(&text)
        .map_err(|e| Failure::usage(format!("{}: {e}", key.display())))?;
    let sealed = match sealed {
        Some(sealed) => sealed.to_owned(),
        None => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read the sealed secret from stdin")
                .map_err(Failure::Usage)?;
            input
        }
    };
    let secret = private.open(&sealed).map_err(Failure::failed)?;
    println!("{secret}");
    Ok(ExitCode::SUCCESS)
}
