"""Checks hookbox's management API answers against Svix's OpenAPI document
(docs/api/openapi.json: the subset of Svix's server/openapi.json hookbox
serves, at the commit its info.x-source names).

    conformance.py < answers.jsonl

Each input line: {"method": "GET", "path": "/api/v1/app/acme", "status": 200,
"body": <the JSON answered, or null when empty>}. Each answer must be one the
operation declares (its status, and a body valid against that status's
schema; no body for 204); an answer to a path the document does not have
must be a 404 refusal (HttpErrorOut); `LATER` lists the answers given as a
later version of the document declares them. Prints {"checked": n, "operations":
{operationId: answers seen}, "failures": [...]} and exits 1 on a failure.

Used by shared/tests/management.rs and tests/e2e/tests/svix_sdks.rs, with
the jsonschema of tools/requirements/test.txt. OpenAPI 3.0's `nullable` is
turned into JSON Schema's null type; `date-time` and `uri` formats are
checked.
"""

import json
import re
import sys
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker

DOC = json.loads((Path(__file__).parent / "openapi.json").read_text())

# Answers hookbox gives as later versions of Svix's document declare them,
# where the pinned one's make the later SDKs fail: (operationId, status) to
# the schema of the body. Svix's Python SDK 2.9.1 reads rotate-secret's
# answer as EndpointSecretOut (the pinned document: 204, no body, which its
# own SDKs ignore).
LATER = {
    ("v1.endpoint.rotate-secret", "200"): "#/components/schemas/EndpointSecretOut",
}


def nullable(schema):
    """OpenAPI 3.0 → JSON Schema: `nullable: true` allows null."""
    if isinstance(schema, list):
        return [nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: nullable(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = list(out["enum"]) + [None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


COMPONENTS = nullable(DOC["components"])
FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def is_date_time(value):
    if not isinstance(value, str):
        return True
    if "T" not in value:
        raise ValueError(f"{value!r} is not an RFC 3339 date-time")
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


@FORMATS.checks("uri", raises=ValueError)
def is_uri(value):
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"{value!r} is not an absolute URI")
    return True


def template_regex(template):
    return re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "/?$")


OPERATIONS = [
    (template_regex(path), method.upper(), op)
    for path, item in DOC["paths"].items()
    for method, op in item.items()
    if method in ("get", "post", "put", "patch", "delete")
]


def validator(ref):
    schema = {"$ref": ref, "components": COMPONENTS}
    return Draft202012Validator(schema, format_checker=FORMATS)


def check(answer):
    method, path, status, body = (
        answer["method"].upper(),
        answer["path"].split("?")[0],
        answer["status"],
        answer.get("body"),
    )
    where = f"{method} {path} -> {status}"
    op = next((o for rx, m, o in OPERATIONS if m == method and rx.match(path)), None)
    if op is None:
        if status != 404:
            return None, f"{where}: no such operation in the document, so 404 was expected"
        errors = list(validator("#/components/schemas/HttpErrorOut").iter_errors(body))
        return "(not in the document)", errors and f"{where}: {errors[0].message}"
    op_id = op["operationId"]
    declared = op["responses"].get(str(status))
    later = LATER.get((op_id, str(status)))
    if later:
        declared = {"content": {"application/json": {"schema": {"$ref": later}}}}
    if declared is None:
        return op_id, f"{where}: {op_id} does not declare {status}"
    content = declared.get("content", {}).get("application/json")
    if content is None:
        if body is not None:
            return op_id, f"{where}: {op_id} declares no body for {status}, got {body!r}"
        return op_id, None
    errors = sorted(
        validator(content["schema"]["$ref"]).iter_errors(body), key=lambda e: list(e.path)
    )
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.absolute_path)
        return op_id, f"{where}: {op_id} at /{at}: {e.message}"
    return op_id, None


def main():
    seen, failures, checked = {}, [], 0
    for line in sys.stdin:
        if not line.strip():
            continue
        checked += 1
        op_id, failure = check(json.loads(line))
        if op_id:
            seen[op_id] = seen.get(op_id, 0) + 1
        if failure:
            failures.append(failure)
    print(json.dumps({"checked": checked, "operations": seen, "failures": failures}))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
