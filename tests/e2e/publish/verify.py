"""Verifies deliveries as a customer's receiver would, with Standard
Webhooks' own Python library (docs/tenants.md), for
tests/e2e/tests/publish_clients.rs.

    verify.py < deliveries.jsonl

Each input line: {"secret": "whsec_…", "body": "…", "headers": {"webhook-id": …,
"webhook-timestamp": …, "webhook-signature": …}}. Prints a JSON list: for each
line, true when it verifies (signature and timestamp), else the library's error.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook


def check(line):
    d = json.loads(line)
    try:
        Webhook(d["secret"]).verify(d["body"], d["headers"])
        return True
    except Exception as e:  # the library's WebhookVerificationError, by message
        return f"{type(e).__name__}: {e}"


print(json.dumps([check(line) for line in sys.stdin if line.strip()]))
