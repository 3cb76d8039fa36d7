// SDK vectors for the payments family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/payments.rs): chargebee,
// gocardless, modern-treasury, cashfree and orb. Each block runs the
// provider's official SDK, asserts its accept and refuse cases and calls
// `emit`. generate.mjs runs this module's run(); the helpers are lib.mjs's.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { require, pkg, tamper, hmacHex, emit, atClock, assertTamperKeepsJson } from "./lib.mjs";

export async function run() {
  // ------------------------------------------------------------- chargebee
  // VERIFY ONLY: Chargebee does not sign; its webhooks carry HTTP Basic auth.
  // chargebee's basicAuthValidator parses the Authorization header and hands
  // the credentials to the given check; it must accept the header and refuse
  // one with a changed byte.
  {
    const { basicAuthValidator } = require("chargebee");
    const SDK = pkg("chargebee");
    const [USER, PASSWORD] = ["hookbox-sdk", "chargebee-p4ss"];
    const authorization = "Basic " + Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
    const validate = basicAuthValidator((u, p) => u === USER && p === PASSWORD);
    await validate({ authorization });
    await assert.rejects(validate({ authorization: tamper(authorization, 8) }));
    const body = '{"id":"ev_sdk_1","occurred_at":1700000000,"event_type":"customer_created","content":{"customer":{"id":"cust_1"}}}';
    emit({
      preset: "chargebee",
      sdk: SDK,
      function: "basicAuthValidator((user, password) => ...)(headers)",
      mode: "verify only; header built with Buffer base64, the validator accepts it and refuses a changed header byte",
      secret: `${USER}:${PASSWORD}`,
      headers: [["Authorization", authorization]],
      body,
    });
  }

  // ------------------------------------------------------------ gocardless
  // VERIFY ONLY: gocardless-nodejs's webhooks.parse (no signing function).
  // Hex HMAC-SHA256 of the body with the webhook endpoint secret.
  {
    const webhooks = require("gocardless-nodejs/webhooks");
    const SDK = pkg("gocardless-nodejs");
    const SECRET = "hookbox-sdk-gocardless-secret";
    const body = '{"events":[{"id":"EV00AB12CD34EF","created_at":"2023-11-14T22:13:20.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM00AB12CD34EF"},"details":{"origin":"gocardless","cause":"payment_confirmed","description":"Payment confirmed."},"metadata":{}}],"meta":{"webhook_id":"WB00AB12CD34EF"}}';
    assertTamperKeepsJson(body);
    const signature = hmacHex("sha256", SECRET, body);
    const events = webhooks.parse(body, SECRET, signature);
    assert.equal(events[0].action, "confirmed");
    assert.equal(webhooks.parseWithMeta(body, SECRET, signature).webhookId, "WB00AB12CD34EF");
    assert.throws(() => webhooks.parse(tamper(body), SECRET, signature));
    emit({
      preset: "gocardless",
      sdk: SDK,
      function: "webhooks.parse(body, webhookSecret, signatureHeader) (gocardless-nodejs/webhooks)",
      mode: "verify only; HMAC by node:crypto, parse accepts it and throws for a changed body",
      secret: SECRET,
      headers: [["Webhook-Signature", signature]],
      body,
    });
  }

  // ------------------------------------------------------- modern-treasury
  // SIGN: modern-treasury's client.webhooks.getSignature (hex HMAC-SHA256 of
  // the body with the webhook key), checked back with validateSignature.
  {
    const ModernTreasury = require("modern-treasury");
    const SDK = pkg("modern-treasury");
    const KEY = "hookbox-sdk-modern-treasury-webhook-key";
    const client = new ModernTreasury({
      apiKey: "hookbox-sdk-unused",
      organizationID: "00000000-0000-4000-8000-000000000000",
    });
    const body = '{"event":"completed","data":{"id":"7c1a2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","object":"payment_order","type":"ach","amount":10000,"direction":"credit","currency":"USD","status":"completed","live_mode":false,"created_at":"2023-11-14T22:13:20Z","updated_at":"2023-11-14T22:13:20Z"}}';
    assertTamperKeepsJson(body);
    const signature = client.webhooks.getSignature(body, { key: KEY });
    const headers = { "X-Signature": signature, "X-Webhook-ID": "3f2e1d0c-9b8a-4765-8432-10fedcba9876" };
    assert.equal(client.webhooks.validateSignature(body, headers, { key: KEY }), true);
    assert.equal(client.webhooks.validateSignature(tamper(body), headers, { key: KEY }), false);
    emit({
      preset: "modern-treasury",
      sdk: SDK,
      function: "client.webhooks.getSignature(payload, { key })",
      mode: "sign; client.webhooks.validateSignature accepts it and refuses a changed body",
      secret: KEY,
      headers: Object.entries(headers),
      body,
    });
  }

  // -------------------------------------------------------------- cashfree
  // VERIFY ONLY: cashfree-pg's Cashfree#PGVerifyWebhookSignature (no signing
  // function; it throws on a mismatch). Base64 HMAC-SHA256 of
  // timestamp + body with the client secret. The client is built with error
  // analytics off (the 7th argument), so it does not start Sentry.
  {
    const { Cashfree, CFEnvironment } = require("cashfree-pg");
    const SDK = pkg("cashfree-pg");
    const [CLIENT_ID, CLIENT_SECRET] = ["hookbox-sdk-client-id", "hookbox-sdk-cashfree-client-secret"];
    const cashfree = new Cashfree(CFEnvironment.SANDBOX, CLIENT_ID, CLIENT_SECRET, undefined, undefined, undefined, false);
    const timestamp = "1700000000000";
    const body = '{"data":{"order":{"order_id":"order_hookbox_sdk_1","order_amount":1.00,"order_currency":"INR","order_tags":null},"payment":{"cf_payment_id":"5114910000001","payment_status":"SUCCESS","payment_amount":1.00,"payment_currency":"INR","payment_time":"2023-11-15T03:43:20+05:30","payment_group":"upi"}},"event_time":"2023-11-15T03:43:20+05:30","type":"PAYMENT_SUCCESS_WEBHOOK"}';
    assertTamperKeepsJson(body);
    const signature = crypto.createHmac("sha256", CLIENT_SECRET).update(timestamp + body).digest("base64");
    assert.equal(cashfree.PGVerifyWebhookSignature(signature, body, timestamp).type, "PAYMENT_SUCCESS_WEBHOOK");
    assert.throws(() => cashfree.PGVerifyWebhookSignature(signature, tamper(body), timestamp), /did not match/);
    assert.throws(() => cashfree.PGVerifyWebhookSignature(signature, body, "1700000000001"), /did not match/);
    emit({
      preset: "cashfree",
      sdk: SDK,
      function: "new Cashfree(env, clientId, clientSecret).PGVerifyWebhookSignature(signature, rawBody, timestamp)",
      mode: "verify only; HMAC by node:crypto, PGVerifyWebhookSignature accepts it and throws for a changed body or timestamp",
      secret: CLIENT_SECRET,
      headers: [
        ["x-webhook-signature", signature],
        ["x-webhook-timestamp", timestamp],
        ["x-webhook-version", "2025-01-01"],
        ["x-idempotency-key", "hookbox-sdk-cashfree-idempotency-1"],
      ],
      body,
      now: 1_700_000_000,
    });
  }

  // ------------------------------------------------------------------- orb
  // SIGN: orb-billing's client.webhooks.signPayload (TypeScript `private`,
  // reachable at run time: the function verifySignature itself calls),
  // "v1=" + hex HMAC-SHA256 of "v1:{X-Orb-Timestamp}:{body}" keyed with the
  // secret's UTF-8 bytes; checked back with client.webhooks.verifySignature,
  // which reads X-Orb-Timestamp as UTC (no zone in the header) and checks it
  // within 5 min of Date.now() (fixed).
  {
    const Orb = require("orb-billing");
    const SDK = pkg("orb-billing");
    const SECRET = "hookbox-sdk-orb-secret";
    const client = new Orb({ apiKey: "hookbox-sdk-unused" });
    const timestamp = "2023-11-14T22:13:20.000000";
    const body = '{"id":"evt_hookboxSdkOrb0001","created_at":"2023-11-14T22:13:20.000000+00:00","type":"customer.created","customer":{"id":"cus_hookboxSdkOrb0001","external_customer_id":"acme-1","name":"Acme"},"properties":{}}';
    assertTamperKeepsJson(body);
    const signature = client.webhooks.signPayload(body, { timestamp, secret: new Uint8Array(Buffer.from(SECRET, "utf8")) });
    assert.equal(signature, "v1=" + hmacHex("sha256", SECRET, `v1:${timestamp}:${body}`));
    const headers = { "X-Orb-Timestamp": timestamp, "X-Orb-Signature": signature };
    await atClock(1_700_000_000_000, () => {
      client.webhooks.verifySignature(body, headers, SECRET);
      assert.throws(() => client.webhooks.verifySignature(tamper(body), headers, SECRET), /signature/);
    });
    await atClock(1_700_000_301_000, () => {
      assert.throws(() => client.webhooks.verifySignature(body, headers, SECRET), /too old/);
    });
    emit({
      preset: "orb",
      sdk: SDK,
      function: "client.webhooks.signPayload(payload, { timestamp, secret })",
      mode: "sign; client.webhooks.verifySignature accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }
}
