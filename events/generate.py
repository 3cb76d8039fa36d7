#!/usr/bin/env python3
"""Regenerates the API Gateway sample events (ingest and authorizer).

Signatures are Standard Webhooks v1 with the local demo secret, at the fixed
time T (tests set their clock to it). Run: python3 events/generate.py
"""
import base64, hashlib, hmac, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="
T = 1780000000  # 2026-05-28T20:26:40Z
API = "abc123defg"
ACCOUNT = "123456789012"
SOURCE_IP = "203.0.113.10"


def sign(msg_id, ts, body):
    key = base64.b64decode(SECRET[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def headers(msg_id, ts, body, extra=None):
    h = {
        "Host": f"{API}.execute-api.eu-west-1.amazonaws.com",
        "Content-Type": "application/json",
        "User-Agent": "Svix-Webhooks/1.0",
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(msg_id, ts, body),
        "X-Forwarded-For": SOURCE_IP,
    }
    h.update(extra or {})
    return h


def proxy(partner, body, hdrs, b64=False, source_ip=SOURCE_IP):
    return {
        "resource": "/webhooks/{partner}",
        "path": f"/webhooks/{partner}",
        "httpMethod": "POST",
        "headers": hdrs,
        "multiValueHeaders": {k: [v] for k, v in hdrs.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"partner": partner},
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT, "apiId": API, "stage": "prod",
            "resourcePath": "/webhooks/{partner}", "path": f"/prod/webhooks/{partner}",
            "httpMethod": "POST", "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "requestTimeEpoch": T * 1000,
            "identity": {"sourceIp": source_ip, "userAgent": hdrs.get("User-Agent", "")},
            "authorizer": {"partner": partner, "principalId": partner},
        },
        "body": base64.b64encode(body).decode() if b64 else body.decode(),
        "isBase64Encoded": b64,
    }


def authorizer(partner, hdrs, source_ip=SOURCE_IP):
    return {
        "type": "REQUEST",
        "methodArn": f"arn:aws:execute-api:eu-west-1:{ACCOUNT}:{API}/prod/POST/webhooks/{partner}",
        "resource": "/webhooks/{partner}",
        "path": f"/webhooks/{partner}",
        "httpMethod": "POST",
        "headers": hdrs,
        "multiValueHeaders": {k: [v] for k, v in hdrs.items()},
        "queryStringParameters": {},
        "multiValueQueryStringParameters": {},
        "pathParameters": {"partner": partner},
        "stageVariables": {},
        "requestContext": {
            "path": f"/prod/webhooks/{partner}", "accountId": ACCOUNT,
            "resourceId": "r4nd0m", "stage": "prod",
            "requestId": "d2b1c4e0-7b61-11e6-9a41-93e8deadbeef",
            "identity": {"sourceIp": source_ip, "userAgent": hdrs.get("User-Agent", "")},
            "resourcePath": "/webhooks/{partner}", "httpMethod": "POST", "apiId": API,
        },
    }


def write(name, event):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(event, f, indent=2)
        f.write("\n")


payment = b'{"type":"payment.received","order_id":"ord_1001","amount":42.5}'
write("apigw-ingest-valid.json", proxy("demo", payment, headers("msg_1001", T, payment)))
write("apigw-ingest-base64.json",
      proxy("demo", payment, headers("msg_1002", T, payment), b64=True))
bad = headers("msg_1003", T, payment)
bad["webhook-signature"] = sign("msg_1003", T, b'{"type":"payment.received","order_id":"ord_9999"}')
write("apigw-ingest-bad-signature.json", proxy("demo", payment, bad))
write("apigw-ingest-stale.json", proxy("demo", payment, headers("msg_1004", T - 600, payment)))
write("apigw-ingest-future.json", proxy("demo", payment, headers("msg_1005", T + 600, payment)))
big = b'{"type":"payment.received","order_id":"ord_1006","pad":"' + b"x" * 2048 + b'"}'
write("apigw-ingest-oversize.json", proxy("small", big, headers("msg_1006", T, big)))

write("apigw-authorizer-allow.json", authorizer("restricted", headers("msg_2001", T, payment)))
write("apigw-authorizer-spoofed-ip.json",
      authorizer("restricted", headers("msg_2002", T, payment, {"X-Forwarded-For": SOURCE_IP}),
                 source_ip="198.51.100.66"))
write("apigw-authorizer-stale.json", authorizer("restricted", headers("msg_2003", T - 600, payment)))
no_sig = headers("msg_2004", T, payment)
del no_sig["webhook-signature"]
write("apigw-authorizer-missing-signature.json", authorizer("restricted", no_sig))
write("apigw-authorizer-unknown-partner.json", authorizer("nobody", headers("msg_2005", T, payment)))


# ------------------------------------------------------------ management API
# The HTTP management API (functions/management) on its two routes: bearer
# tokens on /api/v1/{proxy+} (no gateway authorization: the function checks
# the token), SigV4 on /iam/api/v1/{proxy+} (AWS_IAM: API Gateway verified
# the caller and puts its ARN in requestContext.identity.userArn).
# MANAGEMENT_TOKEN is a test token: tests configure its SHA-256
# (HOOKBOX_API_TOKENS=[{"name": "sample", "sha256": sha256(MANAGEMENT_TOKEN)}]).
MANAGEMENT_TOKEN = "hookbox-sample-token-not-a-secret"
CALLER_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/hookbox-operator/alice"


def management(method, path, hdrs, body=None, query=None, iam=False, identity=None):
    resource = "/iam/api/v1/{proxy+}" if iam else "/api/v1/{proxy+}"
    proxy_param = path.split("/api/v1/", 1)[1]
    ident = {"sourceIp": SOURCE_IP, "userAgent": hdrs.get("User-Agent", "")}
    ident.update(identity or {})
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": hdrs,
        "multiValueHeaders": {k: [v] for k, v in hdrs.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} if query else None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": proxy_param},
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT, "apiId": API, "stage": "prod",
            "resourcePath": resource, "path": f"/prod{path}",
            "httpMethod": method, "requestId": "5a1f3e2b-7b61-11e6-9a41-93e8deadbeef",
            "requestTimeEpoch": T * 1000,
            "identity": ident,
        },
        # binary media type */*: API Gateway sends every body base64-encoded
        "body": base64.b64encode(body).decode() if body is not None else None,
        "isBase64Encoded": body is not None,
    }


def management_headers(extra=None):
    h = {
        "Host": f"{API}.execute-api.eu-west-1.amazonaws.com",
        "Accept": "application/json",
        "User-Agent": "svix-libs/1.0.0/python",
        "X-Forwarded-For": SOURCE_IP,
    }
    h.update(extra or {})
    return h


list_query = {"limit": ["2"], "order": ["ascending"]}
write("apigw-management-bearer.json",
      management("GET", "/api/v1/app", management_headers(
          {"Authorization": f"Bearer {MANAGEMENT_TOKEN}"}), query=list_query))
write("apigw-management-no-token.json",
      management("GET", "/api/v1/app", management_headers(), query=list_query))
# the bearer route with no token but an identity, in the event and in
# headers: nothing of it is trusted there (401)
write("apigw-management-spoofed-identity.json",
      management("GET", "/api/v1/app", management_headers({
          "X-Amzn-Iam-User-Arn": CALLER_ARN,
          "X-Hookbox-Principal": CALLER_ARN,
      }), query=list_query, identity={"userArn": CALLER_ARN, "caller": "AROAEXAMPLE:alice"}))
tenant = b'{"name":"Acme Inc","uid":"acme"}'
write("apigw-management-iam.json",
      management("POST", "/iam/api/v1/app/", management_headers({
          "Content-Type": "application/json",
          "Authorization": "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20260528/eu-west-1/execute-api/aws4_request, "
                           "SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000",
          "X-Amz-Date": "20260528T202640Z",
      }), body=tenant, iam=True, identity={
          "userArn": CALLER_ARN, "caller": "AROAEXAMPLE:alice",
          "accountId": ACCOUNT, "accessKey": "ASIAEXAMPLE",
      }))


# ------------------------------------------------------------ the portal
# The customer portal (docs/portal.md) on the management function: its page
# on /portal and /portal/{proxy+} (no gateway authorization: a link's key,
# checked by the function), and a link minted through Svix's
# app-portal-access on the bearer route (the link points at the domain and
# stage the request came in on).
def portal(method, path, hdrs, body=None):
    resource = "/portal" if path.rstrip("/") == "/portal" else "/portal/{proxy+}"
    event = {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": hdrs,
        "multiValueHeaders": {k: [v] for k, v in hdrs.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None if resource == "/portal" else {"proxy": path.split("/portal/", 1)[1]},
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT, "apiId": API, "stage": "prod",
            "domainName": f"{API}.execute-api.eu-west-1.amazonaws.com",
            "resourcePath": resource, "path": f"/prod{path}",
            "httpMethod": method, "requestId": "6b2f4e3c-7b61-11e6-9a41-93e8deadbeef",
            "requestTimeEpoch": T * 1000,
            "identity": {"sourceIp": SOURCE_IP, "userAgent": hdrs.get("User-Agent", "")},
        },
        "body": base64.b64encode(body).decode() if body is not None else None,
        "isBase64Encoded": body is not None,
    }
    return event


browser = {
    "Host": f"{API}.execute-api.eu-west-1.amazonaws.com",
    "Accept": "text/html",
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-For": SOURCE_IP,
}
write("apigw-portal-page.json", portal("GET", "/portal/", browser))
# a key no link has: 401, nothing opened (tests put a minted key in its place)
write("apigw-portal-session.json", portal(
    "POST", "/portal/api/session", {**browser, "Accept": "application/json", "Content-Type": "application/json"},
    body=b'{"key":"hbp_' + b"0" * 64 + b'"}'))
access = management("POST", "/api/v1/auth/app-portal-access/acme", management_headers({
    "Content-Type": "application/json",
    "Authorization": f"Bearer {MANAGEMENT_TOKEN}",
}), body=b'{"application":{"name":"Acme Inc"},"expiry":3600}')
access["requestContext"]["domainName"] = f"{API}.execute-api.eu-west-1.amazonaws.com"
write("apigw-portal-access.json", access)


# ------------------------------------------------------------ the operator page
# The operator page (docs/portal.md, "The operator page") on the management
# function: /admin and /admin/{proxy+}, no gateway authorization (an
# operator's link, checked by the function).
def admin(method, path, hdrs, body=None):
    event = portal(method, path.replace("/admin", "/portal", 1), hdrs, body)
    resource = "/admin" if path.rstrip("/") == "/admin" else "/admin/{proxy+}"
    event["resource"] = resource
    event["path"] = path
    event["requestContext"]["resourcePath"] = resource
    event["requestContext"]["path"] = f"/prod{path}"
    if event["pathParameters"] is not None:
        event["pathParameters"] = {"proxy": path.split("/admin/", 1)[1]}
    return event


write("apigw-admin-page.json", admin("GET", "/admin/", browser))
# the counts without a session: 401
write("apigw-admin-stats.json", admin("GET", "/admin/api/stats", {**browser, "Accept": "application/json"}))
