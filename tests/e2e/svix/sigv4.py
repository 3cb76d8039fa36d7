"""Requests to hookbox's management API signed with AWS SigV4 for
`execute-api` by botocore's own SigV4Auth (unmodified), as an AWS service
calls an API Gateway with IAM authorization; the local stack verifies them
(tests/e2e/tests/svix_sdks.rs):

    sigv4.py <server url> <access key id> <secret access key> <app uid>

Prints {"create": [status, body], "get": [...], "tampered": [...],
"unsigned": [...]}.
"""

import json
import sys
import urllib.error
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def send(request):
    """Sends a prepared AWSRequest; [status, JSON body or None]."""
    prepared = request.prepare()
    body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
    req = urllib.request.Request(
        prepared.url, data=body, headers=dict(prepared.headers), method=prepared.method
    )
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    return [status, json.loads(body) if body else None]


def signed(creds, method, url, body=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(creds, "execute-api", "us-east-1").add_auth(request)
    return request


def main(url, key_id, secret, app_uid):
    creds = Credentials(key_id, secret)
    body = json.dumps({"name": "Signed", "uid": app_uid})
    out = {
        "create": send(signed(creds, "POST", f"{url}/api/v1/app?get_if_exists=true", body)),
        "get": send(signed(creds, "GET", f"{url}/api/v1/app/{app_uid}")),
    }
    tampered = signed(creds, "POST", f"{url}/api/v1/app", body)
    tampered.data = json.dumps({"name": "Changed", "uid": app_uid})
    out["tampered"] = send(tampered)
    wrong = signed(Credentials(key_id, "not-the-secret"), "GET", f"{url}/api/v1/app/{app_uid}")
    out["wrong_secret"] = send(wrong)
    out["unsigned"] = send(AWSRequest(method="GET", url=f"{url}/api/v1/app/{app_uid}"))
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:5])
