//! The SAM template (`infra/template.yaml`) is checked offline on every test
//! run: `infra/check.py` (SAM transform with aws-sam-translator, the
//! binaries and environment variables against the Rust code, least privilege,
//! queue/processor consistency) and cfn-lint on `infra/template.yaml`, both
//! with the interpreter of `hookbox_testkit::python` (the project's `.venv`).
//!
//! Missing tools FAIL these tests (never skip): `tools/dev setup test`
//! installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What the `cfn-lint` script runs, by the chosen interpreter (no PATH lookup).
const CFN_LINT: &str = "import sys; from cfnlint.runner import main; sys.exit(main())";

use hookbox_testkit::python::{INSTALL_HINT as INSTALL, SAM_INSTALL_HINT, python, sam};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

fn describe(what: &str, output: &Output) -> String {
    format!(
        "{what} exited with {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn run(program: &Path, args: &[&str]) -> std::io::Result<Output> {
    Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .output()
}

#[test]
fn sam_template_translates_and_matches_the_code() {
    let python = python();
    let output = run(&python, &["infra/check.py"]).unwrap_or_else(|e| {
        panic!(
            "cannot run {} ({e}): it is needed to check infra/template.yaml; {INSTALL}",
            python.display()
        )
    });
    assert!(
        output.status.success(),
        "{}\n(exit 2 = aws-sam-translator missing: {INSTALL})",
        describe("python3 infra/check.py", &output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.lines().any(|l| l.trim() == "OK"),
        "{}",
        describe("python3 infra/check.py (no OK line)", &output)
    );
}

#[test]
fn cfn_lint_is_clean() {
    let python = python();
    let output = run(&python, &["-c", CFN_LINT, "infra/template.yaml"]).unwrap_or_else(|e| {
        panic!(
            "cannot run cfn-lint's entry point with {} ({e}); {INSTALL}",
            python.display()
        )
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'cfnlint'"),
        "cfn-lint is not installed; {INSTALL}"
    );
    assert!(
        output.status.success(),
        "{}",
        describe("cfn-lint infra/template.yaml", &output)
    );
}

#[test]
fn the_check_refuses_a_template_that_loses_the_blob_store_or_the_queue_size() {
    let root = repo_root();
    let template = std::fs::read_to_string(root.join("infra/template.yaml")).expect("template");
    let broken = template
        .replacen(
            "MaximumMessageSize: 1048576",
            "MaximumMessageSize: 262144",
            1,
        )
        .replacen("          HOOKBOX_BLOB_BUCKET: !Ref BlobBucket\n", "", 1)
        .replacen("BlockPublicPolicy: true", "BlockPublicPolicy: false", 1);
    assert_ne!(broken, template, "the edits apply");
    // under infra/, one level deeper: CodeUri is relative to the template
    let dir = tempfile::Builder::new()
        .prefix(".check-")
        .tempdir_in(root.join("infra"))
        .expect("temp dir in infra/");
    let path = dir.path().join("broken-template.yaml");
    std::fs::write(&path, broken.replace("CodeUri: ../", "CodeUri: ../../")).expect("write");
    let python = python();
    let output =
        run(&python, &["infra/check.py", path.to_str().expect("utf-8")]).expect("run check.py");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "{}",
        describe("check.py", &output)
    );
    for expected in [
        "InboxQueue MaximumMessageSize must be 1048576",
        "IngestFunction: HOOKBOX_BLOB_BUCKET must be !Ref",
        "BlobBucket: PublicAccessBlockConfiguration.BlockPublicPolicy must be true",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn sam_validate_lint_accepts_the_template() {
    let sam = sam();
    let output = Command::new(&sam)
        .args(["validate", "--lint", "--template", "infra/template.yaml"])
        .env("AWS_DEFAULT_REGION", "eu-west-1")
        .env("SAM_CLI_TELEMETRY", "0")
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}); {SAM_INSTALL_HINT}", sam.display()));
    assert!(
        output.status.success(),
        "{}",
        describe("sam validate --lint", &output)
    );
}

/// check.py on the template with `edit` applied; its stderr (it must fail).
fn check_refuses(edit: impl Fn(&str) -> String) -> String {
    let root = repo_root();
    let template = std::fs::read_to_string(root.join("infra/template.yaml")).expect("template");
    let broken = edit(&template);
    assert_ne!(broken, template, "the edit applies");
    let dir = tempfile::Builder::new()
        .prefix(".check-")
        .tempdir_in(root.join("infra"))
        .expect("temp dir in infra/");
    let path = dir.path().join("broken-template.yaml");
    std::fs::write(&path, broken.replace("CodeUri: ../", "CodeUri: ../../")).expect("write");
    let output = run(
        &python(),
        &["infra/check.py", path.to_str().expect("utf-8")],
    )
    .expect("run check.py");
    assert!(
        !output.status.success(),
        "{}",
        describe("check.py", &output)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn the_check_refuses_a_misspelled_report_batch_item_failures() {
    let stderr =
        check_refuses(|t| t.replacen("[ReportBatchItemFailures]", "[ReportBatchItemFailure]", 1));
    assert!(
        stderr.contains("FunctionResponseTypes [ReportBatchItemFailures]"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_processor_that_runs_the_example_domain() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "HOOKBOX_HANDLER: routes",
            "HOOKBOX_HANDLER: orders-example",
            1,
        )
    });
    assert!(
        stderr.contains("ProcessorFunction: HOOKBOX_HANDLER is 'orders-example': a deployed processor forwards by routes"),
        "{stderr}"
    );
    let stderr = check_refuses(|t| {
        t.replacen(
            "          HOOKBOX_HANDLER: routes\n          HOOKBOX_PARTNERS_SECRET_ARN: !Ref PartnersSecretArn\n",
            "          HOOKBOX_HANDLER: routes\n",
            1,
        )
    });
    assert!(
        stderr.contains("ProcessorFunction: routes need the partners' configuration"),
        "{stderr}"
    );
    let stderr = check_refuses(|t| {
        t.replacen(
            "HOOKBOX_FORWARD_AT_INGEST: \"true\"",
            "HOOKBOX_FORWARD_AT_INGEST: \"false\"",
            1,
        )
    });
    assert!(
        stderr.contains("IngestFunction: HOOKBOX_FORWARD_AT_INGEST is 'false'"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_malformed_schedule() {
    let stderr = check_refuses(|t| t.replacen("rate(1 minute)", "rate(5 minute)", 1));
    assert!(
        stderr.contains("schedule expression 'rate(5 minute)'"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_function_granted_another_functions_secret() {
    // the processor may also read the relay's database secret
    let stderr = check_refuses(|t| {
        t.replacen(
            "                  - !Ref ProcessorDbSecret\n",
            "                  - !Ref ProcessorDbSecret\n                  - !Ref RelayDbSecret\n",
            1,
        )
    });
    assert!(
        stderr.contains("ProcessorFunction: secretsmanager:GetSecretValue must be on exactly its own secrets; granted besides: {\"Ref\": \"RelayDbSecret\"}"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_function_on_the_master_secret_or_with_extra_data_api_actions() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "DB_SECRET_ARN: !Ref IngestDbSecret",
            "DB_SECRET_ARN: !GetAtt DbCluster.MasterUserSecret.SecretArn",
            1,
        )
        .replacen(
            "              Action: rds-data:ExecuteStatement\n",
            "              Action: [rds-data:ExecuteStatement, rds-data:BatchExecuteStatement]\n",
            1,
        )
    });
    for expected in [
        "IngestFunction: DB_SECRET_ARN must be !Ref to a secret of its own role hookbox_ingest",
        "IngestFunction: rds-data actions ['rds-data:BatchExecuteStatement', 'rds-data:ExecuteStatement'], the code calls exactly ['rds-data:ExecuteStatement']",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn the_check_refuses_a_relay_destination_grant_beyond_the_parameters() {
    // PutEvents on every bus of the account instead of the listed ones
    let stderr = check_refuses(|t| {
        t.replacen(
            "                Resource: !Ref RelayEventBusArns\n",
            "                Resource: !Sub \"arn:aws:events:${AWS::Region}:${AWS::AccountId}:event-bus/*\"\n",
            1,
        )
    });
    assert!(
        stderr.contains("RelayFunctionRole: events:PutEvents on")
            && stderr.contains("not exactly the RelayEventBusArns parameter"),
        "{stderr}"
    );
    // a parameter whose pattern lets a wildcard through
    let stderr = check_refuses(|t| {
        t.replacen(
            r#"[0-9]{12}:[A-Za-z0-9_-]+(\\.fifo)?)?$""#,
            r#"[0-9]{12}:[A-Za-z0-9_*-]+(\\.fifo)?)?$""#,
            1,
        )
    });
    assert!(
        stderr.contains("parameter RelaySqsQueueArns: AllowedPattern accepts the wildcard"),
        "{stderr}"
    );
}
