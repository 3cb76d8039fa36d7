//! The Python interpreter that runs the tests' Python tools (moto, cfn-lint,
//! aws-sam-translator, Standard Webhooks' library).
//!
//! `tools/dev setup test` installs them into the project's virtual
//! environment, never into the system interpreter; the tests find them there.
//! Order: `HOOKBOX_PYTHON` (an interpreter), then `$HOOKBOX_VENV/bin/python`,
//! then `<workspace>/.venv/bin/python`, then `python3` on PATH (for people who
//! installed the tools themselves).

use std::path::{Path, PathBuf};

/// What to tell someone whose interpreter lacks a tool.
pub const INSTALL_HINT: &str = "run `tools/dev setup test` (it installs the pinned versions of \
     tools/requirements/test.txt into .venv), or `python3 -m pip install -r tools/requirements/test.txt`";

/// The interpreter to run Python tools with (see the module docs).
pub fn python() -> PathBuf {
    resolve(|k| std::env::var(k).ok(), &workspace_root())
}

fn resolve(env: impl Fn(&str) -> Option<String>, root: &Path) -> PathBuf {
    if let Some(p) = env("HOOKBOX_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = env("HOOKBOX_VENV")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"));
    let in_venv = venv.join("bin/python");
    if in_venv.is_file() {
        return in_venv;
    }
    PathBuf::from("python3")
}

/// The SAM CLI: `$HOOKBOX_DEPLOY_VENV/bin/sam`, else
/// `<workspace>/.venv-deploy/bin/sam` (`tools/dev setup test` installs it
/// there, apart from the test tools: it pins its own aws-sam-translator).
pub fn sam() -> PathBuf {
    std::env::var("HOOKBOX_DEPLOY_VENV")
        .ok()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-deploy"))
        .join("bin/sam")
}

/// What to tell someone without the SAM CLI.
pub const SAM_INSTALL_HINT: &str = "run `tools/dev setup test` (it installs the SAM CLI of \
     tools/requirements/deploy.txt into .venv-deploy)";

/// The workspace's root directory (where `.venv` lives).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Standard Webhooks' own Python library (`standardwebhooks`, run by
/// `tests/e2e/publish/verify.py`) on each of `deliveries`
/// (`{"secret", "body", "headers"}`), as a receiver checks one (signature
/// and timestamp): `true`, or the library's error. Blocks while it runs.
pub fn standard_webhooks_verify(deliveries: &[serde_json::Value]) -> Vec<serde_json::Value> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let input: String = deliveries.iter().map(|d| format!("{d}\n")).collect();
    let mut child = Command::new(python())
        .arg("verify.py")
        .current_dir(workspace_root().join("tests/e2e/publish"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run verify.py: {e}; {INSTALL_HINT}"));
    let mut stdin = child.stdin.take().expect("verify.py's stdin");
    // (written beside the read: a large input must not wait for its output)
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("verify.py");
    writer.join().expect("writer").expect("write to verify.py");
    assert!(
        output.status.success(),
        "verify.py failed ({INSTALL_HINT}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON list of verdicts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_interpreter_wins_then_the_venv_then_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let none = |_: &str| None;
        assert_eq!(resolve(none, root), PathBuf::from("python3"));

        std::fs::create_dir_all(root.join(".venv/bin")).expect("mkdir");
        std::fs::write(root.join(".venv/bin/python"), "").expect("write");
        assert_eq!(resolve(none, root), root.join(".venv/bin/python"));

        let other = root.join("elsewhere");
        let venv_env = |k: &str| (k == "HOOKBOX_VENV").then(|| other.display().to_string());
        assert_eq!(resolve(venv_env, root), PathBuf::from("python3"));

        let explicit = |k: &str| (k == "HOOKBOX_PYTHON").then(|| "/opt/py/bin/python".to_string());
        assert_eq!(resolve(explicit, root), PathBuf::from("/opt/py/bin/python"));
    }
}
