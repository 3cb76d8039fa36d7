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

#[test]
fn the_check_refuses_a_management_api_whose_iam_route_is_not_sigv4() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "security: [{AWS_IAM: []}] # SigV4, verified by API Gateway",
            "security: [{NONE: []}]",
            1,
        )
    });
    assert!(
        stderr.contains("WebhookApi x-amazon-apigateway-any-method /iam/api/v1/{proxy+}: security ['NONE'], must be exactly AWS_IAM"),
        "{stderr}"
    );
    // the caller's credentials invoking the function
    let stderr = check_refuses(|t| {
        let iam = t
            .find("          /iam/api/v1/{proxy+}:\n")
            .expect("the IAM route");
        let (head, tail) = t.split_at(iam);
        format!(
            "{head}{}",
            tail.replacen(
                "              x-amazon-apigateway-integration:\n                type: aws_proxy\n",
                "              x-amazon-apigateway-integration:\n                credentials: arn:aws:iam::*:user/*\n                type: aws_proxy\n",
                1,
            )
        )
    });
    assert!(
        stderr.contains("WebhookApi x-amazon-apigateway-any-method /iam/api/v1/{proxy+}: invoked with credentials 'arn:aws:iam::*:user/*', must be none"),
        "{stderr}"
    );
    // its routes as events again: SAM merges ANY into a written definition
    // as a method `any`, which API Gateway does not know
    let stderr = check_refuses(|t| {
        t.replacen(
            "      # No Events: its two routes",
            "      Events:\n        Api:\n          Type: Api\n          Properties:\n            RestApiId: !Ref WebhookApi\n            Path: /api/v1/{proxy+}\n            Method: ANY\n      # No Events: its two routes",
            1,
        )
    });
    assert!(
        stderr.contains(
            "ManagementFunction.Api: the management function's routes are WebhookApi's definition"
        ),
        "{stderr}"
    );
    // invoked from every stage and route of the API
    let stderr = check_refuses(|t| {
        t.replacen(
            "${WebhookApi}/${StageName}/*/iam/api/v1/*",
            "${WebhookApi}/*",
            1,
        )
    });
    assert!(
        stderr.contains("Ingress=rest: API Gateway may invoke ManagementFunction from [('WebhookApi', '${StageName}/*/admin'), ('WebhookApi', '${StageName}/*/admin/*'), ('WebhookApi', '${StageName}/*/api/v1/*'), ('WebhookApi', '${StageName}/*/portal'), ('WebhookApi', '${StageName}/*/portal/*'), ('WebhookApi', '*')], must be exactly"),
        "{stderr}"
    );
    // the portal's routes behind the IAM authorization: a customer has no
    // AWS identity (the function checks the link's key)
    let stderr = check_refuses(|t| {
        let portal = t
            .find("          /portal/{proxy+}:\n")
            .expect("the portal route");
        let (head, tail) = t.split_at(portal);
        format!(
            "{head}{}",
            tail.replacen(
                "security: [{NONE: []}] # the function checks the link's key",
                "security: [{AWS_IAM: []}]",
                1
            )
        )
    });
    assert!(
        stderr.contains("WebhookApi x-amazon-apigateway-any-method /portal/{proxy+}: security ['AWS_IAM']; the function checks the bearer token or the link's key"),
        "{stderr}"
    );
    // a webhook route left without the partners' authorizer (the REST
    // API's first webhook method is POST)
    let stderr = check_refuses(|t| {
        t.replacen(
            "security: [{PartnerAuthorizer: []}]",
            "security: [{NONE: []}]",
            1,
        )
    });
    assert!(
        stderr.contains("WebhookApi post /webhooks/{partner}: no authorizer"),
        "{stderr}"
    );
}

/// `edit` applied to the HTTP API's part of the template (from its
/// resource on), the rest as it is.
fn in_http_api(template: &str, edit: impl Fn(&str) -> String) -> String {
    let at = template.find("  WebhookHttpApi:").expect("WebhookHttpApi");
    let (head, tail) = template.split_at(at);
    format!("{head}{}", edit(tail))
}

#[test]
fn the_check_proves_each_ingress_with_and_without_the_throttle() {
    let output = run(&python(), &["infra/check.py"]).expect("run check.py");
    assert!(output.status.success(), "{}", describe("check.py", &output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "Ingress=rest: /webhooks/{partner} POST and GET on WebhookApi (REST, payload 1.0, */* binary), authorizer TTL 0 without identity source, invoke permissions on those routes alone, no stage throttle",
        "Ingress=rest throttled: /webhooks/{partner} POST and GET on WebhookApi",
        "Ingress=http: /webhooks/{partner} POST and GET on WebhookHttpApi (HTTP API, payload 2.0, simple responses), authorizer TTL 0 without identity source, invoke permissions on those routes alone, no stage throttle",
        "Ingress=http throttled: /webhooks/{partner} POST and GET on WebhookHttpApi (HTTP API, payload 2.0, simple responses), authorizer TTL 0 without identity source, invoke permissions on those routes alone, throttle = the parameters",
        "cfn-lint on the translated template: clean, and resolved for Ingress rest and http",
    ] {
        assert!(stdout.contains(expected), "{expected}\n{stdout}");
    }
}

#[test]
fn the_check_refuses_an_http_api_authorizer_that_caches_needs_an_identity_source_or_answers_v1() {
    let stderr = check_refuses(|t| {
        in_http_api(t, |s| {
            s.replacen(
                "                enableSimpleResponses: true\n",
                "                enableSimpleResponses: false\n                identitySource: \"$request.header.webhook-signature\"\n",
                1,
            )
            .replacen(
                "authorizerResultTtlInSeconds: 0",
                "authorizerResultTtlInSeconds: 300",
                1,
            )
            .replacen(
                "authorizerPayloadFormatVersion: \"2.0\"",
                "authorizerPayloadFormatVersion: \"1.0\"",
                1,
            )
        })
    });
    for expected in [
        "Ingress=http: WebhookHttpApi authorizer PartnerAuthorizer: authorizerResultTtlInSeconds 300, must be 0 (a cached answer would skip the timestamp and source-IP checks)",
        "Ingress=http: WebhookHttpApi authorizer PartnerAuthorizer: identity source '$request.header.webhook-signature': API Gateway would answer 401 itself when it is missing",
        "Ingress=http: WebhookHttpApi authorizer PartnerAuthorizer: authorizerPayloadFormatVersion '1.0', must be '2.0'",
        "Ingress=http: WebhookHttpApi authorizer PartnerAuthorizer: enableSimpleResponses must be true",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    // the integration's payload format, and a route left without authorizer
    let stderr = check_refuses(|t| {
        in_http_api(t, |s| {
            s.replacen(
                "payloadFormatVersion: \"2.0\"\n",
                "payloadFormatVersion: \"1.0\"\n",
                1,
            )
            .replacen(
                "                security: [{PartnerAuthorizer: []}]\n",
                "",
                1,
            )
        })
    });
    for expected in [
        "Ingress=http: WebhookHttpApi post /webhooks/{partner}: payloadFormatVersion '1.0', must be '2.0'",
        "WebhookHttpApi post /webhooks/{partner}: no authorizer",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn the_check_refuses_an_invoke_permission_beyond_the_webhook_routes() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "${WebhookHttpApi}/${StageName}/POST/webhooks/*",
            "${WebhookHttpApi}/*",
            1,
        )
    });
    assert!(
        stderr.contains("Ingress=http: API Gateway may invoke IngestFunction from [('WebhookHttpApi', '${StageName}/GET/webhooks/*'), ('WebhookHttpApi', '*')], must be exactly"),
        "{stderr}"
    );
    // from any API of any account
    let stderr =
        check_refuses(|t| t.replacen("${WebhookApi}/${StageName}/GET/webhooks/*", "*/*", 1));
    assert!(
        stderr
            .contains("IngestRestHandshakePermission: API Gateway may invoke IngestFunction from")
            && stderr.contains("not one API of the stack"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_second_webhook_api_or_routes_sam_local_would_serve_for_both() {
    // the HTTP API without its condition: it exists with Ingress rest too
    let stderr = check_refuses(|t| {
        t.replacen(
            "    Type: AWS::Serverless::HttpApi\n    Condition: HttpIngress\n",
            "    Type: AWS::Serverless::HttpApi\n",
            1,
        )
    });
    assert!(
        stderr.contains("Ingress=rest: ['WebhookHttpApi', 'WebhookHttpApiStage'] exist; with Ingress rest no HTTP API may"),
        "{stderr}"
    );
    // its routes without the !If that sam local (which ignores a
    // resource's Condition) reads
    let stderr = check_refuses(|t| {
        in_http_api(t, |s| {
            s.replacen(
                "          /webhooks/{partner}: !If\n            - HttpIngress\n            - post:",
                "          /webhooks/{partner}:\n              post:",
                1,
            )
            .replacen("            - {}\n        components:", "        components:", 1)
        })
    });
    assert!(
        stderr.contains("WebhookHttpApi: DefinitionBody paths /webhooks/{partner} must be !If [<Ingress is http>, <the routes>, {}]"),
        "{stderr}"
    );
    // the partners' URL on the REST API whatever the ingress, and a REST
    // stage that would keep serving the old routes after a switch
    let stderr = check_refuses(|t| {
        t.replacen(
            "      - !Sub \"https://${WebhookHttpApi}",
            "      - !Sub \"https://${WebhookApi}",
            1,
        )
        .replacen("      AlwaysDeploy: true\n", "", 1)
    });
    for expected in [
        "Ingress=http: output WebhookUrlPattern is 'https://${WebhookApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${StageName}/webhooks/{partner}', must be 'https://${WebhookHttpApi}",
        "WebhookApi: AlwaysDeploy must be true",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn the_check_refuses_a_webhook_throttle_that_differs_between_the_ingresses() {
    // the HTTP stage's burst from the rate parameter
    let stderr = check_refuses(|t| {
        t.replacen(
            "ThrottlingBurstLimit: !If [HasWebhookThrottle, !Ref WebhookThrottleBurstLimit",
            "ThrottlingBurstLimit: !If [HasWebhookThrottle, !Ref WebhookThrottleRateLimit",
            1,
        )
    });
    assert!(
        stderr.contains("Ingress=http throttled: WebhookHttpApiStage DefaultRouteSettings throttle {'ThrottlingRateLimit': {'Ref': 'WebhookThrottleRateLimit'}, 'ThrottlingBurstLimit': {'Ref': 'WebhookThrottleRateLimit'}}"),
        "{stderr}"
    );
    // the REST stage's GET without it, and the rule demanding a burst gone
    let stderr = check_refuses(|t| {
        let get = t
            .find("          - ResourcePath: /~1webhooks~1{partner}\n            HttpMethod: GET\n")
            .expect("the GET method setting");
        let (head, tail) = t.split_at(get);
        format!(
            "{head}{}",
            tail.replacen(
                "            ThrottlingBurstLimit: !Ref WebhookThrottleBurstLimit\n",
                "",
                1
            )
        )
        .replacen(
            "      - Assert: !Not [!Equals [!Ref WebhookThrottleBurstLimit, \"0\"]]",
            "      - Assert: !Not [!Equals [!Ref StageName, \"0\"]]",
            1,
        )
    });
    for expected in [
        "Ingress=rest throttled: WebhookApiStage throttles GET /webhooks/{partner} with [{'ThrottlingRateLimit': {'Ref': 'WebhookThrottleRateLimit'}}]",
        "Rules: none asserts WebhookThrottleBurstLimit is set when WebhookThrottleRateLimit is",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

/// What `sam local start-api` reads from the template for each ingress
/// (the SAM CLI's own providers, no Docker): the REST shape for rest, the
/// HTTP API's payload 2.0 with the simple-response authorizer for http.
#[test]
fn sam_local_serves_the_webhook_routes_in_the_shape_of_each_ingress() {
    let python = hookbox_testkit::sam::deploy_python();
    let output = Command::new(&python)
        .args(["infra/check.py", "--sam-local", "infra/template.yaml"])
        .env("AWS_DEFAULT_REGION", "eu-west-1")
        .env("SAM_CLI_TELEMETRY", "0")
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}); {SAM_INSTALL_HINT}", python.display()));
    assert!(
        output.status.success(),
        "{}",
        describe("check.py --sam-local", &output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "sam local, Ingress=rest: /webhooks/{partner} Api payload 1.0, authorizer AuthorizerFunction (payload 1.0, simple responses False)",
        "sam local, Ingress=http: /webhooks/{partner} HttpApi payload 2.0, authorizer AuthorizerFunction (payload 2.0, simple responses True)",
    ] {
        assert!(stdout.contains(expected), "{expected}\n{stdout}");
    }
}

#[test]
fn the_check_refuses_a_key_that_does_not_rotate_or_is_not_retained() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "      EnableKeyRotation: true\n",
            "      EnableKeyRotation: false\n",
            1,
        )
        .replacen(
            "  EndpointSecretsKey:\n    Type: AWS::KMS::Key\n    DeletionPolicy: Retain\n",
            "  EndpointSecretsKey:\n    Type: AWS::KMS::Key\n    DeletionPolicy: Delete\n",
            1,
        )
    });
    for expected in [
        "EndpointSecretsKey: EnableKeyRotation must be true",
        "EndpointSecretsKey: DeletionPolicy and UpdateReplacePolicy must be Retain",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn the_check_refuses_kms_grants_beyond_the_key_its_actions_or_its_context() {
    // the relay's grant without the encryption context condition
    let stderr = check_refuses(|t| {
        let relay = t.find("  RelayFunction:").expect("relay");
        let (head, tail) = t.split_at(relay);
        format!(
            "{head}{}",
            tail.replacen(
                "              Resource: !GetAtt EndpointSecretsKey.Arn\n              Condition:\n                StringEquals:\n                  kms:EncryptionContext:purpose: hookbox-endpoint-secrets\n",
                "              Resource: !GetAtt EndpointSecretsKey.Arn\n",
                1,
            )
        )
    });
    assert!(
        stderr.contains("RelayFunctionRole: ['kms:Decrypt', 'kms:GenerateDataKey'] on EndpointSecretsKey without the condition kms:EncryptionContext:purpose = hookbox-endpoint-secrets"),
        "{stderr}"
    );
    // the management function may also encrypt, and on any key of the account
    let stderr = check_refuses(|t| {
        let management = t.find("  ManagementFunction:").expect("management");
        let (head, tail) = t.split_at(management);
        format!(
            "{head}{}",
            tail.replacen(
                "                - kms:GenerateDataKey\n                - kms:Decrypt\n              Resource: !GetAtt EndpointSecretsKey.Arn\n",
                "                - kms:GenerateDataKey\n                - kms:Decrypt\n                - kms:Encrypt\n              Resource: !Sub \"arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/*\"\n",
                1,
            )
        )
    });
    assert!(
        stderr.contains(
            "ManagementFunctionRole: ['kms:GenerateDataKey', 'kms:Decrypt', 'kms:Encrypt'] on"
        ) && stderr.contains("not the endpoint secrets' key EndpointSecretsKey"),
        "{stderr}"
    );
    // the key policy no longer confines the key to its purpose
    let stderr = check_refuses(|t| {
        t.replacen(
            "                kms:EncryptionContext:purpose: hookbox-endpoint-secrets\n\n",
            "                kms:EncryptionContext:purpose: something-else\n\n",
            1,
        )
    });
    assert!(
        stderr.contains("EndpointSecretsKey: the key policy must deny kms:Decrypt without the encryption context purpose=hookbox-endpoint-secrets"),
        "{stderr}"
    );
    // a function granted the key without using it
    let stderr = check_refuses(|t| {
        t.replacen(
            "          HOOKBOX_KMS_KEY_ID: !GetAtt EndpointSecretsKey.Arn\n          DATABASE_URL: !Ref AWS::NoValue # local: with HOOKBOX_DB=postgres\n          HOOKBOX_PARTNERS: !Ref AWS::NoValue",
            "          DATABASE_URL: !Ref AWS::NoValue # local: with HOOKBOX_DB=postgres\n          HOOKBOX_PARTNERS: !Ref AWS::NoValue",
            1,
        )
    });
    assert!(
        stderr.contains("the relay function must set HOOKBOX_KMS_KEY_ID")
            && stderr.contains("RelayFunctionRole: ['kms:Decrypt', 'kms:GenerateDataKey'] on EndpointSecretsKey, but its function does not set HOOKBOX_KMS_KEY_ID"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_token_in_the_template_or_a_role_beyond_the_management_api() {
    let hash = "0".repeat(64);
    let stderr = check_refuses(|t| {
        t.replacen(
            "          HOOKBOX_API_TOKENS: !Ref AWS::NoValue # local: inline hashes, ahead of the secret\n",
            &format!("          HOOKBOX_API_TOKENS: '[{{\"name\": \"ci\", \"sha256\": \"{hash}\"}}]'\n"),
            1,
        )
        .replacen(
            "      SecretString: \"[]\"\n",
            "      SecretString: '[{\"name\": \"ci\", \"token\": \"s3cr3t-t0ken\"}]'\n",
            1,
        )
        .replacen(
            "Description: hookbox management API (tenants and endpoints; bearer tokens or IAM)",
            "Description: \"hookbox management API (curl -H 'Authorization: Bearer hk_live_0123456789')\"",
            1,
        )
    });
    for expected in [
        "ManagementFunction: HOOKBOX_API_TOKENS is set in the template",
        "ManagementApiTokens: SecretString must be a JSON list of {\"name\", \"sha256\": <64 hex>}",
        "the template's text holds what looks like a bearer token",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    // the management function may read the partners' secret too, receive
    // from the queue, and send anywhere (it sends only the operator page's
    // replays, to the inbox queue)
    let stderr = check_refuses(|t| {
        t.replacen(
            "                - !Ref ManagementDbSecret\n                - !Ref ManagementApiTokens\n",
            "                - !Ref ManagementDbSecret\n                - !Ref ManagementApiTokens\n                - !Ref PartnersSecretArn\n            - Effect: Allow\n              Action: sqs:ReceiveMessage\n              Resource: !GetAtt InboxQueue.Arn\n            - Effect: Allow\n              Action: sqs:SendMessage\n              Resource: \"*\"\n",
            1,
        )
    });
    for expected in [
        "ManagementFunction: secretsmanager:GetSecretValue must be on exactly its own secrets; granted besides: {\"Ref\": \"PartnersSecretArn\"}",
        "ManagementFunctionRole: actions ['sqs:ReceiveMessage'] beyond what the management API calls",
        "ManagementFunctionRole: sqs:SendMessage on '*', must be the inbox queue alone",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn the_check_refuses_a_log_level_that_would_drop_the_metrics_lines() {
    let stderr = check_refuses(|t| {
        t.replacen(
            "      ApplicationLogLevel: INFO\n",
            "      ApplicationLogLevel: WARN\n",
            1,
        )
    });
    assert!(
        stderr
            .contains("ApplicationLogLevel 'WARN' would drop the INFO lines carrying the metrics"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_an_alarm_that_reads_every_stacks_metrics() {
    // a dimension dropped from one alarm
    let stderr = check_refuses(|t| {
        t.replacen(
            "          Value: processor\n        - Name: Stack\n          Value: !Ref AWS::StackName\n",
            "          Value: processor\n",
            1,
        )
    });
    assert!(
        stderr.contains("ProcessorDeadAlarm: a hookbox metric without the dimension Stack"),
        "{stderr}"
    );
    // a query without the stack's filter
    let stderr = check_refuses(|t| {
        t.replacen(
            "FROM hookbox WHERE Stack = '${AWS::StackName}'\"",
            "FROM hookbox\"",
            1,
        )
    });
    assert!(
        stderr.contains("OutboxLagAlarm: the query") && stderr.contains("must filter on Stack"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_a_dashboard_that_hides_an_alarmed_metric_or_is_not_json() {
    let stderr = check_refuses(|t| t.replacen("\"Quarantined\", ", "\"Quarantined_\", ", 1));
    assert!(
        stderr.contains("Dashboard: alarmed metrics it does not show: hookbox Quarantined"),
        "{stderr}"
    );
    let stderr = check_refuses(|t| t.replacen("{\"widgets\": [", "{\"widgets\": [[", 1));
    assert!(
        stderr.contains("Dashboard: the body is not JSON after substitution"),
        "{stderr}"
    );
}

#[test]
fn the_check_refuses_notices_to_any_topic_or_a_relay_that_sends_none() {
    // one run, two problems: the grant beyond the alarm topic, the relay
    // that does not name it
    let stderr = check_refuses(|t| {
        t.replacen(
            "Action: sns:Publish\n              Resource: !Ref AlarmTopic",
            "Action: sns:Publish\n              Resource: \"*\"",
            1,
        )
        .replacen(
            "HOOKBOX_ALARM_TOPIC_ARN: !Ref AlarmTopic",
            "HOOKBOX_ALARM_TOPIC_ARN: !Ref AWS::NoValue",
            1,
        )
    });
    assert!(
        stderr.contains("RelayFunctionRole: sns:Publish on '*', not exactly the AlarmTopic"),
        "{stderr}"
    );
    assert!(
        stderr.contains("RelayFunction: HOOKBOX_ALARM_TOPIC_ARN must be !Ref AlarmTopic"),
        "{stderr}"
    );
}
