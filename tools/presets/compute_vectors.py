#!/usr/bin/env python3
"""Self-computed vectors for the presets that have no published one.

These are NOT the providers' vectors: each value is computed here, with
Python's own `hmac`/`hashlib`/`base64` (and `cryptography` for Ed25519),
from the recipe as the provider documents it. That makes them an
independent second implementation of each recipe, nothing more; the tests
in shared/tests/presets/ label them `Source::Computed` and they do not
count as official vectors.

Run: python3 tools/presets/compute_vectors.py
It prints one block per preset: the values the tests hold. Nothing here
touches the network.
"""

import base64
import hashlib
import hmac


def mac(key, message, digest=hashlib.sha256):
    if isinstance(key, str):
        key = key.encode()
    if isinstance(message, str):
        message = message.encode()
    return hmac.new(key, message, digest).digest()


def hexmac(key, message, digest=hashlib.sha256):
    return mac(key, message, digest).hex()


def b64mac(key, message, digest=hashlib.sha256):
    return base64.b64encode(mac(key, message, digest)).decode()


SECRET = "hookbox-test-secret"
BODY = '{"id":"evt_1","type":"test.event","data":{"n":42}}'
TS = "1700000000"
TS_MS = "1700000000000"
TWILIO_SHARED_KEY = "hookbox-twilio-shared-key"


def show(name, **values):
    print(f"== {name}")
    for key, value in values.items():
        print(f"  {key}: {value}")


def main():
    # Body only, hex HMAC-SHA256 (with and without a prefix).
    for name, prefix in [
        ("asana", ""),
        ("bitbucket", "sha256="),
        ("dropbox", ""),
        ("jira", "sha256="),
        ("lemon-squeezy", ""),
        ("meta", "sha256="),
        ("mollie", "sha256="),
        ("sentry", ""),
        ("coinbase-commerce", ""),
    ]:
        show(name, signature=prefix + hexmac(SECRET, BODY))
    # Body only, other algorithms and encodings.
    show("intercom", signature="sha1=" + hexmac(SECRET, BODY, hashlib.sha1))
    show("segment", signature=hexmac(SECRET, BODY, hashlib.sha1))
    show("vercel", signature=hexmac(SECRET, BODY, hashlib.sha1))
    show("paystack", signature=hexmac(SECRET, BODY, hashlib.sha512))
    show("typeform", signature="sha256=" + b64mac(SECRET, BODY))
    show("woocommerce", signature=b64mac(SECRET, BODY))
    show("shopify", signature=b64mac(SECRET, BODY))
    show("docusign", signature=b64mac(SECRET, BODY))
    # PagerDuty: two v1 signatures during rotation, the second one matches.
    show(
        "pagerduty",
        signature="v1=" + hexmac("old-secret", BODY) + ",v1=" + hexmac(SECRET, BODY),
    )
    # Airtable: the key is the base64-decoded macSecretBase64.
    airtable_key = base64.b64encode(b"airtable-mac-secret-32-bytes!!!!").decode()
    show(
        "airtable",
        secret=airtable_key,
        signature="hmac-sha256=" + hexmac(base64.b64decode(airtable_key), BODY),
    )
    # Timestamp + separator + body.
    show(
        "calendly",
        signature=f"t={TS},v1=" + hexmac(SECRET, TS + "." + BODY),
    )
    show("webflow", timestamp=TS_MS, signature=hexmac(SECRET, TS_MS + ":" + BODY))
    show("zoom", timestamp=TS, signature="v0=" + hexmac(SECRET, "v0:" + TS + ":" + BODY))
    show(
        "recurly",
        signature=TS_MS + "," + hexmac("old-secret", TS_MS + "." + BODY) + "," + hexmac(SECRET, TS_MS + "." + BODY),
    )
    # Twitch: message id + RFC 3339 timestamp + body.
    twitch_id = "e76c6bd4-55c9-4987-8304-da1588d8988b"
    twitch_ts = "2023-11-14T22:13:20.123456789Z"
    show(
        "twitch-eventsub",
        id=twitch_id,
        timestamp=twitch_ts,
        signature="sha256=" + hexmac(SECRET, twitch_id + twitch_ts + BODY),
    )
    # Linear: the body carries webhookTimestamp (ms) and is signed whole.
    linear_body = '{"action":"create","type":"Issue","webhookTimestamp":1700000000000}'
    show("linear", body=linear_body, signature=hexmac(SECRET, linear_body))
    # Standard Webhooks senders (Clerk, Resend): svix headers, whsec_ key.
    key = base64.b64encode(b"standard-webhooks-key-32-bytes!!").decode()
    msg_id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
    show(
        "clerk/resend",
        secret="whsec_" + key,
        id=msg_id,
        signature="v1," + base64.b64encode(mac(base64.b64decode(key), f"{msg_id}.{TS}.{BODY}")).decode(),
    )

    # Presets added for issue #45 (2026-12-04). Body only.
    for name, prefix in [
        ("alchemy", ""),
        ("attio", ""),
        ("cal-com", ""),
        ("checkout-com", ""),
        ("clickup", ""),
        ("gitea", ""),
        ("maxio", ""),
        ("sendbird", ""),
        ("sumsub", ""),
        ("veriff", ""),
    ]:
        show(name, signature=prefix + hexmac(SECRET, BODY))
    for name, prefix in [("bolt", ""), ("heroku", ""), ("tally", ""), ("x-activity", "sha256=")]:
        show(name, signature=prefix + b64mac(SECRET, BODY))
    show("help-scout", signature=b64mac(SECRET, BODY, hashlib.sha1))
    # CircleCI: `v1=` + hex, over `an-important-request-payload` with `hunter123`.
    show("circleci", signature="v1=" + hexmac("hunter123", "an-important-request-payload"))
    # Microsoft Teams: `HMAC ` + base64, keyed with the base64-decoded token.
    teams_key = base64.b64encode(b"teams-outgoing-webhook-token-32b").decode()
    show("microsoft-teams", secret=teams_key, authorization="HMAC " + b64mac(base64.b64decode(teams_key), BODY))
    # Squarespace and Close: the secret is hex, the key its decoded bytes.
    hex_key = hashlib.sha256(b"hookbox hex key").hexdigest()
    show("squarespace", secret=hex_key, signature=hexmac(bytes.fromhex(hex_key), BODY))
    show("close", secret=hex_key, timestamp=TS, signature=hexmac(bytes.fromhex(hex_key), TS + BODY))
    # Timestamp and body.
    show("airwallex", timestamp=TS_MS, signature=hexmac(SECRET, TS_MS + BODY))
    show("persona", signature=f"t={TS},v1=" + hexmac(SECRET, TS + "." + BODY))
    show("buildkite", signature=f"timestamp={TS},signature=" + hexmac(SECRET, TS + "." + BODY))
    show("frame-io", timestamp=TS, signature="v0=" + hexmac(SECRET, "v0:" + TS + ":" + BODY))
    show("customer-io", timestamp=TS, signature=hexmac(SECRET, "v0:" + TS + ":" + BODY))
    zendesk_ts = "2023-11-14T22:13:20Z"
    show("zendesk", timestamp=zendesk_ts, signature=b64mac(SECRET, zendesk_ts + BODY))
    # X's CRC answer: sha256= + base64 HMAC-SHA256(consumer secret, crc_token).
    show("x-activity crc", crc_token="challenge_token_123", response_token="sha256=" + b64mac(SECRET, "challenge_token_123"))
    # Basic auth and tokens.
    show("chargebee/postmark", authorization="Basic " + base64.b64encode(b"hookbox:s3cret").decode())
    # SparkPost: the example credentials of its Webhooks API docs
    # (`auth_credentials` {"username": "basicauthuser", "password": "mypassword"}).
    show("sparkpost", authorization="Basic " + base64.b64encode(b"basicauthuser:mypassword").decode())
    # Mandrill (Mailchimp Transactional): the URL as entered, then each POST
    # parameter's name and value sorted by name; its test POST when a
    # webhook is added (`mandrill_events=[]`) is signed with `test-webhook`.
    from urllib.parse import parse_qsl, quote

    mandrill_url = "https://hooks.example.com/webhooks/mandrill"
    events = (
        '[{"event":"send","msg":{"ts":1365109999,"email":"example.webhook@mandrillapp.com",'
        '"state":"sent","_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa"},'
        '"_id":"exampleaaaaaaaaaaaaaaaaaaaaaaaaa","ts":1365111111}]'
    )
    for key, body in [
        (SECRET, "mandrill_events=" + quote(events, safe="")),
        ("test-webhook", "mandrill_events=%5B%5D"),
    ]:
        signed = mandrill_url + "".join(k + v for k, v in sorted(parse_qsl(body)))
        show("mandrill", key=key, body=body, signature=base64.b64encode(mac(key, signed, hashlib.sha1)).decode())
    # Discord: Ed25519 over timestamp + body, with a fixed seed.
    # Twilio's HMAC-SHA256 signature settings: the signed string of
    # twilio-python's published SHA-1 vector (tests/unit/test_request_validator.py;
    # the SHA-1 line reproduces its `RSOYDt4T1cUTdK1PDd93/VVr8B8=`), and a
    # JSON body bound by `bodySHA256` (twilio's api-snippets example).
    from urllib.parse import parse_qsl

    twilio_url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    twilio_body = (
        "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309"
        "&To=%2B18005551212&Caller=%2B14158675309"
    )
    signed = twilio_url + "".join(k + v for k, v in sorted(parse_qsl(twilio_body)))
    json_body = '{"CallSid":"CA1234567890ABCDE","Caller":"+12349013030"}'
    json_url = "https://example.com/myapp?bodySHA256=" + hashlib.sha256(json_body.encode()).hexdigest()
    show(
        "twilio-sha256",
        sha1_check=base64.b64encode(mac("12345", signed, hashlib.sha1)).decode(),
        form=b64mac(TWILIO_SHARED_KEY, signed),
        json_url=json_url,
        json=b64mac(TWILIO_SHARED_KEY, json_url),
    )

    # Netlify: a compact JWS (HS256) whose claims hash the body.
    def b64url(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    # The second token is correctly signed by another issuer (refused).
    for name, issuer in [("netlify", "netlify"), ("netlify (other issuer)", "not-netlify")]:
        claims = '{"iss":"%s","sha256":"%s"}' % (issuer, hashlib.sha256(BODY.encode()).hexdigest())
        signing_input = b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(claims.encode())
        show(name, **{"X-Webhook-Signature": signing_input + "." + b64url(mac(SECRET, signing_input))})

    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives import serialization

        seed = hashlib.sha256(b"hookbox discord test key").digest()
        private = Ed25519PrivateKey.from_private_bytes(seed)
        public = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        discord_body = '{"id":"1","type":1,"application_id":"2","token":"t","version":1}'
        show(
            "discord",
            public_key=public.hex(),
            body=discord_body,
            signature=private.sign((TS + discord_body).encode()).hex(),
        )
    except ImportError:
        print("== discord: needs the `cryptography` package")


if __name__ == "__main__":
    main()
