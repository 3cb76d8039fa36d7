// SDK vectors for the standard family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/standard.rs): lithic, dodo-payments
// and liveblocks (Standard Webhooks). Each block runs the provider's
// official SDK, asserts its accept and refuse cases and calls `emit`.
// generate.mjs runs this module's run(); the helpers are lib.mjs's.

import assert from "node:assert/strict";
import { require, pkg, tamper, emit, atClock, assertTamperKeepsJson, whsec, standardWebhooksSign } from "./lib.mjs";

export async function run() {
  // ---------------------------------------------------------------- lithic
  // VERIFY ONLY: lithic's client.webhooks.verifySignature (Standard Webhooks
  // through the `standardwebhooks` package; no signing function in lithic).
  // Signature by node:crypto: "v1," + base64 HMAC-SHA256 of
  // "{webhook-id}.{webhook-timestamp}.{body}" keyed with the base64-decoded
  // whsec_ secret; 5 min window around Date.now() (fixed).
  {
    const Lithic = require("lithic");
    const SDK = pkg("lithic");
    const SECRET = whsec("hookbox sdk lithic key");
    const client = new Lithic({ apiKey: "hookbox-sdk-unused" });
    const [id, timestamp] = ["msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTd", "1700000000"];
    const body = '{"event_type":"card.created","token":"0f1e2d3c-4b5a-4697-8887-a9b8c7d6e5f4","card_token":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","created":"2023-11-14T22:13:20Z"}';
    assertTamperKeepsJson(body);
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": standardWebhooksSign(SECRET, id, timestamp, body),
    };
    await atClock(1_700_000_000_000, () => {
      client.webhooks.verifySignature(body, headers, SECRET);
      assert.throws(() => client.webhooks.verifySignature(tamper(body), headers, SECRET), /No matching signature/);
    });
    await atClock(1_700_000_301_000, () => {
      assert.throws(() => client.webhooks.verifySignature(body, headers, SECRET), /too old/);
    });
    emit({
      preset: "lithic",
      sdk: SDK,
      function: "client.webhooks.verifySignature(body, headers, secret)",
      mode: "verify only; Standard Webhooks HMAC by node:crypto, verifySignature accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // --------------------------------------------------------- dodo-payments
  // VERIFY ONLY: dodopayments's client.webhooks.unwrap(body, { headers, key })
  // (Standard Webhooks through `standardwebhooks`; no signing function).
  {
    const DodoPayments = require("dodopayments");
    const SDK = pkg("dodopayments");
    const SECRET = whsec("hookbox sdk dodo-payments key");
    const client = new DodoPayments({ bearerToken: "hookbox-sdk-unused" });
    const [id, timestamp] = ["evt_2YbW1Fq4hkRyhPDWzbVXi1", "1700000000"];
    const body = '{"business_id":"bus_0a1b2c3d4e5f6g7h8i9j","type":"payment.succeeded","timestamp":"2023-11-14T22:13:20Z","data":{"payload_type":"Payment","payment_id":"pay_0a1b2c3d4e5f6g7h8i9j","status":"succeeded","total_amount":1000,"currency":"USD"}}';
    assertTamperKeepsJson(body);
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": standardWebhooksSign(SECRET, id, timestamp, body),
    };
    await atClock(1_700_000_000_000, () => {
      assert.equal(client.webhooks.unwrap(body, { headers, key: SECRET }).type, "payment.succeeded");
      assert.throws(() => client.webhooks.unwrap(tamper(body), { headers, key: SECRET }), /No matching signature/);
    });
    await atClock(1_700_000_301_000, () => {
      assert.throws(() => client.webhooks.unwrap(body, { headers, key: SECRET }), /too old/);
    });
    emit({
      preset: "dodo-payments",
      sdk: SDK,
      function: "client.webhooks.unwrap(body, { headers, key })",
      mode: "verify only; Standard Webhooks HMAC by node:crypto, unwrap accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // ------------------------------------------------------------ liveblocks
  // VERIFY ONLY: @liveblocks/node's WebhookHandler#verifyRequest (Standard
  // Webhooks, its own implementation; no signing function). It also refuses
  // an event type it does not know, so the body is a real storageUpdated.
  {
    const { WebhookHandler } = require("@liveblocks/node");
    const SDK = pkg("@liveblocks/node");
    const SECRET = whsec("hookbox sdk liveblocks key");
    const handler = new WebhookHandler(SECRET);
    const [id, timestamp] = ["msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTe", "1700000000"];
    const body = '{"type":"storageUpdated","data":{"roomId":"hookbox-room","projectId":"605a50b01a36d5ea7a2e9104","updatedAt":"2023-11-14T22:13:20.000Z"}}';
    assertTamperKeepsJson(body);
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": standardWebhooksSign(SECRET, id, timestamp, body),
    };
    await atClock(1_700_000_000_000, () => {
      assert.equal(handler.verifyRequest({ headers, rawBody: body }).type, "storageUpdated");
      assert.throws(() => handler.verifyRequest({ headers, rawBody: tamper(body) }), /Invalid signature/);
    });
    await atClock(1_700_000_301_000, () => {
      assert.throws(() => handler.verifyRequest({ headers, rawBody: body }), /too old/);
    });
    emit({
      preset: "liveblocks",
      sdk: SDK,
      function: "new WebhookHandler(secret).verifyRequest({ headers, rawBody })",
      mode: "verify only; Standard Webhooks HMAC by node:crypto, verifyRequest accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }
}
