#!/usr/bin/env python3
"""Offline checks of infra/template.yaml (no AWS account, no network).

1. The SAM transform succeeds: aws-sam-translator's Translator turns the
   template into plain CloudFormation, with a fake account (123456789012) and
   region (eu-west-1), local CodeUri replaced by a fake S3 location as
   `sam package` would (this is what `sam deploy` sends to CloudFormation).
   The translated template is then linted with cfn-lint (cfn-lint's entry
   point, `cfnlint.runner.main`), which does not depend on cfn-lint's own SAM support.
2. Every AWS::Serverless::Function is built by cargo-lambda
   (Metadata.BuildMethod rust-cargolambda) and its BuildProperties.Binary
   names a `[[bin]]` of a crate under functions/ that is a workspace member,
   with CodeUri at the workspace root. A binary whose crate does not exist
   yet is accepted ONLY when functions/README.md lists that crate as
   "planned" and functions/<binary>/ does not exist; once the crate exists it
   must satisfy the full check.
3. Every environment variable the template sets is read by the Rust code:
   its quoted name ("NAME") appears in non-test code under shared/src or
   functions/*/src (text after a file's first `#[cfg(test)]` is ignored).
   Variables of a planned function are reported but not required while its
   crate does not exist.
4. Least privilege in the translated template: every IAM role's managed
   policies are AWSLambdaBasicExecutionRole and AWSXrayWriteOnlyAccess
   (active tracing: X-Ray's actions take no resource) and no inline
   statement has Resource "*"; every function traces, and so does the REST
   API's stage.
5. Consistency: the inbox queue's maxReceiveCount is the processor's
   HOOKBOX_MAX_RECEIVE_COUNT, its VisibilityTimeout is at least 6x the
   processor timeout, its MaximumMessageSize is 1 MiB (the code's limit),
   and the SQS event uses ReportBatchItemFailures.
6. The blob store: ingest, processor and relay (the functions that read
   large bodies and payloads) set HOOKBOX_BLOB_BUCKET to a bucket of the
   template that blocks public access, encrypts at rest and denies
   non-TLS requests.

7. Secrets and the Data API, per function (on the translated template):
   every function but migrate reads the database with a secret of its own
   (DB_SECRET_ARN is !Ref to an AWS::SecretsManager::Secret whose generated
   username is the function's role, hookbox_<binary>), may GetSecretValue
   on exactly that secret (plus the partners secret when it reads
   HOOKBOX_PARTNERS_SECRET_ARN), and no two functions share a secret; the
   master secret is migrate's alone (with the role secrets it sets the
   passwords from); the rds-data actions are exactly the ones the function
   calls (DATA_API_ACTIONS); no action anywhere is a wildcard.
8. Every schedule expression is well formed: rate(1 minute), rate(N
   minutes|hours|days) with N > 1, or cron(...) with six fields.
9. The relay's destinations (on the translated template): events:PutEvents
   is granted to the relay alone, on exactly the buses of the
   RelayEventBusArns parameter; sqs:SendMessage, besides the inbox queue
   (the sweeper), on exactly the queues of RelaySqsQueueArns; each
   parameter's AllowedPattern takes one ARN per item and never a wildcard.
10. The processor forwards by routes: its HOOKBOX_HANDLER is `routes`
   (the example orders domain, `orders-example`, runs only where a test or
   the local demo chooses it) and it reads the partners' configuration
   (HOOKBOX_PARTNERS_SECRET_ARN); ingest forwards at ingest
   (HOOKBOX_FORWARD_AT_INGEST is "true"), which is only sound beside a
   processor that forwards by the same routes.
11. The management API (on the translated template too): the management
   function is reached on exactly two routes of the stack's API, the
   resources its code knows (functions/management/src/event.rs):
   /api/v1/{proxy+} without a gateway authorizer (the function checks the
   bearer token) and /iam/api/v1/{proxy+} authorized by AWS_IAM (SigV4)
   with no invoke role (the caller's credentials never invoke the
   function); every other route of the API keeps an authorizer.
12. The endpoint secrets' key: one AWS::KMS::Key, symmetric, rotated
   (EnableKeyRotation), retained with the stack, with an alias, whose key
   policy denies every cryptographic use without the encryption context
   the code sends (shared/src/vault/kms.rs: purpose=hookbox-endpoint-secrets).
   Every function that sets HOOKBOX_KMS_KEY_ID sets it to that key, and
   exactly those functions may use it: exactly the actions of KMS_ACTIONS,
   on that key alone, under the same encryption context. Apart from the
   partners secret's optional key (kms:Decrypt via Secrets Manager), no
   other KMS grant exists.
13. No plaintext token: HOOKBOX_API_TOKENS is never set in the template
   (only declared `!Ref AWS::NoValue` for local runs); the tokens' secret
   (HOOKBOX_API_TOKENS_SECRET_ARN) is a secret of the template whose
   initial value, if any, holds only names and SHA-256 hashes; nothing in
   the template's text looks like a bearer token. The management
   function's role holds only MANAGEMENT_ACTIONS.

14. The webhook ingress (docs/ingress.md), on the translated template
   resolved for each value of the Ingress parameter (rest, http), with and
   without the webhook throttle (CloudFormation's view: conditions
   evaluated, resources under a false one removed, Fn::If replaced by its
   branch): the webhook routes (POST and GET /webhooks/{partner}) are on
   exactly one API, the ingress's (the REST API WebhookApi, binary media
   type */*, or the HTTP API WebhookHttpApi, payload format 2.0), and no
   HTTP API exists for rest; each route is a Lambda proxy integration of
   ingest authorized by the partners' authorizer: REQUEST, result TTL 0,
   no identity source (with one, API Gateway answers 401 itself when it is
   missing), on the HTTP API payload format 2.0 with simple responses;
   every API Gateway invoke permission is scoped to an API of the stack,
   ingest's to exactly those two routes of the ingress's stage, the
   authorizer's to that API's authorizers (and SAM's own grant of the REST
   API's); the webhook routes' throttle is exactly the
   WebhookThrottle{Rate,Burst}Limit parameters when set (the REST stage's
   method settings, the HTTP stage's default route settings) and absent
   when not (Rules demand both or neither); WebhookUrlPattern is the
   ingress's API; the webhook path of each conditional definition is an
   !If on its ingress with an empty map otherwise (sam local ignores a
   resource's Condition), and WebhookApi deploys on every update
   (AlwaysDeploy: its definition changes with Ingress, its deployment's
   name would not).
15. With `--sam-local TEMPLATE` and the SAM CLI's interpreter (.venv-deploy):
   what `sam local start-api` reads from the template for each Ingress, no
   Docker: one /webhooks/{partner} route (GET, POST) of ingest, of the
   ingress's event type and payload format, behind the authorizer with the
   same payload format, simple responses for http, no identity source.
16. Notices: the relay alone may sns:Publish, on exactly the stack's
   AlarmTopic, and its HOOKBOX_ALARM_TOPIC_ARN is that topic.

Usage: python3 infra/check.py [TEMPLATE] (default infra/template.yaml);
.venv-deploy/bin/python infra/check.py --sam-local TEMPLATE.
Prints OK and exits 0, or prints every problem and exits 1 (2 when
aws-sam-translator, or for --sam-local the SAM CLI, is not installed).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra" / "template.yaml"
FAKE_ACCOUNT = "123456789012"
FAKE_REGION = "eu-west-1"
# The `cfn-lint` command, run by this interpreter (no PATH lookup).
CFN_LINT = "import sys; from cfnlint.runner import main; sys.exit(main())"

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    tomllib = None

try:
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse
except ImportError as e:
    print(
        f"aws-sam-translator is missing ({e}): run tools/dev setup test (installs tools/requirements/test.txt into .venv)",
        file=sys.stderr,
    )
    sys.exit(2)


problems: list[str] = []
notes: list[str] = []


def problem(msg: str) -> None:
    if msg not in problems:  # the per-ingress checks may meet one twice
        problems.append(msg)


# ------------------------------------------------------------------ template
def load_template() -> dict:
    return yaml_parse(TEMPLATE.read_text())


def fake_parameter_values(template: dict) -> dict:
    """Values for parameters without a default (the translator resolves a few)."""
    values = {}
    for name, spec in (template.get("Parameters") or {}).items():
        if "Default" in spec:
            continue
        if name == "PartnersSecretArn":
            values[name] = f"arn:aws:secretsmanager:{FAKE_REGION}:{FAKE_ACCOUNT}:secret:hookbox/partners-AbCdEf"
        else:
            values[name] = "x"
    values["AWS::AccountId"] = FAKE_ACCOUNT
    values["AWS::Region"] = FAKE_REGION
    values["AWS::Partition"] = "aws"
    return values


def translate(template: dict) -> dict | None:
    sam = copy.deepcopy(template)
    for name, res in (sam.get("Resources") or {}).items():
        if res.get("Type") == "AWS::Serverless::Function":
            props = res.setdefault("Properties", {})
            # What `sam package` does with a local path: upload, point at S3.
            props["CodeUri"] = f"s3://hookbox-check-artifacts/{name}.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", FAKE_REGION)
    session = boto3.session.Session(
        region_name=FAKE_REGION,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="not-a-secret",
    )
    translator = Translator(managed_policy_map={}, sam_parser=Parser(), boto_session=session)
    try:
        return translator.translate(
            sam_template=sam,
            parameter_values=fake_parameter_values(template),
            get_managed_policy_map=lambda: {},
        )
    except InvalidDocumentException as e:
        for cause in e.causes:
            problem(f"SAM transform: {cause.message}")
    except Exception as e:  # noqa: BLE001 - report whatever the translator raised
        problem(f"SAM transform failed: {type(e).__name__}: {e}")
    return None


# ----------------------------------------------------------------- workspace
def read_toml(path: Path) -> dict:
    if tomllib is None:
        problem("Python 3.11+ is needed (tomllib) to read Cargo.toml files")
        return {}
    return tomllib.loads(path.read_text())


def workspace_members() -> set[Path]:
    manifest = read_toml(ROOT / "Cargo.toml")
    members = set()
    for pattern in manifest.get("workspace", {}).get("members", []):
        for p in ROOT.glob(pattern):
            members.add(p.resolve())
    return members


def function_binaries() -> dict[str, Path]:
    """Binary name -> crate directory, for every crate under functions/."""
    bins: dict[str, Path] = {}
    for manifest in sorted((ROOT / "functions").glob("*/Cargo.toml")):
        data = read_toml(manifest)
        crate = manifest.parent
        declared = data.get("bin", [])
        for b in declared:
            bins[b["name"]] = crate
        if not declared and (crate / "src" / "main.rs").exists():
            bins[data["package"]["name"]] = crate  # cargo's implicit binary
    return bins


def planned_crates() -> set[str]:
    """Crates functions/README.md's table marks as planned."""
    readme = (ROOT / "functions" / "README.md").read_text()
    planned = set()
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and "planned" in cells[-1].lower():
            m = re.fullmatch(r"`([A-Za-z0-9_-]+)`", cells[0])
            if m:
                planned.add(m.group(1))
    return planned


def rust_sources_text() -> str:
    """Non-test Rust code of shared/src and functions/*/src."""
    parts = []
    for base in [ROOT / "shared" / "src", *sorted((ROOT / "functions").glob("*/src"))]:
        for path in sorted(base.rglob("*.rs")):
            text = path.read_text()
            cut = text.find("#[cfg(test)]")
            parts.append(text if cut < 0 else text[:cut])
    return "\n".join(parts)


# -------------------------------------------------------------------- checks
def check_functions(template: dict) -> None:
    resources = template.get("Resources") or {}
    globals_env = (
        ((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}
    ).get("Variables") or {}
    bins = function_binaries()
    members = workspace_members()
    planned = planned_crates()
    code = rust_sources_text()
    functions = {n: r for n, r in resources.items() if r.get("Type") == "AWS::Serverless::Function"}
    if not functions:
        problem("no AWS::Serverless::Function in the template")
    seen_bins = {}
    for name, res in functions.items():
        meta = res.get("Metadata") or {}
        props = res.get("Properties") or {}
        if meta.get("BuildMethod") != "rust-cargolambda":
            problem(f"{name}: Metadata.BuildMethod must be rust-cargolambda")
        binary = (meta.get("BuildProperties") or {}).get("Binary")
        code_uri = (TEMPLATE.parent / str(props.get("CodeUri", "."))).resolve()
        if code_uri != ROOT:
            problem(f"{name}: CodeUri must be the workspace root ({ROOT}), is {code_uri}")
        is_planned = False
        if not isinstance(binary, str) or not binary:
            problem(f"{name}: Metadata.BuildProperties.Binary is missing")
        elif binary in seen_bins:
            problem(f"{name}: binary {binary} is already deployed by {seen_bins[binary]}")
        elif binary in bins:
            crate = bins[binary]
            if crate.resolve() not in members:
                problem(f"{name}: crate {crate.relative_to(ROOT)} (binary {binary}) is not a workspace member")
            else:
                notes.append(f"{name}: binary {binary} in {crate.relative_to(ROOT)}")
        elif binary in planned and not (ROOT / "functions" / binary).exists():
            is_planned = True
            notes.append(
                f"{name}: binary {binary} is planned in functions/README.md, "
                f"functions/{binary}/ does not exist yet (accepted until it does)"
            )
        else:
            problem(
                f"{name}: binary {binary!r} is neither a [[bin]] of a crate under functions/ "
                f"nor a crate functions/README.md lists as planned"
            )
        if isinstance(binary, str):
            seen_bins[binary] = name

        env = dict(globals_env)
        env.update(((props.get("Environment") or {}).get("Variables")) or {})
        for var in sorted(env):
            if f'"{var}"' in code:
                continue
            if is_planned:
                notes.append(f"{name}: {var} is not read yet (planned crate; checked once it exists)")
            else:
                problem(f"{name}: sets {var}, which no Rust code under shared/src or functions/*/src reads")


def check_queue_consistency(template: dict) -> None:
    resources = template.get("Resources") or {}
    processor = resources.get("ProcessorFunction", {}).get("Properties", {})
    queue = resources.get("InboxQueue", {}).get("Properties", {})
    if not processor or not queue:
        problem("ProcessorFunction and InboxQueue must both exist")
        return
    global_timeout = ((template.get("Globals") or {}).get("Function") or {}).get("Timeout", 3)
    timeout = int(processor.get("Timeout", global_timeout))
    visibility = int(queue.get("VisibilityTimeout", 30))
    if visibility < 6 * timeout:
        problem(f"InboxQueue VisibilityTimeout {visibility} s < 6 x processor Timeout {timeout} s")
    receive = (queue.get("RedrivePolicy") or {}).get("maxReceiveCount")
    env = ((processor.get("Environment") or {}).get("Variables")) or {}
    if receive is None or receive != env.get("HOOKBOX_MAX_RECEIVE_COUNT"):
        problem(
            f"InboxQueue maxReceiveCount ({receive!r}) must be the processor's "
            f"HOOKBOX_MAX_RECEIVE_COUNT ({env.get('HOOKBOX_MAX_RECEIVE_COUNT')!r})"
        )
    if queue.get("MaximumMessageSize") != 1048576:
        problem(
            f"InboxQueue MaximumMessageSize must be 1048576 (1 MiB, what "
            f"hookbox::queue::MAX_MESSAGE_BYTES assumes), is {queue.get('MaximumMessageSize')!r}"
        )
    sqs_events = [e for e in (processor.get("Events") or {}).values() if e.get("Type") == "SQS"]
    if len(sqs_events) != 1:
        problem("ProcessorFunction needs exactly one SQS event")
    for e in sqs_events:
        if "ReportBatchItemFailures" not in (e.get("Properties") or {}).get("FunctionResponseTypes", []):
            problem("ProcessorFunction's SQS event must set FunctionResponseTypes [ReportBatchItemFailures]")


BLOB_FUNCTIONS = ("IngestFunction", "ProcessorFunction", "RelayFunction")


def check_blob_store(template: dict) -> None:
    resources = template.get("Resources") or {}
    buckets = set()
    for name in BLOB_FUNCTIONS:
        env = ((resources.get(name, {}).get("Properties", {}).get("Environment") or {}).get("Variables")) or {}
        ref = env.get("HOOKBOX_BLOB_BUCKET")
        if not (isinstance(ref, dict) and ref.get("Ref") in resources):
            problem(f"{name}: HOOKBOX_BLOB_BUCKET must be !Ref to the template's bucket, is {ref!r}")
            continue
        buckets.add(ref["Ref"])
    for bucket in sorted(buckets):
        res = resources[bucket]
        props = res.get("Properties") or {}
        if res.get("Type") != "AWS::S3::Bucket":
            problem(f"{bucket}: HOOKBOX_BLOB_BUCKET must name an AWS::S3::Bucket")
            continue
        block = props.get("PublicAccessBlockConfiguration") or {}
        for flag in ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"):
            if block.get(flag) is not True:
                problem(f"{bucket}: PublicAccessBlockConfiguration.{flag} must be true")
        if not (props.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration"):
            problem(f"{bucket}: BucketEncryption must be set")
        tls_only = any(
            r.get("Type") == "AWS::S3::BucketPolicy"
            and (r.get("Properties") or {}).get("Bucket") == {"Ref": bucket}
            and any(
                st.get("Effect") == "Deny"
                and ((st.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport") == "false"
                for st in ((r.get("Properties") or {}).get("PolicyDocument") or {}).get("Statement", [])
            )
            for r in resources.values()
        )
        if not tls_only:
            problem(f"{bucket}: a bucket policy must deny requests without TLS (aws:SecureTransport false)")


XRAY_POLICY = "policy/AWSXrayWriteOnlyAccess"
STACK_REF = {"Ref": "AWS::StackName"}
STACK_FILTER = "Stack = '${AWS::StackName}'"


def check_alarms_filter_on_stack(template: dict) -> None:
    """Every metric carries Stack=<stack name> (HOOKBOX_STACK, set in the
    Globals; hookbox::metrics), and every alarm on the `hookbox` namespace
    filters on it: two stacks in one account and region (staging beside
    production) must never fire each other's alarms."""
    env = ((((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables")) or {}
    if env.get("HOOKBOX_STACK") != STACK_REF:
        problem("Globals: HOOKBOX_STACK must be !Ref AWS::StackName (the Stack dimension of every metric)")
    checked = 0
    for name, res in (template.get("Resources") or {}).items():
        if res.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        props = res.get("Properties") or {}
        stats = [props] if props.get("Namespace") else []
        stats += [(m.get("MetricStat") or {}).get("Metric") or {} for m in props.get("Metrics") or []]
        for stat in stats:
            if stat.get("Namespace") != "hookbox":
                continue
            checked += 1
            if {"Name": "Stack", "Value": STACK_REF} not in (stat.get("Dimensions") or []):
                problem(f"{name}: a hookbox metric without the dimension Stack = !Ref AWS::StackName (it would read every stack's data)")
        for m in props.get("Metrics") or []:
            expression = m.get("Expression")
            text = expression.get("Fn::Sub") if isinstance(expression, dict) else expression
            if not isinstance(text, str) or not re.search(r"FROM\s+(SCHEMA\(\s*)?hookbox\b", text):
                continue
            checked += 1
            schema = re.search(r"SCHEMA\(\s*hookbox\s*,([^)]*)\)", text)
            if not isinstance(expression, dict) or STACK_FILTER not in text or (
                schema and "Stack" not in [d.strip() for d in schema.group(1).split(",")]
            ):
                problem(f"{name}: the query {text!r} must filter on {STACK_FILTER} (in !Sub, with Stack in its SCHEMA)")
    notes.append(f"alarms: {checked} hookbox metrics and queries, each filtered on the stack")


def alarmed_metrics(template: dict) -> set[tuple[str, str]]:
    """(namespace, metric name) of every metric an alarm reads, its queries'
    included (`SELECT SUM(unavailable) FROM … hookbox …`)."""
    out = set()
    for res in (template.get("Resources") or {}).values():
        if res.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        props = res.get("Properties") or {}
        if props.get("Namespace"):
            out.add((props["Namespace"], props.get("MetricName")))
        for m in props.get("Metrics") or []:
            metric = (m.get("MetricStat") or {}).get("Metric") or {}
            if metric:
                out.add((metric.get("Namespace"), metric.get("MetricName")))
            expression = m.get("Expression")
            text = expression.get("Fn::Sub") if isinstance(expression, dict) else expression
            if isinstance(text, str):
                found = re.search(r"SELECT\s+\w+\((\w+)\)\s+FROM\s+(?:SCHEMA\(\s*)?(\w+)", text)
                if found:
                    out.add((found.group(2), found.group(1)))
    return out


def check_dashboard(template: dict) -> None:
    """The dashboard's body is JSON once substituted, reads this stack's
    hookbox metrics only, and shows every metric an alarm reads."""
    resources = template.get("Resources") or {}
    boards = [r for r in resources.values() if r.get("Type") == "AWS::CloudWatch::Dashboard"]
    if len(boards) != 1:
        problem(f"one AWS::CloudWatch::Dashboard expected, found {len(boards)}")
        return
    body = (boards[0].get("Properties") or {}).get("DashboardBody")
    text = body.get("Fn::Sub") if isinstance(body, dict) else None
    if not isinstance(text, str):
        problem("Dashboard: DashboardBody must be a !Sub string")
        return
    for ref in re.findall(r"\$\{([^}]+)\}", text):
        name = ref.split(".")[0]
        if not ref.startswith("AWS::") and name not in resources:
            problem(f"Dashboard: ${{{ref}}} names no resource of the template")
    try:
        doc = json.loads(re.sub(r"\$\{[^}]+\}", "x", text.replace("${AWS::StackName}", "stack-x")))
    except json.JSONDecodeError as e:
        problem(f"Dashboard: the body is not JSON after substitution: {e}")
        return
    shown = set()
    for widget in doc.get("widgets") or []:
        for metric in (widget.get("properties") or {}).get("metrics") or []:
            parts = [p for p in metric if not isinstance(p, dict)]
            exprs = [p.get("expression", "") for p in metric if isinstance(p, dict)]
            if len(parts) >= 2:
                shown.add((parts[0], parts[1]))
                if parts[0] == "hookbox" and ("Stack" not in parts or parts[parts.index("Stack") + 1] != "stack-x"):
                    problem(f"Dashboard: hookbox metric {parts[1]} without Stack = the stack's name")
            for e in exprs:
                if "hookbox" in e and "stack-x" not in e:
                    problem(f"Dashboard: the query {e!r} reads every stack's metrics")
                for name in re.findall(r"(?:SUM|MAX|MIN|AVG|COUNT)\((\w+)\)|MetricName=\"(\w+)\"", e):
                    shown.add(("hookbox", name[0] or name[1]))
    missing = sorted(f"{ns} {name}" for ns, name in alarmed_metrics(template) - shown)
    if missing:
        problem(f"Dashboard: alarmed metrics it does not show: {', '.join(missing)}")
    notes.append(f"dashboard: {len(doc.get('widgets') or [])} widgets, every alarmed metric shown")


def check_translated(cfn: dict) -> None:
    resources = cfn.get("Resources") or {}
    types = [r.get("Type") for r in resources.values()]
    if any(t and t.startswith("AWS::Serverless::") for t in types):
        problem("the translated template still has AWS::Serverless:: resources")
    lambdas = [r for r in resources.values() if r.get("Type") == "AWS::Lambda::Function"]
    for fn in lambdas:
        p = fn.get("Properties", {})
        if (
            p.get("Runtime") != "provided.al2023"
            or p.get("Architectures") not in (["arm64"], [{"Ref": "Architecture"}])
            or p.get("Handler") != "bootstrap"
        ):
            problem(f"a Lambda function is not provided.al2023/Architecture/bootstrap: {p.get('Runtime')} {p.get('Architectures')} {p.get('Handler')}")
    # Logs: JSON lines, and an application level that keeps INFO. Every
    # line carries `level` (shared/src/log_format.rs); the EMF lines
    # the metric alarms read are INFO lines, so a level above INFO would drop
    # them and leave the alarms quiet (TreatMissingData: notBreaching).
    for name, res in resources.items():
        if res.get("Type") != "AWS::Lambda::Function":
            continue
        logging = res.get("Properties", {}).get("LoggingConfig") or {}
        if logging.get("LogFormat") != "JSON":
            problem(f"{name}: LoggingConfig.LogFormat must be JSON (Lambda filters JSON lines by their level), not {logging.get('LogFormat')!r}")
        level = logging.get("ApplicationLogLevel", "INFO")
        if level not in ("TRACE", "DEBUG", "INFO"):
            problem(f"{name}: LoggingConfig.ApplicationLogLevel {level!r} would drop the INFO lines carrying the metrics (EMF) the alarms read; use INFO, DEBUG or TRACE")
    # Least privilege: the only managed policy is the basic execution role
    # (logs), and no inline statement grants on every resource.
    for name, res in resources.items():
        if res.get("Type") != "AWS::IAM::Role":
            continue
        props = res.get("Properties", {})
        managed = []
        for arn in props.get("ManagedPolicyArns", []):
            text = arn if isinstance(arn, str) else str(arn.get("Fn::Sub", arn))
            managed.append(text)
            # the basic execution role (logs), and X-Ray's write-only policy
            # for active tracing (X-Ray's actions take no resource)
            if not text.endswith(("policy/service-role/AWSLambdaBasicExecutionRole", XRAY_POLICY)):
                problem(f"{name}: managed policy {text} is broader than needed")
        if not any(m.endswith(XRAY_POLICY) for m in managed):
            problem(f"{name}: no {XRAY_POLICY}: a function with active tracing cannot deploy without it")
        for policy in props.get("Policies", []):
            for st in policy.get("PolicyDocument", {}).get("Statement", []):
                if not isinstance(st, dict) or "Fn::If" in st:
                    continue
                resource = st.get("Resource")
                if resource == "*" or (isinstance(resource, list) and "*" in resource):
                    problem(f"{name}: statement {st.get('Sid', st.get('Action'))} grants on every resource")
    # Tracing: every function and the REST API's stage (HTTP APIs have no
    # X-Ray); the trace context then goes through SQS (AWSTraceHeader).
    for name, res in resources.items():
        if res.get("Type") == "AWS::Lambda::Function":
            if (res.get("Properties", {}).get("TracingConfig") or {}).get("Mode") != "Active":
                problem(f"{name}: TracingConfig.Mode must be Active")
        if res.get("Type") == "AWS::ApiGateway::Stage" and res.get("Properties", {}).get("TracingEnabled") is not True:
            problem(f"{name}: TracingEnabled must be true (X-Ray on the REST API's stage)")
    notes.append(
        f"SAM transform: {len(resources)} CloudFormation resources, {len(lambdas)} Lambda functions"
    )


# The Data API actions each binary's code calls (shared/src/store/data_api.rs:
# ExecuteStatement, and Begin/Commit/RollbackTransaction where a use case
# opens a transaction; nothing calls BatchExecuteStatement).
TX = {"rds-data:ExecuteStatement", "rds-data:BeginTransaction", "rds-data:CommitTransaction", "rds-data:RollbackTransaction"}


def management_data_api_actions() -> set[str]:
    """The management API runs one statement per call today; once its code
    (shared/src/management, shared/src/tenants, functions/management/src)
    opens a transaction (`.begin(`), the function needs the transaction
    actions too, and this check says so instead of a deployed AccessDenied."""
    for base in (ROOT / "shared" / "src" / "management", ROOT / "shared" / "src" / "tenants", ROOT / "functions" / "management" / "src"):
        for path in sorted(base.rglob("*.rs")) if base.exists() else []:
            text = path.read_text()
            cut = text.find("#[cfg(test)]")
            if ".begin(" in (text if cut < 0 else text[:cut]):
                return set(TX)
    return {"rds-data:ExecuteStatement"}


DATA_API_ACTIONS = {
    "ingest": {"rds-data:ExecuteStatement"},
    "processor": TX,
    "relay": TX,
    "migrate": TX,
    "management": management_data_api_actions(),
}
# Secrets a function reads besides its database role's, by the variable
# naming them.
SECRET_VARIABLES = ("HOOKBOX_PARTNERS_SECRET_ARN", "HOOKBOX_API_TOKENS_SECRET_ARN")
MASTER_SECRET = {"Fn::GetAtt": ["DbCluster", "MasterUserSecret.SecretArn"]}


def as_list(v):
    return v if isinstance(v, list) else [v]


def role_statements(resources: dict, role_name: str) -> list[dict]:
    out = []
    for policy in (resources.get(role_name, {}).get("Properties", {}).get("Policies") or []):
        for st in as_list(policy.get("PolicyDocument", {}).get("Statement", [])):
            if isinstance(st, dict) and "Fn::If" in st:
                # the condition's true branch (e.g. kms:Decrypt when a key is given)
                branch = st["Fn::If"][1]
                st = branch if isinstance(branch, dict) else {}
            if isinstance(st, dict) and st:
                out.append(st)
    return out


def check_secrets_and_data_api(sam: dict, cfn: dict) -> None:
    sam_resources = sam.get("Resources") or {}
    resources = cfn.get("Resources") or {}
    binaries = {
        name: ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        for name, res in sam_resources.items()
        if res.get("Type") == "AWS::Serverless::Function"
    }
    partners = {"Ref": "PartnersSecretArn"}
    owners: dict[str, str] = {}
    role_secrets: list = []
    for name, binary in binaries.items():
        fn = resources.get(name, {}).get("Properties", {})
        env = (fn.get("Environment") or {}).get("Variables") or {}
        role = fn.get("Role", {})
        role_name = role.get("Fn::GetAtt", [None])[0] if isinstance(role, dict) else None
        statements = role_statements(resources, role_name) if role_name else []
        granted, data_api = [], set()
        for st in statements:
            actions = as_list(st.get("Action", []))
            for a in actions:
                if isinstance(a, str) and "*" in a:
                    problem(f"{name}: wildcard action {a}")
            if "secretsmanager:GetSecretValue" in actions:
                granted.extend(as_list(st.get("Resource", [])))
            data_api |= {a for a in actions if isinstance(a, str) and a.startswith("rds-data:")}
        secret = env.get("DB_SECRET_ARN")
        expected = set()
        if secret is not None:
            want = DATA_API_ACTIONS.get(binary)
            if want is not None and data_api != want:
                problem(f"{name}: rds-data actions {sorted(data_api)}, the code calls exactly {sorted(want)}")
            if binary == "migrate":
                if secret != MASTER_SECRET:
                    problem(f"{name}: migrate connects with the master secret, not {secret!r}")
                try:
                    mapping = env.get("HOOKBOX_ROLE_SECRET_ARNS")
                    role_secrets = re.findall(r"\$\{(\w+)\}", mapping["Fn::Sub"]) if isinstance(mapping, dict) else []
                except (KeyError, TypeError):
                    role_secrets = []
                expected |= {json.dumps(MASTER_SECRET, sort_keys=True)}
                expected |= {json.dumps({"Ref": r}, sort_keys=True) for r in role_secrets}
            else:
                ref = secret.get("Ref") if isinstance(secret, dict) else None
                res = sam_resources.get(ref or "", {})
                template = ((res.get("Properties") or {}).get("GenerateSecretString") or {}).get("SecretStringTemplate", "{}")
                username = json.loads(template).get("username") if isinstance(template, str) else None
                if res.get("Type") != "AWS::SecretsManager::Secret" or username != f"hookbox_{binary}":
                    problem(f"{name}: DB_SECRET_ARN must be !Ref to a secret of its own role hookbox_{binary}, is {secret!r}")
                elif ref in owners:
                    problem(f"{name}: secret {ref} is already {owners[ref]}'s")
                else:
                    owners[ref] = name
                expected.add(json.dumps(secret, sort_keys=True))
        if "HOOKBOX_PARTNERS_SECRET_ARN" in env:
            expected.add(json.dumps(partners, sort_keys=True))
        for var in SECRET_VARIABLES[1:]:
            if var in env:
                expected.add(json.dumps(env[var], sort_keys=True))
        got = {json.dumps(r, sort_keys=True) for r in granted}
        if got != expected:
            extra = sorted(got - expected)
            missing = sorted(expected - got)
            problem(
                f"{name}: secretsmanager:GetSecretValue must be on exactly its own secrets"
                + (f"; granted besides: {', '.join(extra)}" if extra else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
    for r in role_secrets:
        if r not in owners:
            problem(f"MigrateFunction sets the password of {r}, which no function uses")


SCHEDULE = re.compile(
    r"^(rate\(1 (minute|hour|day)\)|rate\(([2-9]|[1-9][0-9]+) (minutes|hours|days)\)|cron\(\S+( \S+){5}\))$"
)


def check_processor_handler(template: dict) -> None:
    for name, res in (template.get("Resources") or {}).items():
        props = res.get("Properties") or {}
        binary = ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        if res.get("Type") != "AWS::Serverless::Function" or binary != "processor":
            continue
        env = (props.get("Environment") or {}).get("Variables") or {}
        handler = env.get("HOOKBOX_HANDLER")
        if handler != "routes":
            problem(
                f"{name}: HOOKBOX_HANDLER is {handler!r}: a deployed processor forwards by "
                "routes ('routes'); the example orders domain is for the local demo and tests"
            )
        if "HOOKBOX_PARTNERS_SECRET_ARN" not in env:
            problem(f"{name}: routes need the partners' configuration (HOOKBOX_PARTNERS_SECRET_ARN)")
    for name, res in (template.get("Resources") or {}).items():
        binary = ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        if res.get("Type") != "AWS::Serverless::Function" or binary != "ingest":
            continue
        env = ((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        forward = env.get("HOOKBOX_FORWARD_AT_INGEST")
        if str(forward).lower() != "true":
            problem(
                f"{name}: HOOKBOX_FORWARD_AT_INGEST is {forward!r}: a deployed ingest forwards "
                "routed webhooks in the statement that stores them ('true')"
            )


def check_schedules(template: dict) -> None:
    for name, res in (template.get("Resources") or {}).items():
        for ev_name, ev in (((res.get("Properties") or {}).get("Events")) or {}).items():
            if ev.get("Type") not in ("Schedule", "ScheduleV2"):
                continue
            expr = (ev.get("Properties") or {}).get("Schedule") or (ev.get("Properties") or {}).get("ScheduleExpression")
            if not isinstance(expr, str) or not SCHEDULE.match(expr):
                problem(f"{name}.{ev_name}: schedule expression {expr!r} is not rate(1 minute), rate(N minutes) or cron(6 fields)")


# The relay's destination permissions: action -> the parameter listing the
# resources it may be granted on (besides the inbox queue for SendMessage).
DESTINATION_GRANTS = {
    "events:PutEvents": "RelayEventBusArns",
    "sqs:SendMessage": "RelaySqsQueueArns",
}
ARN_SAMPLES = {
    "RelayEventBusArns": "arn:aws:events:eu-west-1:123456789012:event-bus/orders",
    "RelaySqsQueueArns": "arn:aws:sqs:eu-west-1:123456789012:orders.fifo",
}


def check_relay_destinations(template: dict, cfn: dict) -> None:
    params = template.get("Parameters") or {}
    for name, sample in ARN_SAMPLES.items():
        pattern = (params.get(name) or {}).get("AllowedPattern")
        if not pattern:
            problem(f"parameter {name} is missing or has no AllowedPattern")
            continue
        if not re.fullmatch(pattern, sample) or not re.fullmatch(pattern, ""):
            problem(f"parameter {name}: AllowedPattern refuses an ARN ({sample}) or the empty default")
        for wild in ("*", sample.rsplit(":", 1)[0] + ":*", sample[:-1] + "*", "arn:aws:sqs:*:123456789012:q"):
            if re.fullmatch(pattern, wild):
                problem(f"parameter {name}: AllowedPattern accepts the wildcard {wild!r}")
    resources = cfn.get("Resources") or {}
    for role, res in resources.items():
        if res.get("Type") != "AWS::IAM::Role":
            continue
        for st in role_statements(resources, role):
            actions = as_list(st.get("Action", []))
            for action, param in DESTINATION_GRANTS.items():
                if action not in actions:
                    continue
                allowed = [{"Ref": param}]
                if action == "sqs:SendMessage":
                    allowed.append({"Fn::GetAtt": ["InboxQueue", "Arn"]})
                if role != "RelayFunctionRole" and action == "events:PutEvents":
                    problem(f"{role}: {action} is the relay's alone")
                if st.get("Resource") not in allowed:
                    problem(f"{role}: {action} on {st.get('Resource')!r}, not exactly the {param} parameter")
    relay = role_statements(resources, "RelayFunctionRole")
    for action, param in DESTINATION_GRANTS.items():
        if not any(action in as_list(st.get("Action", [])) and st.get("Resource") == {"Ref": param} for st in relay):
            problem(f"RelayFunctionRole: no {action} on the {param} parameter (destinations of that type could never be reached)")
    notes.append("relay destinations: events:PutEvents and sqs:SendMessage on exactly the parameters' ARNs")


def check_notices(template: dict, cfn: dict) -> None:
    resources = cfn.get("Resources") or {}
    for role, res in resources.items():
        if res.get("Type") != "AWS::IAM::Role":
            continue
        for st in role_statements(resources, role):
            actions = as_list(st.get("Action", []))
            if any(a in ("sns:Publish", "sns:*") for a in actions):
                if role != "RelayFunctionRole":
                    problem(f"{role}: sns:Publish is the relay's alone (its notices)")
                if st.get("Resource") != {"Ref": "AlarmTopic"}:
                    problem(f"{role}: sns:Publish on {st.get('Resource')!r}, not exactly the AlarmTopic")
    relay = role_statements(resources, "RelayFunctionRole")
    if not any("sns:Publish" in as_list(st.get("Action", [])) for st in relay):
        problem("RelayFunctionRole: no sns:Publish on the AlarmTopic (its notices would never be sent)")
    for name, res in functions_of(template, "relay").items():
        env = ((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        if env.get("HOOKBOX_ALARM_TOPIC_ARN") != {"Ref": "AlarmTopic"}:
            problem(f"{name}: HOOKBOX_ALARM_TOPIC_ARN must be !Ref AlarmTopic (its notices)")
    notes.append("notices: sns:Publish by the relay alone, on exactly the AlarmTopic")


# ------------------------------------------------------------ management API
# The routes of the management function and the resources its code knows
# (functions/management/src/event.rs: BEARER_RESOURCE, IAM_RESOURCE).
BEARER_ROUTE = "/api/v1/{proxy+}"
IAM_ROUTE = "/iam/api/v1/{proxy+}"
# the customer portal's page and API (docs/portal.md): the function checks
# the link's key, as it checks the bearer token
PORTAL_ROUTES = ("/portal", "/portal/{proxy+}")
# the operator page (docs/portal.md, "The operator page"): the function
# checks the operator link's key
ADMIN_ROUTES = ("/admin", "/admin/{proxy+}")
MANAGEMENT_EVENT_CODE = ROOT / "functions" / "management" / "src" / "event.rs"
OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch", "x-amazon-apigateway-any-method")


def functions_of(template: dict, binary: str) -> dict:
    return {
        name: res
        for name, res in (template.get("Resources") or {}).items()
        if res.get("Type") == "AWS::Serverless::Function"
        and ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary") == binary
    }


def check_management_api(template: dict, cfn: dict) -> None:
    functions = functions_of(template, "management")
    if len(functions) != 1:
        problem(f"the management function must be deployed once, is {len(functions)} times")
        return
    name, res = next(iter(functions.items()))
    code = MANAGEMENT_EVENT_CODE.read_text() if MANAGEMENT_EVENT_CODE.exists() else ""
    for route in (BEARER_ROUTE, IAM_ROUTE, *PORTAL_ROUTES, *ADMIN_ROUTES):
        if f'"{route}"' not in code:
            problem(f"{name}: route {route} is not a resource {MANAGEMENT_EVENT_CODE.relative_to(ROOT)} knows")
    # its routes are WebhookApi's definition (check_api_security), an
    # event would add one (and SAM would merge ANY as a method `any`)
    for ev_name, ev in (((res.get("Properties") or {}).get("Events")) or {}).items():
        problem(
            f"{name}.{ev_name}: the management function's routes are WebhookApi's definition "
            f"({BEARER_ROUTE}, {IAM_ROUTE}) with their permissions; an event (type {ev.get('Type')}) would add another"
        )
    notes.append(
        f"management API: {BEARER_ROUTE} (bearer, checked by the function), {IAM_ROUTE} (AWS_IAM); "
        f"the portal: {', '.join(PORTAL_ROUTES)} (a link's key, checked by the function); "
        f"the operator page: {', '.join(ADMIN_ROUTES)} (an operator link's key)"
    )


def api_definitions(resources: dict) -> dict[str, tuple[str, dict]]:
    """Every API of a translated template: logical id -> (type, body)."""
    return {
        name: (res["Type"], (res.get("Properties") or {}).get("Body") or {})
        for name, res in resources.items()
        if res.get("Type") in (REST_API, HTTP_API)
    }


def security_schemes(body: dict) -> dict:
    """Swagger 2.0 securityDefinitions or OpenAPI 3 components.securitySchemes."""
    return body.get("securityDefinitions") or (body.get("components") or {}).get("securitySchemes") or {}


def check_api_security(cfn: dict) -> None:
    """Security of each operation of every API (a translated template with
    the ingress conditions resolved, so the webhook routes are plain)."""
    resources = cfn.get("Resources") or {}
    rest = (resources.get("WebhookApi") or {}).get("Properties", {}).get("Body") or {}
    if (security_schemes(rest).get("AWS_IAM") or {}).get("x-amazon-apigateway-authtype") != "awsSigv4":
        problem("WebhookApi: no AWS_IAM (awsSigv4) security definition")
    management = set()
    for api, (_, body) in api_definitions(resources).items():
        definitions = security_schemes(body)
        for path, ops in (body.get("paths") or {}).items():
            for method, op in (ops if isinstance(ops, dict) else {}).items():
                if method not in OPERATIONS:
                    if not (method.startswith("x-") or method == "parameters"):
                        problem(f"{api} {path}: {method!r} is not a method API Gateway knows (ANY is x-amazon-apigateway-any-method)")
                    continue
                security = [k for entry in (op.get("security") or []) for k in entry]
                integration = op.get("x-amazon-apigateway-integration") or {}
                if names(integration.get("uri")) == "ManagementFunction":
                    management.add((api, path, method))
                if api == "WebhookApi" and path == IAM_ROUTE:
                    if security != ["AWS_IAM"]:
                        problem(f"WebhookApi {method} {path}: security {security}, must be exactly AWS_IAM")
                    if integration.get("credentials") is not None:
                        problem(f"WebhookApi {method} {path}: invoked with credentials {integration.get('credentials')!r}, must be none")
                elif api == "WebhookApi" and path in (BEARER_ROUTE, *PORTAL_ROUTES, *ADMIN_ROUTES):
                    if security not in ([], ["NONE"]):
                        problem(f"WebhookApi {method} {path}: security {security}; the function checks the bearer token or the link's key")
                elif not [k for k in security if k in definitions]:
                    problem(f"{api} {method} {path}: no authorizer (only the management API's bearer route and the portal's may have none)")
                if integration.get("credentials") is not None and not (api == "WebhookApi" and path == IAM_ROUTE):
                    problem(f"{api} {method} {path}: invoked with credentials {integration.get('credentials')!r}; API Gateway invokes the function with its permission")
    want = {
        ("WebhookApi", path, "x-amazon-apigateway-any-method")
        for path in (BEARER_ROUTE, IAM_ROUTE, *PORTAL_ROUTES, *ADMIN_ROUTES)
    }
    if management != want:
        problem(f"the management function is integrated as {sorted(management)}, must be exactly {sorted(want)} (ANY on its two routes)")


# The key vault: the encryption context the code sends (shared/src/vault/kms.rs).
KMS_CODE = ROOT / "shared" / "src" / "vault" / "kms.rs"
# What each function may do with the endpoint secrets' key.
KMS_ACTIONS = {
    # open secrets; seal one an endpoint made through SQL lacks (a new data
    # key when none of this key exists yet)
    "relay": {"kms:Decrypt", "kms:GenerateDataKey"},
    # seal new and rotated secrets; open one to show it to its owner
    "management": {"kms:Decrypt", "kms:GenerateDataKey"},
}
# The management function's role, whole: the Data API, its two secrets,
# the endpoint secrets' key, and the inbox queue (the operator page's
# replays).
MANAGEMENT_ACTIONS = (
    DATA_API_ACTIONS["management"] | {"secretsmanager:GetSecretValue", "sqs:SendMessage"} | KMS_ACTIONS["management"]
)


def kms_purpose() -> tuple[str, str] | None:
    text = KMS_CODE.read_text() if KMS_CODE.exists() else ""
    m = re.search(r'const PURPOSE: \(&str, &str\) = \("([^"]+)", "([^"]+)"\);', text)
    return (m.group(1), m.group(2)) if m else None


def check_endpoint_secrets_key(template: dict, cfn: dict) -> None:
    purpose = kms_purpose()
    if purpose is None:
        problem(f"{KMS_CODE.relative_to(ROOT)}: no `const PURPOSE: (&str, &str) = (\"…\", \"…\");` (the encryption context)")
        return
    context_key = f"kms:EncryptionContext:{purpose[0]}"
    resources = template.get("Resources") or {}
    keys = {n: r for n, r in resources.items() if r.get("Type") == "AWS::KMS::Key"}
    if len(keys) != 1:
        problem(f"the template must hold exactly one AWS::KMS::Key (the endpoint secrets'), holds {sorted(keys)}")
        return
    key_name, key = next(iter(keys.items()))
    props = key.get("Properties") or {}
    if props.get("EnableKeyRotation") is not True:
        problem(f"{key_name}: EnableKeyRotation must be true")
    if props.get("KeySpec", "SYMMETRIC_DEFAULT") != "SYMMETRIC_DEFAULT" or props.get("KeyUsage", "ENCRYPT_DECRYPT") != "ENCRYPT_DECRYPT":
        problem(f"{key_name}: must be a symmetric ENCRYPT_DECRYPT key (GenerateDataKey)")
    if key.get("DeletionPolicy") != "Retain" or key.get("UpdateReplacePolicy") != "Retain":
        problem(f"{key_name}: DeletionPolicy and UpdateReplacePolicy must be Retain (without it no endpoint secret opens again)")
    if not any(
        r.get("Type") == "AWS::KMS::Alias" and (r.get("Properties") or {}).get("TargetKeyId") in ({"Ref": key_name}, {"Fn::GetAtt": [key_name, "Arn"]})
        for r in resources.values()
    ):
        problem(f"{key_name}: no AWS::KMS::Alias targets it")
    denies = [
        st for st in ((props.get("KeyPolicy") or {}).get("Statement") or [])
        if st.get("Effect") == "Deny"
        and ((st.get("Condition") or {}).get("StringNotEquals") or {}).get(context_key) == purpose[1]
    ]
    denied = {a for st in denies for a in as_list(st.get("Action", []))}
    for action in ("kms:Decrypt", "kms:GenerateDataKey", "kms:Encrypt"):
        if action not in denied:
            problem(f"{key_name}: the key policy must deny {action} without the encryption context {purpose[0]}={purpose[1]}")
    key_refs = ({"Fn::GetAtt": [key_name, "Arn"]}, {"Ref": key_name})
    # who says they use it
    users = {}
    for name, res in resources.items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        env = ((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        binary = ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        if "HOOKBOX_KMS_KEY_ID" in env:
            if env["HOOKBOX_KMS_KEY_ID"] not in key_refs:
                problem(f"{name}: HOOKBOX_KMS_KEY_ID must be !GetAtt {key_name}.Arn, is {env['HOOKBOX_KMS_KEY_ID']!r}")
            users[f"{name}Role"] = (name, binary)
    for binary in KMS_ACTIONS:
        if not any(b == binary for _, b in users.values()):
            problem(f"the {binary} function must set HOOKBOX_KMS_KEY_ID (tenants' endpoint secrets)")
    # what the roles may do with it (translated template)
    cfn_resources = cfn.get("Resources") or {}
    for role, res in cfn_resources.items():
        if res.get("Type") != "AWS::IAM::Role":
            continue
        granted = set()
        for st in role_statements(cfn_resources, role):
            actions = [a for a in as_list(st.get("Action", [])) if isinstance(a, str) and a.startswith("kms:")]
            if not actions:
                continue
            resource = st.get("Resource")
            if resource == {"Ref": "PartnersSecretKmsKeyArn"}:
                via = ((st.get("Condition") or {}).get("StringEquals") or {}).get("kms:ViaService")
                if actions != ["kms:Decrypt"] or not via:
                    problem(f"{role}: the partners secret's key allows kms:Decrypt via Secrets Manager only, not {actions}")
                continue
            if resource not in key_refs:
                problem(f"{role}: {actions} on {resource!r}, not the endpoint secrets' key {key_name}")
                continue
            condition = (st.get("Condition") or {}).get("StringEquals") or {}
            if condition.get(context_key) != purpose[1]:
                problem(f"{role}: {actions} on {key_name} without the condition {context_key} = {purpose[1]}")
            granted |= set(actions)
        user = users.get(role)
        if user is None:
            if granted:
                problem(f"{role}: {sorted(granted)} on {key_name}, but its function does not set HOOKBOX_KMS_KEY_ID")
            continue
        want = KMS_ACTIONS.get(user[1])
        if want is None:
            problem(f"{user[0]}: binary {user[1]} uses {key_name}, but KMS_ACTIONS does not say what it may do")
        elif granted != want:
            problem(f"{role}: KMS actions {sorted(granted)} on {key_name}, must be exactly {sorted(want)}")
    notes.append(f"{key_name}: rotated, retained, aliased; used under {purpose[0]}={purpose[1]} by {sorted(n for n, _ in users.values())}")


HASH_ENTRY_KEYS = {"name", "sha256"}
BEARER_TOKEN = re.compile(r"(?i)\bbearer\s+(?!<)[A-Za-z0-9._~+/=-]{8,}")


def check_api_tokens(template: dict, cfn: dict) -> None:
    resources = template.get("Resources") or {}
    globals_env = ((((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables")) or {}
    if "HOOKBOX_API_TOKENS" in globals_env:
        problem("Globals: HOOKBOX_API_TOKENS may not be set in the template (hashes belong in the tokens' secret)")
    for name, res in resources.items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        env = ((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        if "HOOKBOX_API_TOKENS" in env and env["HOOKBOX_API_TOKENS"] != {"Ref": "AWS::NoValue"}:
            problem(f"{name}: HOOKBOX_API_TOKENS is set in the template; only !Ref AWS::NoValue (local runs) is allowed, the hashes belong in the tokens' secret")
        if "HOOKBOX_API_TOKENS_SECRET_ARN" not in env:
            continue
        ref = env["HOOKBOX_API_TOKENS_SECRET_ARN"]
        secret = resources.get(ref.get("Ref", "") if isinstance(ref, dict) else "", {})
        if secret.get("Type") != "AWS::SecretsManager::Secret":
            problem(f"{name}: HOOKBOX_API_TOKENS_SECRET_ARN must be !Ref to a secret of the template, is {ref!r}")
            continue
        props = secret.get("Properties") or {}
        if "GenerateSecretString" in props:
            problem(f"{ref['Ref']}: a generated value is a token in clear; the tokens' secret holds hashes only")
        text = props.get("SecretString")
        if text is None:
            continue
        try:
            entries = json.loads(text) if isinstance(text, str) else None
        except json.JSONDecodeError:
            entries = None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and set(e) == HASH_ENTRY_KEYS and re.fullmatch(r"[0-9a-fA-F]{64}", str(e.get("sha256")))
            for e in entries
        ):
            problem(f"{ref['Ref']}: SecretString must be a JSON list of {{\"name\", \"sha256\": <64 hex>}} (hashes, never tokens)")
    for m in BEARER_TOKEN.finditer(TEMPLATE.read_text()):
        problem(f"the template's text holds what looks like a bearer token: {m.group(0)[:14]}…")
    for name, res in functions_of(template, "management").items():
        role = f"{name}Role"
        extra = set()
        for st in role_statements(cfn.get("Resources") or {}, role):
            actions = {a for a in as_list(st.get("Action", [])) if isinstance(a, str)}
            extra |= actions - MANAGEMENT_ACTIONS
            # the operator page's replays: the inbox queue, nothing else
            if "sqs:SendMessage" in actions and as_list(st.get("Resource")) != [{"Fn::GetAtt": ["InboxQueue", "Arn"]}]:
                problem(f"{role}: sqs:SendMessage on {st.get('Resource')!r}, must be the inbox queue alone (the operator page's replays)")
        if extra:
            problem(f"{role}: actions {sorted(extra)} beyond what the management API calls ({sorted(MANAGEMENT_ACTIONS)})")


# ------------------------------------------------------------------ ingress
# The webhook ingress (docs/ingress.md): the Ingress parameter puts the
# webhook routes on the REST API (rest) or on an HTTP API (http). Checked
# on the translated template resolved for each value (what CloudFormation
# deploys: conditions evaluated, resources under a false one gone, Fn::If
# replaced by its branch), with and without the webhook throttle.
REST_API = "AWS::ApiGateway::RestApi"
HTTP_API = "AWS::ApiGatewayV2::Api"
INGRESS_PARAMETER = "Ingress"
INGRESS_APIS = {"rest": ("WebhookApi", REST_API), "http": ("WebhookHttpApi", HTTP_API)}
WEBHOOK_PATH = "/webhooks/{partner}"
WEBHOOK_METHODS = {"post", "get"}  # webhooks, and the providers' GET handshakes
THROTTLE = ("WebhookThrottleRateLimit", "WebhookThrottleBurstLimit")
THROTTLE_SAMPLE = {"WebhookThrottleRateLimit": "500", "WebhookThrottleBurstLimit": "1000"}
UNKNOWN = object()


def _value(v, params: dict):
    """A condition operand: a literal, or a parameter's value when known."""
    if isinstance(v, (str, int, float, bool)):
        return str(v)
    if isinstance(v, dict) and set(v) == {"Ref"} and v["Ref"] in params:
        return str(params[v["Ref"]])
    return UNKNOWN


def evaluate(expr, conditions: dict, params: dict, seen: tuple = ()):
    """True, False, or None (depends on a parameter not in params)."""
    if isinstance(expr, dict) and len(expr) == 1:
        (fn, args), = expr.items()
        if fn == "Condition":
            if args in seen or args not in conditions:
                return None
            return evaluate(conditions[args], conditions, params, seen + (args,))
        if fn == "Fn::Equals":
            a, b = (_value(x, params) for x in args)
            return None if UNKNOWN in (a, b) else a == b
        if fn == "Fn::Not":
            v = evaluate(args[0], conditions, params, seen)
            return None if v is None else not v
        if fn in ("Fn::And", "Fn::Or"):
            values = [evaluate(x, conditions, params, seen) for x in args]
            if fn == "Fn::And":
                return False if False in values else (None if None in values else True)
            return True if True in values else (None if None in values else False)
    return None


NO_VALUE = {"Ref": "AWS::NoValue"}


def resolve(cfn: dict, params: dict) -> dict:
    """The translated template as deployed with `params` (a partial map):
    conditions decidable from params evaluated, resources and outputs under
    a false one removed, Fn::If on a decided condition replaced by its
    branch (AWS::NoValue dropped); the rest left as it is."""
    conditions = cfn.get("Conditions") or {}
    decided = {name: evaluate({"Condition": name}, conditions, params) for name in conditions}

    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"Fn::If"} and isinstance(v["Fn::If"], list):
                name, *branches = v["Fn::If"]
                if decided.get(name) is not None:
                    return walk(branches[0] if decided[name] else branches[1])
                # undecided: both branches stay (AWS::NoValue included)
                return {"Fn::If": [name, *(walk(b) for b in branches)]}
            out = {}
            for k, x in v.items():
                x = walk(x)
                if x != NO_VALUE:
                    out[k] = x
            return out
        if isinstance(v, list):
            return [x for x in (walk(x) for x in v) if x != NO_VALUE]
        return v

    out = copy.deepcopy(cfn)
    for section in ("Resources", "Outputs"):
        kept = {}
        for name, item in (out.get(section) or {}).items():
            condition = decided.get(item.get("Condition"))
            if condition is False:
                continue
            item = walk(item)
            if condition is True:
                del item["Condition"]
            kept[name] = item
        out[section] = kept
    return out


def deployable(cfn: dict, params: dict) -> dict:
    """resolve(), with the conditions it decided gone from Conditions (in a
    remaining Fn::And or Fn::Or, a decided member can only be the one that
    does not decide it: it is dropped), so that cfn-lint reads the template
    CloudFormation would deploy."""
    out = resolve(cfn, params)
    conditions = cfn.get("Conditions") or {}
    decided = {name: evaluate({"Condition": name}, conditions, params) for name in conditions}

    def walk(v):
        if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("Fn::And", "Fn::Or"):
            (fn, members), = v.items()
            kept = [
                walk(m) for m in members
                if not (isinstance(m, dict) and set(m) == {"Condition"} and decided.get(m["Condition"]) is not None)
            ]
            return kept[0] if len(kept) == 1 else {fn: kept}
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    out["Conditions"] = {n: walk(c) for n, c in conditions.items() if decided[n] is None}
    if not out["Conditions"]:
        del out["Conditions"]
    return out


def sub_text(v) -> str | None:
    """The text of an Fn::Sub (its ${...} variables of the list form put in:
    a Ref or GetAtt as ${Name}, a literal as itself), or a plain string."""
    if isinstance(v, str):
        return v
    if not (isinstance(v, dict) and set(v) == {"Fn::Sub"}):
        return None
    arg = v["Fn::Sub"]
    if isinstance(arg, str):
        return arg
    text, variables = arg[0], arg[1] if len(arg) > 1 else {}
    for name, val in variables.items():
        if isinstance(val, dict) and "Ref" in val:
            val = "${" + val["Ref"] + "}"
        elif isinstance(val, dict) and "Fn::GetAtt" in val:
            val = "${" + ".".join(val["Fn::GetAtt"]) + "}"
        elif not isinstance(val, str):
            return None
        text = text.replace("${" + name + "}", val)
    return text


EXECUTE_API = re.compile(
    r"^arn:(?:aws|\$\{AWS::Partition\}):execute-api:\$\{AWS::Region\}:\$\{AWS::AccountId\}:\$\{(\w+)\}/(.+)$"
)


def function_ref(v) -> str | None:
    """The logical id a permission's FunctionName names."""
    if isinstance(v, dict) and "Ref" in v:
        return v["Ref"]
    if isinstance(v, dict) and "Fn::GetAtt" in v:
        return v["Fn::GetAtt"][0]
    return None


def invoke_permissions(resources: dict, apis: dict) -> dict[str, set[tuple[str, str]]]:
    """API Gateway's invoke permissions: function -> {(api, rest of the ARN)};
    a permission not scoped to an API of the stack is a problem."""
    out: dict[str, set[tuple[str, str]]] = {}
    for name, res in resources.items():
        if res.get("Type") != "AWS::Lambda::Permission":
            continue
        props = res.get("Properties") or {}
        if props.get("Principal") != "apigateway.amazonaws.com":
            continue
        text = sub_text(props.get("SourceArn"))
        m = EXECUTE_API.match(text or "")
        if not m or m.group(1) not in apis:
            problem(f"{name}: API Gateway may invoke {function_ref(props.get('FunctionName'))} from {props.get('SourceArn')!r}, not one API of the stack")
            continue
        out.setdefault(function_ref(props.get("FunctionName")), set()).add((m.group(1), m.group(2)))
    return out


def names(v) -> str | None:
    """The logical id an integration or authorizer URI invokes."""
    text = sub_text(v) or ""
    m = re.search(r"/functions/\$\{(\w+)\.Arn\}/invocations$", text) or re.fullmatch(r"\$\{(\w+)\.Arn\}", text)
    if m:
        return m.group(1)
    if isinstance(v, dict) and "Fn::GetAtt" in v:
        return v["Fn::GetAtt"][0]
    return None


def check_webhook_routes(label: str, api: str, kind: str, body: dict) -> None:
    ops = (body.get("paths") or {}).get(WEBHOOK_PATH)
    methods = {m for m in (ops or {}) if m in OPERATIONS}
    if methods != WEBHOOK_METHODS:
        problem(f"{label}: {api} {WEBHOOK_PATH} has methods {sorted(methods)}, must be exactly {sorted(WEBHOOK_METHODS)}")
    schemes = security_schemes(body)
    for method in sorted(methods):
        op = ops[method]
        where = f"{label}: {api} {method} {WEBHOOK_PATH}"
        integration = op.get("x-amazon-apigateway-integration") or {}
        if integration.get("type") != "aws_proxy" or integration.get("httpMethod") != "POST" or names(integration.get("uri")) != "IngestFunction":
            problem(f"{where}: must be a Lambda proxy integration (aws_proxy, POST) of IngestFunction")
        payload = integration.get("payloadFormatVersion")
        if kind == HTTP_API and payload != "2.0":
            problem(f"{where}: payloadFormatVersion {payload!r}, must be '2.0' (the event shape ingest reads from an HTTP API)")
        if kind == REST_API and payload is not None:
            problem(f"{where}: a REST API has no payloadFormatVersion ({payload!r})")
        security = [k for entry in (op.get("security") or []) for k in entry]
        if len(security) != 1 or security[0] not in schemes:
            problem(f"{where}: security {security}, must be exactly the partners' authorizer")
            continue
        auth = (schemes[security[0]] or {}).get("x-amazon-apigateway-authorizer") or {}
        what = f"{label}: {api} authorizer {security[0]}"
        if auth.get("type") != "request" or names(auth.get("authorizerUri")) != "AuthorizerFunction":
            problem(f"{what}: must be a REQUEST authorizer invoking AuthorizerFunction")
        if auth.get("authorizerResultTtlInSeconds") != 0:
            problem(
                f"{what}: authorizerResultTtlInSeconds {auth.get('authorizerResultTtlInSeconds')!r}, must be 0 "
                "(a cached answer would skip the timestamp and source-IP checks)"
            )
        if auth.get("identitySource"):
            problem(
                f"{what}: identity source {auth.get('identitySource')!r}: API Gateway would answer 401 itself "
                "when it is missing, before the authorizer runs; with caching off none is needed"
            )
        if kind == HTTP_API:
            if auth.get("authorizerPayloadFormatVersion") != "2.0":
                problem(f"{what}: authorizerPayloadFormatVersion {auth.get('authorizerPayloadFormatVersion')!r}, must be '2.0'")
            if auth.get("enableSimpleResponses") is not True:
                problem(f"{what}: enableSimpleResponses must be true (the authorizer answers isAuthorized)")
    if kind == REST_API and "*/*" not in (body.get("x-amazon-apigateway-binary-media-types") or []):
        problem(f"{label}: {api} must have the binary media type */* (every body base64, byte for byte)")


def stage_of(resources: dict, api: str, kind: str) -> tuple[str, dict] | None:
    stage_type = "AWS::ApiGateway::Stage" if kind == REST_API else "AWS::ApiGatewayV2::Stage"
    key = "RestApiId" if kind == REST_API else "ApiId"
    stages = [
        (n, r.get("Properties") or {}) for n, r in resources.items()
        if r.get("Type") == stage_type and (r.get("Properties") or {}).get(key) == {"Ref": api}
        and (r.get("Properties") or {}).get("StageName") == {"Ref": "StageName"}
    ]
    return stages[0] if len(stages) == 1 else None


def throttles(settings: dict) -> dict:
    return {k: settings[k] for k in ("ThrottlingRateLimit", "ThrottlingBurstLimit") if k in settings}


def check_throttle(label: str, api: str, kind: str, resources: dict, throttled: bool) -> None:
    stage = stage_of(resources, api, kind)
    if stage is None:
        problem(f"{label}: {api} needs exactly one stage named by the StageName parameter")
        return
    stage_name, props = stage
    want = {"ThrottlingRateLimit": {"Ref": THROTTLE[0]}, "ThrottlingBurstLimit": {"Ref": THROTTLE[1]}} if throttled else {}
    if kind == REST_API:
        settings = props.get("MethodSettings") or []
        for method in sorted(WEBHOOK_METHODS):
            got = [
                throttles(s) for s in settings
                if s.get("ResourcePath") in ("/*", "/~1webhooks~1{partner}") and s.get("HttpMethod") in ("*", method.upper())
            ]
            got = [g for g in got if g]
            if (got != [want]) if throttled else got:
                problem(f"{label}: {stage_name} throttles {method.upper()} {WEBHOOK_PATH} with {got}, must be {[want] if throttled else 'nothing (the account limit)'}")
    else:
        got = throttles(props.get("DefaultRouteSettings") or {})
        if got != want:
            problem(f"{label}: {stage_name} DefaultRouteSettings throttle {got}, must be {want or 'nothing (the account limit)'}")
        for key, settings in (props.get("RouteSettings") or {}).items():
            if throttles(settings if isinstance(settings, dict) else {}):
                problem(f"{label}: {stage_name} RouteSettings {key} overrides the webhook routes' throttle")


def check_ingress_variant(template: dict, cfn: dict, ingress: str, throttled: bool) -> str:
    params = {INGRESS_PARAMETER: ingress, **({k: "0" for k in THROTTLE} if not throttled else THROTTLE_SAMPLE)}
    label = f"Ingress={ingress}" + (" throttled" if throttled else "")
    deployed = resolve(cfn, params)
    resources = deployed.get("Resources") or {}
    apis = api_definitions(resources)
    api, kind = INGRESS_APIS[ingress]
    # exactly one API carries the webhook routes, the ingress's; the REST
    # API stays (the management API), the HTTP API exists only for http
    carrying = sorted(a for a, (_, body) in apis.items() if any(m in OPERATIONS for m in ((body.get("paths") or {}).get(WEBHOOK_PATH) or {})))
    if carrying != [api]:
        problem(f"{label}: the webhook routes are on {carrying}, must be on {api} alone")
    if apis.get(api, (None,))[0] != kind:
        problem(f"{label}: {api} must exist as {kind}")
    if ingress == "rest" and any(r.get("Type", "").startswith("AWS::ApiGatewayV2::") for r in resources.values()):
        problem(f"{label}: {sorted(n for n, r in resources.items() if r.get('Type', '').startswith('AWS::ApiGatewayV2::'))} exist; with Ingress rest no HTTP API may")
    if "WebhookApi" not in apis:
        problem(f"{label}: WebhookApi (the management API) must exist whatever the ingress")
    check_api_security(deployed)
    if api in apis:
        check_webhook_routes(label, api, kind, apis[api][1])
        check_throttle(label, api, kind, resources, throttled)
    # least privilege: API Gateway invokes ingest for exactly the webhook
    # routes of the ingress's stage, the authorizer for that API's authorizers
    granted = invoke_permissions(resources, apis)
    want_ingest = {(api, f"${{StageName}}/{m.upper()}/webhooks/*") for m in WEBHOOK_METHODS}
    if granted.get("IngestFunction", set()) != want_ingest:
        problem(
            f"{label}: API Gateway may invoke IngestFunction from {sorted(granted.get('IngestFunction', set()))}, "
            f"must be exactly {sorted(want_ingest)}"
        )
    authorizer = granted.get("AuthorizerFunction", set())
    if (api, "authorizers/*") not in authorizer:
        problem(f"{label}: {api}'s authorizers may not invoke AuthorizerFunction")
    # SAM grants the REST API's authorizers from its Auth, which cannot be
    # conditional: with Ingress http no REST route uses it
    extra = authorizer - {(api, "authorizers/*"), ("WebhookApi", "authorizers/*")}
    if extra:
        problem(f"{label}: AuthorizerFunction may also be invoked from {sorted(extra)}")
    want_management = {
        ("WebhookApi", f"${{StageName}}/*{route.replace('{proxy+}', '*')}")
        for route in (BEARER_ROUTE, IAM_ROUTE, *PORTAL_ROUTES, *ADMIN_ROUTES)
    }
    if granted.get("ManagementFunction", set()) != want_management:
        problem(
            f"{label}: API Gateway may invoke ManagementFunction from {sorted(granted.get('ManagementFunction', set()))}, "
            f"must be exactly {sorted(want_management)}"
        )
    for function in sorted(set(granted) - {"IngestFunction", "AuthorizerFunction", "ManagementFunction"}):
        problem(f"{label}: API Gateway may invoke {function} from {sorted(granted[function])}; no route of it is on an API")
    # the URL partners are given
    url = sub_text(((deployed.get("Outputs") or {}).get("WebhookUrlPattern") or {}).get("Value"))
    want_url = f"https://${{{api}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/${{StageName}}{WEBHOOK_PATH}"
    if url != want_url:
        problem(f"{label}: output WebhookUrlPattern is {url!r}, must be {want_url!r}")
    return f"{label}: {WEBHOOK_PATH} POST and GET on {api} ({'REST, payload 1.0, */* binary' if kind == REST_API else 'HTTP API, payload 2.0, simple responses'}), authorizer TTL 0 without identity source, invoke permissions on those routes alone, {'throttle = the parameters' if throttled else 'no stage throttle'}"


def check_ingress(template: dict, cfn: dict) -> None:
    params = template.get("Parameters") or {}
    spec = params.get(INGRESS_PARAMETER) or {}
    if sorted(spec.get("AllowedValues") or []) != sorted(INGRESS_APIS) or spec.get("Default") != "rest":
        problem(f"parameter {INGRESS_PARAMETER}: AllowedValues must be {sorted(INGRESS_APIS)}, Default rest")
        return
    # the throttle: both numbers or neither (a burst of 0 refuses everything)
    rules = template.get("Rules") or {}
    for a, b in (THROTTLE, THROTTLE[::-1]):
        if not any(
            f'"{a}"' in json.dumps(r.get("RuleCondition")) and f'"{b}"' in json.dumps(r.get("Assertions"))
            for r in rules.values()
        ):
            problem(f"Rules: none asserts {b} is set when {a} is")
    resources = template.get("Resources") or {}
    # sam local ignores a resource's Condition but resolves !If: each
    # conditional definition's webhook path is an !If on the ingress's
    # condition whose other branch is an empty map (AWS::NoValue would be
    # None there, which sam local cannot read)
    for ingress, (api, _) in INGRESS_APIS.items():
        body = (resources.get(api) or {}).get("Properties", {}).get("DefinitionBody") or {}
        item = (body.get("paths") or {}).get(WEBHOOK_PATH)
        cond = (item or {}).get("Fn::If") if isinstance(item, dict) else None
        if not (isinstance(cond, list) and len(cond) == 3 and evaluate({"Condition": cond[0]}, template.get("Conditions") or {}, {INGRESS_PARAMETER: ingress}) is True
                and evaluate({"Condition": cond[0]}, template.get("Conditions") or {}, {INGRESS_PARAMETER: next(i for i in INGRESS_APIS if i != ingress)}) is False
                and cond[2] == {}):
            problem(f"{api}: DefinitionBody paths {WEBHOOK_PATH} must be !If [<Ingress is {ingress}>, <the routes>, {{}}] (`sam local` reads no resource Condition)")
    rest_props = (resources.get("WebhookApi") or {}).get("Properties") or {}
    if rest_props.get("AlwaysDeploy") is not True:
        problem("WebhookApi: AlwaysDeploy must be true (its routes depend on Ingress; SAM names the deployment after the unresolved definition, so switching Ingress would leave the stage on the old routes)")
    for ingress in INGRESS_APIS:
        for throttled in (False, True):
            notes.append(check_ingress_variant(template, cfn, ingress, throttled))


def sam_local_main() -> int:
    """`check.py --sam-local TEMPLATE`, with the SAM CLI's interpreter
    (.venv-deploy): what `sam local start-api` would serve for each Ingress
    (its own reading of the template: no Docker, nothing started)."""
    import logging
    logging.disable(logging.WARNING)
    try:
        from samcli.lib.providers.api_provider import ApiProvider
        from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider
    except ImportError as e:
        print(f"the SAM CLI is missing ({e}): run with .venv-deploy's interpreter (tools/dev setup test)", file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_DEFAULT_REGION", FAKE_REGION)
    want = {"rest": ("Api", None, "1.0", False), "http": ("HttpApi", "2.0", "2.0", True)}
    for ingress, (event_type, payload, auth_payload, simple) in want.items():
        stacks, _ = SamLocalStackProvider.get_stacks(
            str(TEMPLATE), parameter_overrides={INGRESS_PARAMETER: ingress, "Architecture": "x86_64"}
        )
        api = ApiProvider(stacks).api
        routes = [r for r in api.routes if r.path == WEBHOOK_PATH]
        label = f"sam local, Ingress={ingress}"
        if len(routes) != 1 or sorted(routes[0].methods) != ["GET", "POST"]:
            problem(f"{label}: {WEBHOOK_PATH} routes {[(r.event_type, sorted(r.methods)) for r in routes]}, must be one route, GET and POST")
            continue
        r = routes[0]
        a = r.authorizer_object
        got = (
            r.event_type, r.payload_format_version, r.function_name,
            getattr(a, "lambda_name", None), getattr(a, "payload_version", None),
            getattr(a, "use_simple_response", None),
            [getattr(i, "identity_source", str(i)) for i in (getattr(a, "identity_sources", None) or [])],
        )
        expected = (event_type, payload, "IngestFunction", "AuthorizerFunction", auth_payload, simple, [])
        if got != expected:
            problem(f"{label}: {WEBHOOK_PATH} is (event type, payload, function, authorizer, its payload, simple responses, identity sources) {got}, must be {expected}")
        # the REST API's */* (kept for the management routes) applies to
        # every route under sam local: HTTP API bodies arrive base64 there
        notes.append(f"{label}: {WEBHOOK_PATH} {r.event_type} payload {r.payload_format_version or '1.0'}, authorizer {a.lambda_name if a else None} (payload {getattr(a, 'payload_version', None)}, simple responses {getattr(a, 'use_simple_response', None)}); binary media types {sorted(api.binary_media_types)}")
    for n in notes:
        print(f"  {n}")
    if problems:
        for p in problems:
            print(f"FAIL {p}", file=sys.stderr)
        return 1
    print("OK")
    return 0


def lint_translated(cfn: dict) -> None:
    """cfn-lint on the translated (plain CloudFormation) template: newer
    cfn-lint releases no longer run the SAM transform themselves. Also on
    the template resolved for each Ingress (what CloudFormation deploys for
    it), in the same run."""
    variants = {"translated": cfn}
    for ingress in INGRESS_APIS:
        variants[f"translated-ingress-{ingress}"] = deployable(cfn, {INGRESS_PARAMETER: ingress})
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, template in variants.items():
            path = Path(tmp) / f"{name}.json"
            path.write_text(json.dumps(template, indent=1))
            paths.append(str(path))
        result = subprocess.run(
            [sys.executable, "-c", CFN_LINT, "--regions", FAKE_REGION, "--", *paths],
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        problem(f"cfn-lint on the translated template (exit {result.returncode}):\n{output}")
    else:
        notes.append(f"cfn-lint on the translated template: clean, and resolved for Ingress {' and '.join(INGRESS_APIS)}")


def main() -> int:
    global TEMPLATE
    if len(sys.argv) > 1 and not sys.argv[1].startswith("--"):  # another template (tests of this script)
        TEMPLATE = Path(sys.argv[1]).resolve()
    if len(sys.argv) > 2 and sys.argv[1] == "--sam-local":
        TEMPLATE = Path(sys.argv[2]).resolve()
        return sam_local_main()
    template = load_template()
    cfn = translate(template)
    if cfn is not None:
        check_translated(cfn)
        check_secrets_and_data_api(template, cfn)
        check_relay_destinations(template, cfn)
        check_notices(template, cfn)
        check_management_api(template, cfn)
        check_endpoint_secrets_key(template, cfn)
        check_api_tokens(template, cfn)
        check_ingress(template, cfn)
        lint_translated(cfn)
    check_schedules(template)
    check_processor_handler(template)
    check_functions(template)
    check_alarms_filter_on_stack(template)
    check_dashboard(template)
    check_queue_consistency(template)
    check_blob_store(template)
    for n in notes:
        print(f"  {n}")
    if problems:
        for p in problems:
            print(f"FAIL {p}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
