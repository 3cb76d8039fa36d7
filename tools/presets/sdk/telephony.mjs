// SDK vectors for the telephony family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/telephony.rs): telnyx, plivo,
// sinch and viber. Each block runs the provider's official SDK, asserts
// its accept and refuse cases and calls `emit`. generate.mjs runs this
// module's run(); the helpers are lib.mjs's.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { require, pkg, tamper, hmacHex, emit, atClock, assertTamperKeepsJson } from "./lib.mjs";

export async function run() {
  // ---------------------------------------------------------------- telnyx
  // VERIFY ONLY: telnyx's TelnyxWebhook#verify (lib/webhooks.js), Ed25519
  // over `{telnyx-timestamp}|{body}` with the base64 public key Mission
  // Control shows, 300 s either way of Date.now() (fixed here). The
  // signature comes from node:crypto with a fixed seed (SHA-256 of
  // "hookbox sdk telnyx key"); hookbox takes the key as hex.
  {
    const { TelnyxWebhook } = require("telnyx/lib/webhooks.js");
    const SDK = pkg("telnyx");
    const seed = crypto.createHash("sha256").update("hookbox sdk telnyx key").digest();
    const privateKey = crypto.createPrivateKey({
      key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]),
      format: "der",
      type: "pkcs8",
    });
    const publicRaw = crypto.createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12);
    const publicB64 = publicRaw.toString("base64");
    const ts = "1700000000";
    const body = '{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","occurred_at":"2023-11-14T22:13:20.000+00:00","payload":{"id":"84cca175-9755-4859-b67f-4730d7f58aa3","text":"SDK vector"},"record_type":"event"},"meta":{"attempt":1,"delivered_to":"https://example.com/webhooks"}}';
    assertTamperKeepsJson(body);
    const signature = crypto.sign(null, Buffer.from(`${ts}|${body}`), privateKey).toString("base64");
    const headers = { "telnyx-signature-ed25519": signature, "telnyx-timestamp": ts };
    const webhook = new TelnyxWebhook(publicB64);
    await atClock(1_700_000_000_000, async () => {
      await webhook.verify(body, headers);
      await assert.rejects(webhook.verify(tamper(body), headers), /does not match/);
    });
    await atClock(1_700_000_301_000, async () => {
      await assert.rejects(webhook.verify(body, headers), /too old/);
    });
    emit({
      preset: "telnyx",
      sdk: SDK,
      function: "new TelnyxWebhook(publicKey).verify(payload, headers) (lib/webhooks.js)",
      mode: `verify only; Ed25519 by node:crypto, verify accepts it at the vector's time, refuses a changed body and a clock 301 s later; public key base64 ${publicB64}`,
      secret: publicRaw.toString("hex"),
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // ----------------------------------------------------------------- plivo
  // VERIFY ONLY: plivo's validateSignature(uri, nonce, signature,
  // authToken) (dist/utils/security.js): base64 HMAC-SHA256 of the URL
  // without its query string, then the nonce. The form body is not signed.
  {
    const { validateSignature } = require("plivo/dist/utils/security.js");
    const SDK = pkg("plivo");
    const TOKEN = "hookbox-sdk-plivo-auth-token";
    const url = "https://hooks.example.com/webhooks/plivo";
    const nonce = "05429567804466091622";
    const signature = crypto.createHmac("sha256", TOKEN).update(url + nonce).digest("base64");
    assert.equal(validateSignature(url, nonce, signature, TOKEN), true);
    assert.equal(validateSignature(url, tamper(nonce), signature, TOKEN), false);
    assert.equal(validateSignature(url.replace("plivo", "plivp"), nonce, signature, TOKEN), false);
    emit({
      preset: "plivo",
      sdk: SDK,
      function: "validateSignature(uri, nonce, signature, auth_token) (dist/utils/security.js)",
      mode: "verify only; HMAC by node:crypto, validateSignature accepts it, refuses a changed nonce and a changed URL",
      secret: TOKEN,
      url,
      headers: [
        ["X-Plivo-Signature-V2", signature],
        ["X-Plivo-Signature-V2-Nonce", nonce],
      ],
      body: "CallUUID=2b2d0b0a-1b7e-4b5f-9a58-6b7c3a1e2f11&CallStatus=ringing&Direction=inbound&From=14155550100&To=14155550199",
    });
  }

  // ----------------------------------------------------------------- sinch
  // SIGN: @sinch/sdk-client's calculateWebhookSignature(computeSignedData(
  // body, nonce, timestamp), secret) (the Conversation API callback
  // signature), checked back with validateWebhookSignature, which
  // ConversationCallbackWebhooks#validateAuthenticationHeader calls.
  {
    const helper = require("@sinch/sdk-client");
    const { ConversationCallbackWebhooks } = require("@sinch/conversation");
    const SDK = pkg("@sinch/sdk-client");
    const SECRET = "hookbox-sdk-sinch-secret";
    const nonce = "01FJA8B4A7BM43YGWSG9GBV067";
    const ts = "1700000000";
    const body = '{"app_id":"01EB37HMH1M6SV18ASNS3G135H","accepted_time":"2023-11-14T22:13:20.000Z","event_time":"2023-11-14T22:13:19.000Z","project_id":"c36f3d3d-1513-4edd-ae42-11995557ff61","message":{"id":"01EQBC1A3BEK731GY4YXEN0C2R","direction":"TO_APP","contact_message":{"text_message":{"text":"SDK vector"}}}}';
    assertTamperKeepsJson(body);
    const signature = helper.calculateWebhookSignature(helper.computeSignedData(body, nonce, ts), SECRET);
    const headers = {
      "x-sinch-webhook-signature": signature,
      "x-sinch-webhook-signature-nonce": nonce,
      "x-sinch-webhook-signature-timestamp": ts,
      "x-sinch-webhook-signature-algorithm": "HmacSHA256",
    };
    const hooks = new ConversationCallbackWebhooks(SECRET);
    assert.equal(hooks.validateAuthenticationHeader(headers, body, "/", "POST"), true);
    assert.equal(hooks.validateAuthenticationHeader(headers, tamper(body), "/", "POST"), false);
    emit({
      preset: "sinch",
      sdk: `${SDK} (with ${pkg("@sinch/conversation")})`,
      function: "calculateWebhookSignature(computeSignedData(body, nonce, timestamp), secret) (@sinch/sdk-client)",
      mode: "sign; ConversationCallbackWebhooks#validateAuthenticationHeader accepts it and refuses a changed body",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // ----------------------------------------------------------------- viber
  // VERIFY ONLY: viber-bot's MessageValidator#validateMessage(signature,
  // body) (what its middleware checks X-Viber-Content-Signature with): hex
  // HMAC-SHA256 of the body with the bot's auth token.
  {
    const MessageValidator = require("viber-bot/lib/message/message-validator.js");
    const SDK = pkg("viber-bot");
    const TOKEN = "445da6az1s345z78-dazcczb2542zv51a-e0vc5fva17480im9";
    const body = '{"event":"message","timestamp":1700000000000,"chat_hostname":"SN-376_","message_token":4912661846655238145,"sender":{"id":"01234567890A=","name":"SDK Vector","language":"en","country":"UK","api_version":1},"message":{"type":"text","text":"a message to the service"},"silent":false}';
    assertTamperKeepsJson(body);
    const signature = hmacHex("sha256", TOKEN, body);
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const validator = new MessageValidator(quiet, TOKEN);
    assert.equal(validator.validateMessage(signature, body), true);
    assert.equal(validator.validateMessage(signature, tamper(body)), false);
    emit({
      preset: "viber",
      sdk: SDK,
      function: "new MessageValidator(logger, authToken).validateMessage(signature, body) (lib/message/message-validator.js)",
      mode: "verify only; HMAC by node:crypto, validateMessage accepts it and refuses a changed body",
      secret: TOKEN,
      headers: [["X-Viber-Content-Signature", signature]],
      body,
    });
  }
}
