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
