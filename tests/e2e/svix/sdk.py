"""Svix's official Python SDK (the `svix` package, unmodified) against
hookbox's management API, as a team on Svix keeps its code and points the
SDK at hookbox (docs/tenants.md, "The HTTP API"): applications, endpoints,
secrets, event types, messages and attempts. Run in phases by
tests/e2e/tests/svix_sdks.rs:

    sdk.py setup   <server url> <token> <app uid> <receiver base url>
    sdk.py disable <server url> <token> <app uid> <endpoint uid>
    sdk.py enable  <server url> <token> <app uid> <endpoint uid>
    sdk.py publish <server url> <token> <app uid> <n>
    sdk.py attempts <server url> <token> <app uid> <message id>
    sdk.py recover <server url> <token> <app uid> <endpoint uid> <since, RFC 3339>
    sdk.py portal  <server url> <token> <app uid>
    sdk.py delete  <server url> <token> <app uid>

Each phase prints one JSON document of what the SDK returned.
"""

import json
import sys
from datetime import datetime

from svix.api import (
    AppPortalAccessIn,
    ApplicationIn,
    ApplicationListOptions,
    ApplicationPatch,
    EndpointIn,
    EndpointListOptions,
    EndpointPatch,
    EndpointSecretRotateIn,
    EndpointUpsertIn,
    EventTypeIn,
    MessageIn,
    RecoverIn,
    Svix,
    SvixOptions,
)
from svix.api.message import MessageGetOptions
from svix.exceptions import HttpError, HTTPValidationError

# a chosen signing secret (Standard Webhooks' whsec_ and base64)
CHOSEN = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ROTATED = "whsec_dGhpcyBpcyB0aGUgbmV4dCBzZWNyZXQga2V5IQ=="


def client(url, token):
    return Svix(token, SvixOptions(server_url=url))


def setup(svix, app_uid, receivers):
    svix.health.get()
    app = svix.application.create(
        ApplicationIn(name=f"Acme ({app_uid})", uid=app_uid, metadata={"plan": "pro"})
    )
    same = svix.application.get_or_create(ApplicationIn(name="ignored", uid=app_uid))
    assert same.id == app.id, (same.id, app.id)
    assert svix.application.get(app_uid).id == app.id
    renamed = svix.application.patch(app_uid, ApplicationPatch(name=f"Acme Inc ({app_uid})"))
    assert renamed.name == f"Acme Inc ({app_uid})", renamed
    upserted = svix.application.upsert(
        app_uid, ApplicationIn(name=renamed.name, uid=app_uid, metadata={"plan": "gold"})
    )
    assert upserted.id == app.id and upserted.metadata == {"plan": "gold"}, upserted

    # pages of applications: every one, one at a time
    ids, iterator = [], None
    while True:
        page = svix.application.list(ApplicationListOptions(limit=1, iterator=iterator))
        ids += [a.id for a in page.data]
        if page.done:
            break
        iterator = page.iterator
    assert app.id in ids, ids

    try:
        svix.event_type.create(EventTypeIn(name="order.paid", description="An order was paid"))
    except HttpError as e:  # the other SDK's run made it already
        assert e.code == "event_type_exists", e.to_dict()

    everything = svix.endpoint.create(
        app_uid,
        EndpointIn(url=f"{receivers}/{app_uid}/all", uid="all", description="everything"),
    )
    orders = svix.endpoint.create(
        app_uid,
        EndpointIn(
            url=f"{receivers}/{app_uid}/orders",
            uid="orders",
            event_types=["order.paid"],
            metadata={"team": "billing"},
            secret=CHOSEN,
        ),
    )
    assert orders.event_types == ["order.paid"], orders
    listed = svix.endpoint.list(app_uid, EndpointListOptions(limit=10))
    assert [e.uid for e in listed.data] == ["all", "orders"], listed
    assert svix.endpoint.get(app_uid, "orders").id == orders.id
    updated = svix.endpoint.upsert(
        app_uid,
        "all",
        EndpointUpsertIn(url=f"{receivers}/{app_uid}/all", uid="all", description="all events"),
    )
    assert updated.description == "all events", updated
    patched = svix.endpoint.patch(app_uid, "orders", EndpointPatch(description="paid orders"))
    assert patched.event_types == ["order.paid"] and patched.description == "paid orders"

    chosen = svix.endpoint.get_secret(app_uid, "orders").key
    assert chosen == CHOSEN, chosen
    svix.endpoint.rotate_secret(
        app_uid, "orders", EndpointSecretRotateIn(key=ROTATED, grace_period_seconds=3600)
    )
    assert svix.endpoint.get_secret(app_uid, "orders").key == ROTATED

    # refusals as the SDK raises them
    errors = {}
    try:
        svix.endpoint.create(app_uid, EndpointIn(url="ftp://files.example"))
    except HTTPValidationError as e:
        errors["bad_url"] = [d.loc for d in e.detail]
    try:
        svix.application.get("nobody")
    except HttpError as e:
        errors["missing"] = e.to_dict()
    return {
        "app": app.id,
        "endpoints": {"all": everything.id, "orders": orders.id},
        "secrets": {
            "all": svix.endpoint.get_secret(app_uid, "all").key,
            "orders": svix.endpoint.get_secret(app_uid, "orders").key,
        },
        "errors": errors,
    }


def set_disabled(svix, app_uid, endpoint_uid, disabled):
    out = svix.endpoint.patch(app_uid, endpoint_uid, EndpointPatch(disabled=disabled))
    again = svix.endpoint.get(app_uid, endpoint_uid)
    return {"disabled": out.disabled, "read_back": again.disabled}


def publish(svix, app_uid, n):
    out = svix.message.create(
        app_uid, MessageIn(event_type="order.paid", payload={"n": n}, event_id=f"order-{n}")
    )
    # v2 SDKs leave payloads out unless asked
    got = svix.message.get(app_uid, f"order-{n}", MessageGetOptions(with_content=True))
    assert got.id == out.id and got.payload == {"n": n}, got
    return {"id": out.id}


def attempts(svix, app_uid, msg_id):
    page = svix.message_attempt.list_by_msg(app_uid, msg_id)
    return sorted([a.endpoint_id, int(a.status), a.response_status_code] for a in page.data)


def recover(svix, app_uid, endpoint_uid, since):
    out = svix.endpoint.recover(
        app_uid, endpoint_uid, RecoverIn(since=datetime.fromisoformat(since))
    )
    return {"task": str(out.task.value), "status": str(out.status.value)}


def portal(svix, url, app_uid):
    # a read-only portal link for an hour (docs/portal.md), then logged out
    # with its own token, as a page's "log out" does through Svix's API
    access = svix.authentication.app_portal_access(
        app_uid, AppPortalAccessIn(expiry=3600, read_only=True)
    )
    assert access.url.endswith("/portal/#key=" + access.token), access
    client(url, access.token).authentication.logout()
    return {"url": access.url, "token": access.token}


def delete(svix, app_uid):
    for e in svix.endpoint.list(app_uid).data:
        svix.endpoint.delete(app_uid, e.id)
    left = len(svix.endpoint.list(app_uid).data)
    svix.application.delete(app_uid)
    try:
        svix.application.get(app_uid)
        gone = False
    except HttpError as e:
        gone = e.status_code == 404 if hasattr(e, "status_code") else True
    return {"endpoints_left": left, "gone": gone}


def main(argv):
    phase, url, token, app_uid = argv[1:5]
    svix = client(url, token)
    if phase == "setup":
        out = setup(svix, app_uid, argv[5])
    elif phase in ("disable", "enable"):
        out = set_disabled(svix, app_uid, argv[5], phase == "disable")
    elif phase == "publish":
        out = publish(svix, app_uid, int(argv[5]))
    elif phase == "attempts":
        out = attempts(svix, app_uid, argv[5])
    elif phase == "recover":
        out = recover(svix, app_uid, argv[5], argv[6])
    elif phase == "portal":
        out = portal(svix, url, app_uid)
    elif phase == "delete":
        out = delete(svix, app_uid)
    else:
        raise SystemExit(f"unknown phase {phase!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
