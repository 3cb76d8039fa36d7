// SDK vectors for the standard family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/standard.rs): lithic, dodo-payments
// and liveblocks (Standard Webhooks). Each block runs the provider's
// official SDK, asserts its accept and refuse cases and calls `emit`.
// generate.mjs runs this module's run(); the helpers are lib.mjs's.

import assert from "node:assert/strict";
import { require, pkg, tamper, emit, atClock, assertTamperKeepsJson, whsec, standardWebhooksSign } from "./lib.mjs";

/** A Standard Webhooks vector signed by node:crypto ("v1," + base64
 * HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" keyed with the
 * base64-decoded whsec_ secret) at 1700000000, which `verify(headers, body,
 * secret)` (the SDK's check, returning the parsed event's type) must accept
 * at that time, and refuse with a changed body (`changed`) and 301 s later
 * (`/too old/`, the 5-minute window). */
async function standardWebhooksVector({ preset, sdk, fn, verb, secret, id, body, type, verify, changed }) {
  const timestamp = "1700000000";
  assertTamperKeepsJson(body);
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": standardWebhooksSign(secret, id, timestamp, body),
  };
  await atClock(1_700_000_000_000, () => {
    assert.equal(verify(headers, body, secret), type);
    assert.throws(() => verify(headers, tamper(body), secret), changed);
  });
  await atClock(1_700_000_301_000, () => {
    assert.throws(() => verify(headers, body, secret), /too old/);
  });
  emit({
    preset,
    sdk,
    function: fn,
    mode: `verify only; Standard Webhooks HMAC by node:crypto, ${verb} accepts it at the vector's time, refuses a changed body and a clock 301 s later`,
    secret,
    headers: Object.entries(headers),
    body,
    now: 1_700_000_000,
  });
}

export async function run() {
  // ---------------------------------------------------------------- lithic
  // VERIFY ONLY: lithic's client.webhooks.verifySignature (Standard Webhooks
  // through the `standardwebhooks` package; no signing function in lithic).
  {
    const Lithic = require("lithic");
    const client = new Lithic({ apiKey: "hookbox-sdk-unused" });
    const body = '{"event_type":"card.created","token":"0f1e2d3c-4b5a-4697-8887-a9b8c7d6e5f4","card_token":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","created":"2023-11-14T22:13:20Z"}';
    await standardWebhooksVector({
      preset: "lithic",
      sdk: pkg("lithic"),
      fn: "client.webhooks.verifySignature(body, headers, secret)",
      verb: "verifySignature",
      secret: whsec("hookbox sdk lithic key"),
      id: "msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTd",
      body,
      type: "card.created",
      verify(headers, raw, secret) {
        client.webhooks.verifySignature(raw, headers, secret);
        return JSON.parse(raw).event_type;
      },
      changed: /No matching signature/,
    });
  }

  // --------------------------------------------------------- dodo-payments
  // VERIFY ONLY: dodopayments's client.webhooks.unwrap(body, { headers, key })
  // (Standard Webhooks through `standardwebhooks`; no signing function).
  {
    const DodoPayments = require("dodopayments");
    const client = new DodoPayments({ bearerToken: "hookbox-sdk-unused" });
    const body = '{"business_id":"bus_0a1b2c3d4e5f6g7h8i9j","type":"payment.succeeded","timestamp":"2023-11-14T22:13:20Z","data":{"payload_type":"Payment","payment_id":"pay_0a1b2c3d4e5f6g7h8i9j","status":"succeeded","total_amount":1000,"currency":"USD"}}';
    await standardWebhooksVector({
      preset: "dodo-payments",
      sdk: pkg("dodopayments"),
      fn: "client.webhooks.unwrap(body, { headers, key })",
      verb: "unwrap",
      secret: whsec("hookbox sdk dodo-payments key"),
      id: "evt_2YbW1Fq4hkRyhPDWzbVXi1",
      body,
      type: "payment.succeeded",
      verify: (headers, raw, secret) => client.webhooks.unwrap(raw, { headers, key: secret }).type,
      changed: /No matching signature/,
    });
  }

  // ------------------------------------------------------------ liveblocks
  // VERIFY ONLY: @liveblocks/node's WebhookHandler#verifyRequest (Standard
  // Webhooks, its own implementation; no signing function). It also refuses
  // an event type it does not know, so the body is a real storageUpdated.
  {
    const { WebhookHandler } = require("@liveblocks/node");
    const secret = whsec("hookbox sdk liveblocks key");
    const handler = new WebhookHandler(secret);
    const body = '{"type":"storageUpdated","data":{"roomId":"hookbox-room","projectId":"605a50b01a36d5ea7a2e9104","updatedAt":"2023-11-14T22:13:20.000Z"}}';
    await standardWebhooksVector({
      preset: "liveblocks",
      sdk: pkg("@liveblocks/node"),
      fn: "new WebhookHandler(secret).verifyRequest({ headers, rawBody })",
      verb: "verifyRequest",
      secret,
      id: "msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTe",
      body,
      type: "storageUpdated",
      verify: (headers, raw) => handler.verifyRequest({ headers, rawBody: raw }).type,
      changed: /Invalid signature/,
    });
  }
}
