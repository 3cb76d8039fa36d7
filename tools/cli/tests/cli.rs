//! Runs the built `hookbox` binary: exit codes, stdout and stderr as the
//! issue specifies (0 valid, 1 invalid with the reason on stderr, 2 usage).

use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

const BIN: &str = env!("CARGO_BIN_EXE_hookbox");

// GitHub's published example:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
const GH_SECRET: &str = "It's a Secret to Everybody";
const GH_BODY: &str = "Hello, World!";
const GH_HEADER: &str =
    "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

// Standard Webhooks reference libraries' vector:
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/python/tests/test_webhooks.py
const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SW_TS: &str = "1614265330";
const SW_BODY: &str = r#"{"test": 2432232314}"#;
/// `hookbox sign` of the Standard Webhooks vector above.
const SIGN_SW: [&str; 11] = [
    "sign",
    "--scheme",
    "standard-webhooks",
    "--secret",
    SW_SECRET,
    "--id",
    SW_ID,
    "--timestamp",
    SW_TS,
    "--body",
    SW_BODY,
];
const SW_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

fn hookbox(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn valid_signature_prints_valid_and_exits_0() {
    let out = hookbox(&[
        "verify", "--scheme", "github", "--secret", GH_SECRET, "--header", GH_HEADER, "--body",
        GH_BODY,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "valid\n");
}

#[test]
fn wrong_secret_exits_1_with_the_reason_on_stderr() {
    let out = hookbox(&[
        "verify", "--scheme", "github", "--secret", "wrong", "--header", GH_HEADER, "--body",
        GH_BODY,
    ]);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("no matching signature"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("757107ea"), "{}", stderr(&out));
}

#[test]
fn missing_or_malformed_signature_header_exits_1() {
    let missing = hookbox(&[
        "verify", "--scheme", "github", "--secret", GH_SECRET, "--body", GH_BODY,
    ]);
    assert_eq!(code(&missing), 1);
    assert!(
        stderr(&missing).contains("missing header `X-Hub-Signature-256`"),
        "{}",
        stderr(&missing)
    );
    let malformed = hookbox(&[
        "verify",
        "--scheme",
        "github",
        "--secret",
        GH_SECRET,
        "--header",
        "X-Hub-Signature-256: sha256=nothex",
        "--body",
        GH_BODY,
    ]);
    assert_eq!(code(&malformed), 1);
    assert!(
        stderr(&malformed).contains("malformed header"),
        "{}",
        stderr(&malformed)
    );
}

#[test]
fn usage_errors_exit_2() {
    let cases: [&[&str]; 7] = [
        // Unknown scheme.
        &[
            "verify", "--scheme", "paypal", "--secret", "s", "--body", "x",
        ],
        // No body.
        &[
            "verify", "--scheme", "github", "--secret", "s", "--header", GH_HEADER,
        ],
        // No secret.
        &[
            "verify", "--scheme", "github", "--header", GH_HEADER, "--body", "x",
        ],
        // Header without a colon.
        &[
            "verify",
            "--scheme",
            "github",
            "--secret",
            "s",
            "--header",
            "X-Hub-Signature-256",
            "--body",
            "x",
        ],
        // Unreadable body file.
        &[
            "verify",
            "--scheme",
            "github",
            "--secret",
            "s",
            "--body-file",
            "/nonexistent/body",
        ],
        // Sign: unknown scheme, and no body.
        &[
            "sign",
            "--scheme",
            "stripe",
            "--secret",
            SW_SECRET,
            "--id",
            "m",
            "--timestamp",
            "1",
            "--body",
            "x",
        ],
        &[
            "sign",
            "--scheme",
            "standard-webhooks",
            "--secret",
            SW_SECRET,
            "--id",
            "m",
            "--timestamp",
            "1",
        ],
    ];
    for args in cases {
        let out = hookbox(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{args:?}");
    }
}

#[test]
fn unusable_secret_or_missing_url_is_a_usage_error() {
    let sw_headers = [
        format!("webhook-id: {SW_ID}"),
        format!("webhook-timestamp: {SW_TS}"),
        format!("webhook-signature: {SW_SIGNATURE}"),
    ];
    let out = hookbox(&[
        "verify",
        "--scheme",
        "standard-webhooks",
        "--secret",
        "whsec_***",
        "--now",
        SW_TS,
        "--header",
        &sw_headers[0],
        "--header",
        &sw_headers[1],
        "--header",
        &sw_headers[2],
        "--body",
        SW_BODY,
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("***"), "{}", stderr(&out));
    let out = hookbox(&[
        "verify",
        "--scheme",
        "twilio",
        "--secret",
        "12345",
        "--header",
        "X-Twilio-Signature: RSOYDt4T1cUTdK1PDd93/VVr8B8=",
        "--body",
        "",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("URL"), "{}", stderr(&out));
}

#[test]
fn sign_prints_the_published_headers_and_they_verify() {
    let out = hookbox(&SIGN_SW);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "webhook-id: {SW_ID}\nwebhook-timestamp: {SW_TS}\nwebhook-signature: {SW_SIGNATURE}\n"
        )
    );
    // Feed the printed lines back as --header arguments.
    let mut args = vec![
        "verify",
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--now",
        SW_TS,
        "--body",
        SW_BODY,
    ];
    let printed = stdout(&out);
    for line in printed.lines() {
        args.extend(["--header", line]);
    }
    let verified = hookbox(&args);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
    assert_eq!(stdout(&verified), "valid\n");
}

#[test]
fn values_that_start_with_a_hyphen_are_values_not_flags() {
    // A GitHub secret may start with `-`, and `-1` is a JSON body. The
    // signature was computed once with Python's `hmac` module:
    // hmac.new(b"-Zx8kQ2pL", b"-1", hashlib.sha256).hexdigest()
    let out = hookbox(&[
        "verify",
        "--scheme",
        "github",
        "--secret",
        "-Zx8kQ2pL",
        "--header",
        "X-Hub-Signature-256: sha256=7a2abfd2952fbdd5d6c7c275d2626708f7c608599bcfbc6ba0968fcde5da76af",
        "--body",
        "-1",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "valid\n");

    // `sign`: an id and a body that start with `-`; the printed headers
    // verify.
    let out = hookbox(&[
        "sign",
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--id",
        "-msg_1",
        "--timestamp",
        SW_TS,
        "--body",
        "-1",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.starts_with("webhook-id: -msg_1\n"), "{printed}");
    let mut args = vec![
        "verify",
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--now",
        SW_TS,
        "--body",
        "-1",
    ];
    for line in printed.lines() {
        args.extend(["--header", line]);
    }
    let verified = hookbox(&args);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));

    // A secret that starts with `-` reaches the signer, which refuses it
    // as a secret (exit 2 naming the secret), not as an unknown flag.
    let out = hookbox(&[
        "sign",
        "--scheme",
        "standard-webhooks",
        "--secret",
        "-Zx8kQ2pL",
        "--id",
        "msg_1",
        "--timestamp",
        SW_TS,
        "--body",
        "-1",
    ]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("secret #0"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("unexpected argument"),
        "{}",
        stderr(&out)
    );

    // `send`: the body `-1` and the id `-evt_1` are taken; nothing listens
    // on port 1 of the loopback, so the POST fails (exit 1), after parsing.
    let out = hookbox(&[
        "send",
        "--partner",
        "demo",
        "--url",
        "http://127.0.0.1:1/webhooks/demo",
        "--event-id",
        "-evt_1",
        "--body",
        "-1",
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("webhook-id -evt_1"),
        "{}",
        stderr(&out)
    );
    // and a `--secret` that starts with `-` reaches the signer.
    let out = hookbox(&[
        "send",
        "--partner",
        "demo",
        "--url",
        "http://127.0.0.1:1/webhooks/demo",
        "--secret",
        "-Zx8kQ2pL",
        "--body",
        "-1",
    ]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("cannot sign"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("unexpected argument"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rotation_two_secrets_sign_and_either_verifies() {
    let second = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB";
    let out = hookbox(&[
        "sign",
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--secret",
        second,
        "--id",
        "msg_2",
        "--timestamp",
        "1700000000",
        "--body",
        "{}",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = stdout(&out);
    let signature = printed.lines().nth(2).expect("three lines");
    assert_eq!(signature.matches("v1,").count(), 2, "{signature}");
    for secret in [SW_SECRET, second] {
        let mut args = vec![
            "verify",
            "--scheme",
            "standard-webhooks",
            "--secret",
            secret,
            "--now",
            "1700000000",
            "--body",
            "{}",
        ];
        for line in printed.lines() {
            args.extend(["--header", line]);
        }
        assert_eq!(code(&hookbox(&args)), 0, "{secret}");
    }
}

#[test]
fn timestamps_now_and_tolerance() {
    let headers = [
        format!("webhook-id: {SW_ID}"),
        format!("webhook-timestamp: {SW_TS}"),
        format!("webhook-signature: {SW_SIGNATURE}"),
    ];
    let run = |now: &str, tolerance: Option<&str>| {
        let mut args = vec![
            "verify",
            "--scheme",
            "standard-webhooks",
            "--secret",
            SW_SECRET,
            "--now",
            now,
            "--header",
            &headers[0],
            "--header",
            &headers[1],
            "--header",
            &headers[2],
            "--body",
            SW_BODY,
        ];
        if let Some(tolerance) = tolerance {
            args.extend(["--tolerance", tolerance]);
        }
        hookbox(&args)
    };
    assert_eq!(code(&run("1614265630", None)), 0); // +300 s
    let old = run("1614265631", None); // +301 s
    assert_eq!(code(&old), 1);
    assert!(
        stderr(&old).contains("timestamp too old"),
        "{}",
        stderr(&old)
    );
    let future = run("1614265029", None); // -301 s
    assert_eq!(code(&future), 1);
    assert!(
        stderr(&future).contains("timestamp in the future"),
        "{}",
        stderr(&future)
    );
    assert_eq!(code(&run("1614265340", Some("10"))), 0);
    assert_eq!(code(&run("1614265341", Some("10"))), 1);
    // The system clock is far past 2021: stale.
    let mut args = vec![
        "verify",
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--body",
        SW_BODY,
    ];
    for h in &headers {
        args.extend(["--header", h.as_str()]);
    }
    assert_eq!(code(&hookbox(&args)), 1);
}

#[test]
fn v1a_public_key_is_passed_as_a_secret() {
    // Ed25519 seed of the Standard Webhooks Go library's published v1a vector:
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_asymmetric_test.go
    let seed_b64 = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=";
    let expected = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==";
    let seed: [u8; 32] = STANDARD
        .decode(seed_b64)
        .expect("base64")
        .try_into()
        .expect("32 bytes");
    let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
    let whpk = format!("whpk_{}", STANDARD.encode(public.to_bytes()));
    let whsk = format!("whsk_{seed_b64}");

    let signed = hookbox(&[
        "sign",
        "--scheme",
        "standard-webhooks",
        "--secret",
        &whsk,
        "--id",
        SW_ID,
        "--timestamp",
        SW_TS,
        "--body",
        SW_BODY,
    ]);
    assert_eq!(code(&signed), 0, "{}", stderr(&signed));
    assert!(
        stdout(&signed).contains(&format!("webhook-signature: {expected}\n")),
        "{}",
        stdout(&signed)
    );

    let mut args = vec![
        "verify",
        "--scheme",
        "standard-webhooks",
        "--secret",
        &whpk,
        "--now",
        SW_TS,
        "--body",
        SW_BODY,
    ];
    let printed = stdout(&signed);
    for line in printed.lines() {
        args.extend(["--header", line]);
    }
    assert_eq!(code(&hookbox(&args)), 0);
    // Another body does not verify with the public key.
    let body_at = args.iter().position(|a| *a == "--body").expect("--body") + 1;
    args[body_at] = "{}";
    let out = hookbox(&args);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("no matching signature"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn twilio_form_parameters_come_from_the_body_when_form_encoded() {
    // twilio-python's published vector:
    // https://github.com/twilio/twilio-python/blob/main/tests/unit/test_request_validator.py
    let form = "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309";
    let base = [
        "verify",
        "--scheme",
        "twilio",
        "--secret",
        "12345",
        "--url",
        "https://mycompany.com/myapp.php?foo=1&bar=2",
        "--header",
        "X-Twilio-Signature: RSOYDt4T1cUTdK1PDd93/VVr8B8=",
        "--body",
        form,
    ];
    let mut with_type = base.to_vec();
    with_type.extend([
        "--header",
        "Content-Type: application/x-www-form-urlencoded",
    ]);
    let out = hookbox(&with_type);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Without the content type the body is not parameters, and unsigned.
    let out = hookbox(&base);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("not covered by the signature"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn body_file_is_read_as_raw_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("body");
    std::fs::write(&path, GH_BODY).expect("write body");
    let path = path.to_str().expect("UTF-8 path");
    let out = hookbox(&[
        "verify",
        "--scheme",
        "github",
        "--secret",
        GH_SECRET,
        "--header",
        GH_HEADER,
        "--body-file",
        path,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // With a trailing newline the body differs.
    std::fs::write(path, format!("{GH_BODY}\n")).expect("write body");
    let out = hookbox(&[
        "verify",
        "--scheme",
        "github",
        "--secret",
        GH_SECRET,
        "--header",
        GH_HEADER,
        "--body-file",
        path,
    ]);
    assert_eq!(code(&out), 1);
}

#[test]
fn config_json_selects_generic_hmac() {
    let config = r#"{"scheme":"generic-hmac","header":"X-Hub-Signature-256","prefix":"sha256="}"#;
    let out = hookbox(&[
        "verify", "--config", config, "--secret", GH_SECRET, "--header", GH_HEADER, "--body",
        GH_BODY,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = hookbox(&[
        "verify",
        "--config",
        "{\"scheme\":\"nope\"}",
        "--secret",
        "s",
        "--body",
        "x",
    ]);
    assert_eq!(code(&out), 2);
}

/// `hookbox … | head`: standard output closed under the command. It stops
/// quietly with 141 (a shell's status for a tool killed by SIGPIPE), not
/// with a panic or an error naming a broken pipe.
#[test]
fn a_closed_stdout_stops_the_command_quietly() {
    // a socket whose other end is gone: writing to it fails with EPIPE, as
    // a pipe whose reader exited does
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
    drop(ours);
    let writer = std::os::fd::OwnedFd::from(theirs);
    let out = Command::new(BIN)
        .args(SIGN_SW)
        .stdout(writer)
        .output()
        .expect("the binary runs");
    assert_eq!(code(&out), 141, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "nothing on stderr");
}

#[test]
fn presets_lists_one_preset_a_line_name_first() {
    let output = hookbox(&["presets"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    let names: Vec<&str> = text
        .lines()
        .map(|line| line.split('\t').next().unwrap_or(""))
        .collect();
    let registry: Vec<&str> = hookbox::signature::presets::names().collect();
    assert_eq!(names, registry);
    assert!(
        text.contains("paddle\tPaddle Billing\tHMAC-SHA256"),
        "{text}"
    );
}

#[test]
fn verify_with_a_preset_uses_its_recipe_and_tolerance() {
    // PaddleHQ/paddle-python-sdk tests/Unit/Notification/test_Verifier.py:
    // three secrets, the third signed.
    let args = |now: &'static str, secret: &'static str| {
        [
            "verify",
            "--preset",
            "paddle",
            "--secret",
            "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4",
            "--secret",
            secret,
            "--header",
            "Paddle-Signature: ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02",
            "--now",
            now,
            "--body",
            "hello-world",
        ]
    };
    let signer = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh";
    let ok = hookbox(&args("1696195959", signer));
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert_eq!(stdout(&ok), "valid\n");
    // Paddle's 5 s window is the preset's default.
    let stale = hookbox(&args("1696195960", signer));
    assert_eq!(code(&stale), 1);
    assert!(stderr(&stale).contains("too old"), "{}", stderr(&stale));
    let wrong = hookbox(&args("1696195954", "pdl_other"));
    assert_eq!(code(&wrong), 1);
    assert!(
        stderr(&wrong).contains("no matching signature"),
        "{}",
        stderr(&wrong)
    );
}

#[test]
fn verify_with_a_preset_that_signs_the_method_and_url() {
    // HubSpot/hubspot-api-python tests/spec/utils/test_signature.py (v3).
    let args = |method: &'static str| {
        [
            "verify",
            "--preset",
            "hubspot",
            "--secret",
            "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy",
            "--header",
            "X-HubSpot-Signature-v3: K36dawei4A+QBNolUOqo7s91KQDWQ5MXZ/QufNYuk/Y=",
            "--header",
            "X-HubSpot-Request-Timestamp: 1693657560000",
            "--url",
            "https://www.example.com/webhook_uri",
            "--method",
            method,
            "--now",
            "1693657560",
            "--body",
            "{'example_field':'example_value'}",
        ]
    };
    let ok = hookbox(&args("POST"));
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert_eq!(code(&hookbox(&args("PUT"))), 1);
}

#[test]
fn an_unknown_preset_or_a_preset_with_a_scheme_is_a_usage_error() {
    let unknown = hookbox(&[
        "verify", "--preset", "paypal", "--secret", "s", "--body", "x",
    ]);
    assert_eq!(code(&unknown), 2);
    assert!(
        stderr(&unknown).contains("unknown preset"),
        "{}",
        stderr(&unknown)
    );
    let both = hookbox(&[
        "verify", "--preset", "stripe", "--scheme", "stripe", "--secret", "s", "--body", "x",
    ]);
    assert_eq!(code(&both), 2);
}

#[test]
fn enroll_key_new_then_open_gives_back_the_sealed_secret() {
    use hookbox::config::enroll::EnrollKey;
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("asana.key");
    let key_arg = key.to_str().expect("utf-8 path");
    let out = hookbox(&["enroll-key", "new", "--out", key_arg]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let public = stdout(&out).trim().to_owned();
    let private = std::fs::read_to_string(&key).expect("key file");
    assert!(
        !stdout(&out).contains(private.trim()),
        "the private key is not printed"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // never overwritten
    let again = hookbox(&["enroll-key", "new", "--out", key_arg]);
    assert_eq!(code(&again), 2, "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&key).expect("key file"), private);

    // what ingest logs, opened by the operator: as an argument or on stdin
    let secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
    let sealed = EnrollKey::from_base64(&public)
        .expect("public key")
        .seal(secret)
        .expect("sealed");
    let out = hookbox(&["enroll-key", "open", "--key", key_arg, &sealed]);
    assert_eq!(
        (code(&out), stdout(&out)),
        (0, format!("{secret}\n")),
        "{}",
        stderr(&out)
    );
    let mut child = Command::new(BIN)
        .args(["enroll-key", "open", "--key", key_arg])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{sealed}").expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!((code(&out), stdout(&out)), (0, format!("{secret}\n")));

    // another key, an altered or unreadable value: refused, nothing shown
    let other = dir.path().join("other.key");
    let out = hookbox(&["enroll-key", "new", "--out", other.to_str().expect("path")]);
    assert_eq!(code(&out), 0);
    let out = hookbox(&[
        "enroll-key",
        "open",
        "--key",
        other.to_str().expect("path"),
        &sealed,
    ]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("does not open with this private key"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
    let out = hookbox(&["enroll-key", "open", "--key", key_arg, "not base64!"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("standard base64"), "{}", stderr(&out));
    let missing = dir.path().join("missing.key");
    let out = hookbox(&[
        "enroll-key",
        "open",
        "--key",
        missing.to_str().expect("path"),
        &sealed,
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
