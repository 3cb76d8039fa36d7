// SDK vectors for the business family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/business.rs): webflow, onfido,
// easypost, acuity-scheduling, finch and imagekit. Each block runs the
// provider's official SDK, asserts its accept and refuse cases and calls
// `emit`. generate.mjs runs this module's run(); the helpers are lib.mjs's.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { require, pkg, tamper, hmacHex, emit, atClock, assertTamperKeepsJson } from "./lib.mjs";

export async function run() {
  // --------------------------------------------------------------- webflow
  // VERIFY ONLY: webflow-api's webhooks.verifySignature (no signing
  // function). HMAC by Node's crypto over "timestamp:body".
  {
    const { WebflowClient } = require("webflow-api");
    const SDK = pkg("webflow-api");
    const SECRET = "hookbox-sdk-webflow-secret";
    const timestamp = "1700000000000";
    const body = '{"triggerType":"form_submission","payload":{"name":"Contact","siteId":"65427cf400e02b306eaa049c","data":{"email":"sdk@example.com"}}}';
    const signature = hmacHex("sha256", SECRET, `${timestamp}:${body}`);
    const client = new WebflowClient({ accessToken: "unused" });
    const headers = { "x-webflow-timestamp": timestamp, "x-webflow-signature": signature };
    assert.equal(await client.webhooks.verifySignature({ headers, body, secret: SECRET }), true);
    assert.equal(await client.webhooks.verifySignature({ headers, body: tamper(body), secret: SECRET }), false);
    emit({
      preset: "webflow",
      sdk: SDK,
      function: "WebflowClient#webhooks.verifySignature({ headers, body, secret })",
      mode: "verify only; HMAC by node:crypto, verifySignature accepts it and refuses a changed body",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // ---------------------------------------------------------------- onfido
  // VERIFY ONLY: @onfido/api's WebhookEventVerifier#readPayload (no signing
  // function). Hex HMAC-SHA256 of the body with the webhook token.
  {
    const { WebhookEventVerifier } = require("@onfido/api");
    const SDK = pkg("@onfido/api");
    const TOKEN = "hookbox-sdk-onfido-webhook-token";
    const body = '{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"8546b5d1-5ef0-4a11-9d2f-3b8c1f2e0a4d","status":"complete","completed_at_iso8601":"2023-11-14T22:13:20Z","href":"https://api.eu.onfido.com/v3.6/checks/8546b5d1-5ef0-4a11-9d2f-3b8c1f2e0a4d"}}}';
    assertTamperKeepsJson(body);
    const signature = hmacHex("sha256", TOKEN, body);
    const verifier = new WebhookEventVerifier(TOKEN);
    assert.equal(verifier.readPayload(body, signature).payload.action, "check.completed");
    assert.throws(() => verifier.readPayload(tamper(body), signature));
    emit({
      preset: "onfido",
      sdk: SDK,
      function: "new WebhookEventVerifier(webhookToken).readPayload(rawEventBody, hexSignature)",
      mode: "verify only; HMAC by node:crypto, readPayload accepts it and throws for a changed body",
      secret: TOKEN,
      headers: [["X-SHA2-Signature", signature]],
      body,
    });
  }

  // -------------------------------------------------------------- easypost
  // VERIFY ONLY: @easypost/api's client.Utils.validateWebhook (no signing
  // function). "hmac-sha256-hex=" + hex HMAC-SHA256 with the NFKD-normalized
  // webhook secret. (The SDK rewrites integer "weight" values to "N.0" before
  // hashing; the body has no "weight" key, so it hashes the bytes as sent.)
  {
    const EasyPostClient = require("@easypost/api");
    const SDK = pkg("@easypost/api");
    const SECRET = "hookbox-sdk-easypost-secret";
    const client = new EasyPostClient("EZTK_hookbox_sdk_unused");
    const body = '{"id":"evt_0a1b2c3d4e5f60718293a4b5c6d7e8f9","object":"Event","created_at":"2023-11-14T22:13:20Z","updated_at":"2023-11-14T22:13:20Z","description":"tracker.updated","mode":"test","previous_attributes":{"status":"pre_transit"},"result":{"id":"trk_0a1b2c3d4e5f60718293a4b5c6d7e8f9","object":"Tracker","mode":"test","tracking_code":"EZ1000000001","status":"in_transit","carrier":"USPS"},"status":"pending","pending_urls":[],"completed_urls":[]}';
    assert.ok(!body.includes('"weight"'));
    assertTamperKeepsJson(body);
    const signature = "hmac-sha256-hex=" + hmacHex("sha256", Buffer.from(SECRET.normalize("NFKD"), "utf8"), body);
    const headers = { "X-Hmac-Signature": signature };
    assert.equal(client.Utils.validateWebhook(Buffer.from(body), headers, SECRET).description, "tracker.updated");
    assert.throws(() => client.Utils.validateWebhook(Buffer.from(tamper(body)), headers, SECRET));
    emit({
      preset: "easypost",
      sdk: SDK,
      function: "new EasyPostClient(apiKey).Utils.validateWebhook(eventBody, headers, webhookSecret)",
      mode: "verify only; HMAC by node:crypto, validateWebhook accepts it and throws for a changed body",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
    });
  }

  // ----------------------------------------------------- acuity-scheduling
  // VERIFY ONLY: acuityscheduling's verifyMessageSignature (throws on a
  // mismatch; no signing function). Base64 HMAC-SHA256 of the form-encoded
  // body with the account's API key.
  {
    const acuity = require("acuityscheduling");
    const SDK = pkg("acuityscheduling");
    const API_KEY = "hookbox-sdk-acuity-api-key";
    const body = "action=scheduled&id=1234567890&calendarID=1234&appointmentTypeID=5678";
    const signature = crypto.createHmac("sha256", API_KEY).update(body).digest("base64");
    acuity.verifyMessageSignature(API_KEY, body, signature);
    assert.throws(() => acuity.verifyMessageSignature(API_KEY, tamper(body), signature), /forged/);
    emit({
      preset: "acuity-scheduling",
      sdk: SDK,
      function: "verifyMessageSignature(secret, body, signature)",
      mode: "verify only; HMAC by node:crypto, verifyMessageSignature accepts it and throws for a changed body",
      secret: API_KEY,
      headers: [
        ["X-Acuity-Signature", signature],
        ["Content-Type", "application/x-www-form-urlencoded"],
      ],
      body,
    });
  }

  // ----------------------------------------------------------------- finch
  // SIGN: @tryfinch/finch-api's client.webhooks.signPayload (TypeScript
  // `private`, reachable at run time: the function verifySignature itself
  // calls), "v1," + base64 HMAC-SHA256 of "{event-id}.{timestamp}.{body}"
  // keyed with the base64-decoded secret; checked back with
  // client.webhooks.verifySignature, which checks the timestamp within 5 min
  // of Date.now() (fixed to the vector's time).
  {
    const { Finch } = require("@tryfinch/finch-api");
    const SDK = pkg("@tryfinch/finch-api");
    const SECRET = "zoVpvhhZyTC/Bjlr7uQBUk+pXNzzZid7XsZJo9FjQTA="; // base64(sha256("hookbox sdk finch key"))
    const client = new Finch({ accessToken: "hookbox-sdk-unused" });
    const [eventId, timestamp] = ["msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTc", "1700000000"];
    const body = '{"company_id":"5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","account_id":"6b2c3d4e-5f60-4b7c-8d9e-0f1a2b3c4d5e","connection_id":"7c3d4e5f-6071-4c8d-9e0f-1a2b3c4d5e6f","event_type":"job.benefit_create.completed","data":{"job_id":"8d4e5f60-7182-4d9e-8f1a-2b3c4d5e6f70","job_url":"https://api.tryfinch.com/jobs/automated/8d4e5f60-7182-4d9e-8f1a-2b3c4d5e6f70"}}';
    assertTamperKeepsJson(body);
    const signature = client.webhooks.signPayload(body, {
      eventId,
      timestamp: new Date(Number(timestamp) * 1000),
      secret: Buffer.from(SECRET, "base64"),
    });
    assert.equal(
      signature,
      "v1," + crypto.createHmac("sha256", Buffer.from(SECRET, "base64")).update(`${eventId}.${timestamp}.${body}`).digest("base64"),
    );
    const headers = { "finch-event-id": eventId, "finch-timestamp": timestamp, "finch-signature": signature };
    await atClock(1_700_000_000_000, () => {
      client.webhooks.verifySignature(body, headers, SECRET);
      assert.throws(() => client.webhooks.verifySignature(tamper(body), headers, SECRET), /signature/);
    });
    await atClock(1_700_000_301_000, () => {
      assert.throws(() => client.webhooks.verifySignature(body, headers, SECRET), /too old/);
    });
    emit({
      preset: "finch",
      sdk: SDK,
      function: "client.webhooks.signPayload(payload, { eventId, timestamp, secret })",
      mode: "sign; client.webhooks.verifySignature accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // -------------------------------------------------------------- imagekit
  // VERIFY ONLY: imagekit's ImageKit#verifyWebhookEvent (no signing
  // function). "t=<ms>,v1=" + hex HMAC-SHA256 of "{t}.{body}" keyed with the
  // whole secret string as UTF-8 ("whsec_" included, not base64-decoded). The
  // SDK checks no timestamp window.
  {
    const ImageKit = require("imagekit");
    const SDK = pkg("imagekit");
    const SECRET = "whsec_hookbox-sdk-imagekit-secret";
    const imagekit = new ImageKit({
      publicKey: "public_hookbox_sdk",
      privateKey: "private_hookbox_sdk",
      urlEndpoint: "https://ik.imagekit.io/hookbox",
    });
    const t = "1700000000000";
    const body = '{"type":"video.transformation.accepted","id":"58e6d24d-6098-4319-be8d-40c3cb0a402d","created_at":"2023-11-14T22:13:20.000Z","request":{"x_request_id":"fa98fa2e-d6cd-45b4-acf5-bc1d2bbb8ba9","url":"https://ik.imagekit.io/hookbox/sample.mp4?tr=f-webm","user_agent":"Mozilla/5.0"},"data":{"asset":{"url":"https://ik.imagekit.io/hookbox/sample.mp4"},"transformation":{"type":"video-transformation","options":{"video_codec":"vp9","audio_codec":"opus","format":"webm"}}}}';
    assertTamperKeepsJson(body);
    const header = `t=${t},v1=${hmacHex("sha256", SECRET, `${t}.${body}`)}`;
    const { timestamp, event } = imagekit.verifyWebhookEvent(body, header, SECRET);
    assert.equal(timestamp, 1_700_000_000_000);
    assert.equal(event.type, "video.transformation.accepted");
    assert.throws(() => imagekit.verifyWebhookEvent(tamper(body), header, SECRET));
    emit({
      preset: "imagekit",
      sdk: SDK,
      function: "new ImageKit({ publicKey, privateKey, urlEndpoint }).verifyWebhookEvent(payload, signature, secret)",
      mode: "verify only; HMAC by node:crypto, verifyWebhookEvent accepts it and throws for a changed body",
      secret: SECRET,
      headers: [["x-ik-signature", header]],
      body,
      now: 1_700_000_000,
    });
  }
}
