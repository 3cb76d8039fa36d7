#!/usr/bin/env python3
"""The HTTP API (payload format 2.0) twins of the REST sample events.

Each httpapi-*.json is the request of an apigw-*.json fixture as API
Gateway's HTTP API hands it to the authorizer (simple responses) or to
ingest, as AWS documents payload 2.0: header names lower-case, a header's
lines joined with ",", the query as `rawQueryString` plus
`queryStringParameters` (repeated values joined with ","), the route in
`routeKey`/`routeArn`, the caller in `requestContext.http.sourceIp`, and the
body a string for a text Content-Type (text/*, application/json,
application/javascript, application/xml), base64 for any other. The
signatures are the REST fixtures' own (same id, timestamp and body bytes).

Run after events/generate.py: python3 events/generate_httpapi.py
"""

import base64
import json
import pathlib

HERE = pathlib.Path(__file__).parent
TEXT = ("application/json", "application/javascript", "application/xml")


def is_text(content_type):
    if content_type is None:
        return False
    media = content_type.split(";")[0].strip().lower()
    return media.startswith("text/") or media in TEXT


def joined_headers(event):
    lines = {}
    multi = event.get("multiValueHeaders") or {}
    for name, value in (event.get("headers") or {}).items():
        if name not in multi:
            multi = dict(multi, **{name: [value]})
    for name, values in multi.items():
        lines.setdefault(name.lower(), []).extend(values)
    return {name: ",".join(values) for name, values in lines.items()}


def context(event, method, path, headers):
    rest = event["requestContext"]
    identity = rest.get("identity") or {}
    return {
        "accountId": rest.get("accountId", "123456789012"),
        "apiId": rest.get("apiId", "abc123defg"),
        "domainName": headers.get("host", "abc123defg.execute-api.eu-west-1.amazonaws.com"),
        "domainPrefix": rest.get("apiId", "abc123defg"),
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": identity.get("sourceIp"),
            "userAgent": identity.get("userAgent", ""),
        },
        "requestId": rest.get("requestId"),
        "routeKey": f"{method} /webhooks/{{partner}}",
        "stage": "$default",
        "time": "28/May/2026:20:26:40 +0000",
        "timeEpoch": rest.get("requestTimeEpoch", 1780000000000),
    }


def authorizer(event):
    method = event["httpMethod"]
    path = event["path"]
    headers = joined_headers(event)
    arn = event["methodArn"].replace("/prod/", "/$default/")
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": arn,
        "identitySource": [],
        "routeKey": f"{method} /webhooks/{{partner}}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "pathParameters": event["pathParameters"],
        "stageVariables": {},
        "requestContext": context(event, method, path, headers),
    }


def proxy(event, content_type=None):
    method = event["httpMethod"]
    path = event["path"]
    headers = joined_headers(event)
    if content_type:
        headers["content-type"] = content_type
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    out = {
        "version": "2.0",
        "routeKey": f"{method} /webhooks/{{partner}}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "pathParameters": event["pathParameters"],
        "requestContext": context(event, method, path, headers),
    }
    ctx = event["requestContext"].get("authorizer")
    if ctx:
        out["requestContext"]["authorizer"] = {"lambda": {"partner": ctx.get("partner")}}
    if body:
        if is_text(headers.get("content-type")):
            out["body"] = body.decode("utf-8")
            out["isBase64Encoded"] = False
        else:
            out["body"] = base64.b64encode(body).decode()
            out["isBase64Encoded"] = True
    else:
        out["isBase64Encoded"] = False
    return out


def convert(source, target, make, **options):
    event = json.loads((HERE / source).read_text())
    (HERE / target).write_text(json.dumps(make(event, **options), indent=2) + "\n")
    print("wrote", target)


convert("apigw-authorizer-allow.json", "httpapi-authorizer-allow.json", authorizer)
convert("apigw-authorizer-spoofed-ip.json", "httpapi-authorizer-spoofed-ip.json", authorizer)
convert("apigw-authorizer-stale.json", "httpapi-authorizer-stale.json", authorizer)
convert("apigw-ingest-valid.json", "httpapi-ingest-valid.json", proxy)
# the same bytes sent as application/octet-stream: HTTP API passes them base64
convert("apigw-ingest-base64.json", "httpapi-ingest-base64.json", proxy,
        content_type="application/octet-stream")
convert("apigw-ingest-bad-signature.json", "httpapi-ingest-bad-signature.json", proxy)
