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
4. Least privilege in the translated template: every IAM role's only
   managed policy is AWSLambdaBasicExecutionRole and no inline statement has
   Resource "*".
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

Usage: python3 infra/check.py [TEMPLATE] (default infra/template.yaml).
Prints OK and exits 0, or prints every problem and exits 1 (2 when
aws-sam-translator is not installed).
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
    # Least privilege: the only managed policy is the basic execution role
    # (logs), and no inline statement grants on every resource.
    for name, res in resources.items():
        if res.get("Type") != "AWS::IAM::Role":
            continue
        props = res.get("Properties", {})
        for arn in props.get("ManagedPolicyArns", []):
            text = arn if isinstance(arn, str) else str(arn.get("Fn::Sub", arn))
            if not text.endswith("policy/service-role/AWSLambdaBasicExecutionRole"):
                problem(f"{name}: managed policy {text} is broader than needed")
        for policy in props.get("Policies", []):
            for st in policy.get("PolicyDocument", {}).get("Statement", []):
                if not isinstance(st, dict) or "Fn::If" in st:
                    continue
                resource = st.get("Resource")
                if resource == "*" or (isinstance(resource, list) and "*" in resource):
                    problem(f"{name}: statement {st.get('Sid', st.get('Action'))} grants on every resource")
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


# ------------------------------------------------------------ management API
# The routes of the management function and the resources its code knows
# (functions/management/src/event.rs: BEARER_RESOURCE, IAM_RESOURCE).
BEARER_ROUTE = "/api/v1/{proxy+}"
IAM_ROUTE = "/iam/api/v1/{proxy+}"
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
    for route in (BEARER_ROUTE, IAM_ROUTE):
        if f'"{route}"' not in code:
            problem(f"{name}: route {route} is not a resource {MANAGEMENT_EVENT_CODE.relative_to(ROOT)} knows")
    events = ((res.get("Properties") or {}).get("Events")) or {}
    routes = {}
    for ev_name, ev in events.items():
        props = ev.get("Properties") or {}
        if ev.get("Type") != "Api":
            problem(f"{name}.{ev_name}: the management function is invoked by API Gateway only, not {ev.get('Type')}")
            continue
        routes[props.get("Path")] = (ev_name, props)
    if set(routes) != {BEARER_ROUTE, IAM_ROUTE}:
        problem(f"{name}: routes {sorted(map(str, routes))}, must be exactly {BEARER_ROUTE} and {IAM_ROUTE}")
    for path, (ev_name, props) in routes.items():
        auth = props.get("Auth") or {}
        if props.get("RestApiId") != {"Ref": "WebhookApi"}:
            problem(f"{name}.{ev_name}: must be on the stack's API (RestApiId !Ref WebhookApi)")
        if path == IAM_ROUTE:
            if auth.get("Authorizer") != "AWS_IAM":
                problem(f"{name}.{ev_name}: {IAM_ROUTE} must be authorized by AWS_IAM (SigV4), is {auth.get('Authorizer')!r}")
            if auth.get("InvokeRole") != "NONE":
                problem(f"{name}.{ev_name}: {IAM_ROUTE} needs InvokeRole NONE (API Gateway invokes the function, not the caller's credentials)")
        if path == BEARER_ROUTE and auth.get("Authorizer") != "NONE":
            problem(f"{name}.{ev_name}: {BEARER_ROUTE} is checked by the function's bearer tokens (Authorizer NONE), is {auth.get('Authorizer')!r}")
    # the translated API: security of each operation
    api = (cfn.get("Resources") or {}).get("WebhookApi", {}).get("Properties", {})
    body = api.get("Body") or {}
    definitions = body.get("securityDefinitions") or {}
    if (definitions.get("AWS_IAM") or {}).get("x-amazon-apigateway-authtype") != "awsSigv4":
        problem("WebhookApi: no AWS_IAM (awsSigv4) security definition")
    for path, ops in (body.get("paths") or {}).items():
        for method, op in ops.items():
            if method not in OPERATIONS:
                continue
            security = [k for entry in (op.get("security") or []) for k in entry]
            integration = op.get("x-amazon-apigateway-integration") or {}
            if path == IAM_ROUTE:
                if security != ["AWS_IAM"]:
                    problem(f"WebhookApi {method} {path}: security {security}, must be exactly AWS_IAM")
                if integration.get("credentials") is not None:
                    problem(f"WebhookApi {method} {path}: invoked with credentials {integration.get('credentials')!r}, must be none")
            elif path == BEARER_ROUTE:
                if security not in ([], ["NONE"]):
                    problem(f"WebhookApi {method} {path}: security {security}; the function checks the bearer token")
            elif not [k for k in security if k in definitions]:
                problem(f"WebhookApi {method} {path}: no authorizer (only the management API's bearer route may have none)")
    notes.append(f"management API: {BEARER_ROUTE} (bearer, checked by the function), {IAM_ROUTE} (AWS_IAM)")


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
# the endpoint secrets' key.
MANAGEMENT_ACTIONS = DATA_API_ACTIONS["management"] | {"secretsmanager:GetSecretValue"} | KMS_ACTIONS["management"]


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
            extra |= {a for a in as_list(st.get("Action", [])) if isinstance(a, str)} - MANAGEMENT_ACTIONS
        if extra:
            problem(f"{role}: actions {sorted(extra)} beyond what the management API calls ({sorted(MANAGEMENT_ACTIONS)})")


def lint_translated(cfn: dict) -> None:
    """cfn-lint on the translated (plain CloudFormation) template: newer
    cfn-lint releases no longer run the SAM transform themselves."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "translated.json"
        path.write_text(json.dumps(cfn, indent=1))
        result = subprocess.run(
            [sys.executable, "-c", CFN_LINT, "--regions", FAKE_REGION, "--", str(path)],
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        problem(f"cfn-lint on the translated template (exit {result.returncode}):\n{output}")
    else:
        notes.append("cfn-lint on the translated template: clean")


def main() -> int:
    global TEMPLATE
    if len(sys.argv) > 1:  # another template (tests of this script)
        TEMPLATE = Path(sys.argv[1]).resolve()
    template = load_template()
    cfn = translate(template)
    if cfn is not None:
        check_translated(cfn)
        check_secrets_and_data_api(template, cfn)
        check_relay_destinations(template, cfn)
        check_management_api(template, cfn)
        check_endpoint_secrets_key(template, cfn)
        check_api_tokens(template, cfn)
        lint_translated(cfn)
    check_schedules(template)
    check_processor_handler(template)
    check_functions(template)
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
