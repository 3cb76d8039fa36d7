// SDK vectors for the messaging family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/messaging.rs): twilio-sha256,
// discord, zoom, line, pusher, stream-chat, elevenlabs and retell. Each
// block runs the provider's official SDK, asserts its accept and refuse
// cases and calls `emit`. generate.mjs runs this module's run(); the
// helpers are lib.mjs's.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { require, pkg, tamper, hmacHex, emit, atClock, assertTamperKeepsJson } from "./lib.mjs";

export async function run() {
  // ---------------------------------------------------------------- twilio
  // SIGN: twilio's getExpectedTwilioSignature with the HMAC_SHA256 signature
  // setting (a Webhooks Setting's SharedKey), checked back with its
  // validateRequest / validateRequestWithBody.
  {
    const twilio = require("twilio");
    const SDK = pkg("twilio");
    const KEY = "hookbox-sdk-twilio-shared-key";
    const SETTINGS = "key=webhooks_sharedkey_hookbox,algorithm=HMAC_SHA256";
    // The algorithm as the SDK reads it from the settings header.
    const algorithm = twilio.getSignatureAlgorithm(SETTINGS);
    assert.equal(algorithm, twilio.HMAC_SHA256 ?? "HMAC_SHA256");

    // A form POST: the URL plus the sorted parameters.
    const url = "https://hooks.example.com/twilio/voice?partner=acme";
    const params = {
      AccountSid: "AC00000000000000000000000000000000",
      CallSid: "CA00000000000000000000000000000001",
      CallStatus: "ringing",
      From: "+14155550100",
      To: "+14155550199",
    };
    const body = new URLSearchParams(params).toString();
    const signature = twilio.getExpectedTwilioSignature(KEY, url, params, algorithm);
    assert.ok(twilio.validateRequest(KEY, signature, url, params, algorithm));
    const changed = Object.fromEntries(new URLSearchParams(tamper(body)));
    assert.ok(!twilio.validateRequest(KEY, signature, url, changed, algorithm));
    emit({
      preset: "twilio-sha256",
      sdk: SDK,
      function: "getExpectedTwilioSignature(key, url, params, 'HMAC_SHA256')",
      mode: "sign; validateRequest accepts it and refuses a changed parameter",
      secret: KEY,
      url,
      headers: [
        ["X-Twilio-Signature", signature],
        ["X-Twilio-Webhooks-Signature-Settings", SETTINGS],
        ["Content-Type", "application/x-www-form-urlencoded"],
      ],
      body,
    });

    // A JSON body: bound by the URL's bodySHA256, the URL alone is signed.
    const json = '{"CallSid":"CA00000000000000000000000000000001","CallStatus":"ringing"}';
    const jsonUrl = `https://hooks.example.com/twilio/status?bodySHA256=${twilio.getExpectedBodyHash(json)}`;
    const jsonSignature = twilio.getExpectedTwilioSignature(KEY, jsonUrl, {}, algorithm);
    assert.ok(twilio.validateRequestWithBody(KEY, jsonSignature, jsonUrl, json, algorithm));
    assert.ok(!twilio.validateRequestWithBody(KEY, jsonSignature, jsonUrl, tamper(json), algorithm));
    emit({
      preset: "twilio-sha256",
      sdk: SDK,
      function: "getExpectedBodyHash(body) + getExpectedTwilioSignature(key, url, {}, 'HMAC_SHA256')",
      mode: "sign; validateRequestWithBody accepts it and refuses a changed body",
      secret: KEY,
      url: jsonUrl,
      headers: [
        ["X-Twilio-Signature", jsonSignature],
        ["X-Twilio-Webhooks-Signature-Settings", SETTINGS],
        ["Content-Type", "application/json"],
      ],
      body: json,
    });
  }

  // --------------------------------------------------------------- discord
  // VERIFY ONLY: discord-interactions has no signing function (Discord holds
  // the private key). Ed25519 signature by Node's crypto from a fixed seed;
  // discord-interactions' verifyKey must accept it and refuse a changed body.
  {
    const { verifyKey } = require("discord-interactions");
    const SDK = pkg("discord-interactions");
    const seed = crypto.createHash("sha256").update("hookbox sdk discord key").digest();
    const privateKey = crypto.createPrivateKey({
      key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]),
      format: "der",
      type: "pkcs8",
    });
    const publicKey = crypto
      .createPublicKey(privateKey)
      .export({ format: "der", type: "spki" })
      .subarray(-32)
      .toString("hex");
    const timestamp = "1700000000";
    const body = '{"id":"1170000000000000000","application_id":"1160000000000000000","type":1,"token":"sdk-token","version":1}';
    const signature = crypto.sign(null, Buffer.from(timestamp + body), privateKey).toString("hex");
    assert.equal(await verifyKey(Buffer.from(body), signature, timestamp, publicKey), true);
    assert.equal(await verifyKey(Buffer.from(tamper(body)), signature, timestamp, publicKey), false);
    assert.equal(await verifyKey(Buffer.from(body), signature, "1700000001", publicKey), false);
    emit({
      preset: "discord",
      sdk: SDK,
      function: "verifyKey(rawBody, signature, timestamp, publicKey)",
      mode: "verify only; Ed25519 signed by node:crypto from a fixed seed, verifyKey accepts it and refuses a changed body",
      secret: publicKey,
      headers: [
        ["X-Signature-Ed25519", signature],
        ["X-Signature-Timestamp", timestamp],
      ],
      body,
      now: 1_700_000_000,
    });
  }

  // ------------------------------------------------------------------ zoom
  // VERIFY ONLY: @zoom/rivet's receivers verify x-zm-signature (its only
  // signing function hashes the URL-validation plainToken). HMAC by Node's
  // crypto over "v0:timestamp:body"; AwsLambdaReceiver must answer 200 and
  // 400 for a changed body. (Rivet re-serializes the parsed body with
  // JSON.stringify, so the body is compact JSON.)
  {
    const { AwsLambdaReceiver } = require("@zoom/rivet/meetings");
    const SDK = pkg("@zoom/rivet");
    const SECRET = "hookbox-sdk-zoom-secret-token";
    const timestamp = "1700000000";
    const body = '{"event":"meeting.started","event_ts":1700000000123,"payload":{"account_id":"AAAAAABBBB","object":{"id":"85746065432","topic":"SDK vector"}}}';
    assert.equal(JSON.stringify(JSON.parse(body)), body);
    const signature = "v0=" + hmacHex("sha256", SECRET, `v0:${timestamp}:${body}`);
    const headers = { "x-zm-request-timestamp": timestamp, "x-zm-signature": signature };
    const receiver = new AwsLambdaReceiver({ webhooksSecretToken: SECRET });
    const handle = receiver.start();
    const debug = console.debug;
    try {
      console.debug = () => {};
      const ok = await handle({ body, headers, isBase64Encoded: false }, {});
      assert.equal(ok.statusCode, 200, ok.body);
      const bad = await handle({ body: tamper(body), headers, isBase64Encoded: false }, {});
      assert.equal(bad.statusCode, 400, bad.body);
    } finally {
      console.debug = debug;
    }
    emit({
      preset: "zoom",
      sdk: SDK,
      function: "AwsLambdaReceiver({ webhooksSecretToken }).start() handler (@zoom/rivet/meetings)",
      mode: "verify only; HMAC by node:crypto, the receiver answers 200 for it and 400 for a changed body",
      secret: SECRET,
      headers: Object.entries(headers),
      body,
      now: 1_700_000_000,
    });
  }

  // ------------------------------------------------------------------ line
  // VERIFY ONLY: @line/bot-sdk's validateSignature (LINE signs; the SDK has no
  // signing function). Base64 HMAC-SHA256 of the body with the channel secret.
  {
    const { validateSignature } = require("@line/bot-sdk");
    const SDK = pkg("@line/bot-sdk");
    const SECRET = "hookbox-sdk-line-secret";
    const body = '{"destination":"U0123456789abcdef0123456789abcdef","events":[{"type":"message","message":{"type":"text","id":"480000000000000001","text":"Hello"},"webhookEventId":"01HF6J2Q1Y7V9K3M5N8P0R2T4W","deliveryContext":{"isRedelivery":false},"timestamp":1700000000000,"source":{"type":"user","userId":"U4af4980629aabbccddeeff0011223344"},"replyToken":"b60d1f2a3c4e5f60718293a4b5c6d7e8","mode":"active"}]}';
    assertTamperKeepsJson(body);
    const signature = crypto.createHmac("sha256", SECRET).update(body).digest("base64");
    assert.equal(validateSignature(body, SECRET, signature), true);
    assert.equal(validateSignature(tamper(body), SECRET, signature), false);
    emit({
      preset: "line",
      sdk: SDK,
      function: "validateSignature(body, channelSecret, signature)",
      mode: "verify only; HMAC by node:crypto, validateSignature accepts it and refuses a changed body",
      secret: SECRET,
      headers: [["x-line-signature", signature]],
      body,
    });
  }

  // ---------------------------------------------------------------- pusher
  // SIGN: pusher's Token#sign (the SDK signs with the app secret; it is the
  // same function its webhook check uses), checked back with
  // Pusher#webhook({ headers, rawBody }).isValid(), which also needs
  // X-Pusher-Key to be the app key and a JSON content type.
  {
    const Pusher = require("pusher");
    const SDK = pkg("pusher");
    const [APP_ID, KEY, SECRET] = ["1700000", "hookboxsdkpusherkey0", "hookbox-sdk-pusher-secret"];
    const pusher = new Pusher({ appId: APP_ID, key: KEY, secret: SECRET, cluster: "mt1" });
    const body = '{"time_ms":1700000000000,"events":[{"name":"channel_occupied","channel":"presence-room"}]}';
    assertTamperKeepsJson(body);
    const signature = new Pusher.Token(KEY, SECRET).sign(body);
    const headers = {
      "x-pusher-key": KEY,
      "x-pusher-signature": signature,
      "content-type": "application/json",
    };
    assert.equal(pusher.webhook({ headers, rawBody: body }).isValid(), true);
    assert.equal(pusher.webhook({ headers, rawBody: tamper(body) }).isValid(), false);
    emit({
      preset: "pusher",
      sdk: SDK,
      function: "new Pusher.Token(key, secret).sign(body)",
      mode: "sign; Pusher#webhook({ headers, rawBody }).isValid() accepts it and refuses a changed body",
      secret: SECRET,
      headers: [
        ["X-Pusher-Key", KEY],
        ["X-Pusher-Signature", signature],
        ["Content-Type", "application/json"],
      ],
      body,
    });
  }

  // ----------------------------------------------------------- stream-chat
  // VERIFY ONLY: stream-chat's StreamChat#verifyWebhook (and the exported
  // CheckSignature); no signing function. Hex HMAC-SHA256 with the API secret.
  {
    const { StreamChat, CheckSignature } = require("stream-chat");
    const SDK = pkg("stream-chat");
    const [KEY, SECRET] = ["hookboxsdkkey", "hookbox-sdk-stream-chat-secret"];
    const client = new StreamChat(KEY, SECRET);
    const body = '{"type":"message.new","cid":"messaging:general","channel_type":"messaging","channel_id":"general","message":{"id":"msg-1700000000","text":"Hello","type":"regular","user":{"id":"alice"}},"user":{"id":"alice"},"created_at":"2023-11-14T22:13:20.000000Z"}';
    assertTamperKeepsJson(body);
    const signature = hmacHex("sha256", SECRET, body);
    assert.equal(client.verifyWebhook(body, signature), true);
    assert.equal(CheckSignature(body, SECRET, signature), true);
    assert.equal(client.verifyWebhook(tamper(body), signature), false);
    emit({
      preset: "stream-chat",
      sdk: SDK,
      function: "new StreamChat(key, secret).verifyWebhook(rawBody, signature)",
      mode: "verify only; HMAC by node:crypto, verifyWebhook accepts it and refuses a changed body",
      secret: SECRET,
      headers: [
        ["X-Webhook-Id", "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"],
        ["X-Webhook-Attempt", "1"],
        ["X-Api-Key", KEY],
        ["X-Signature", signature],
      ],
      body,
    });
  }

  // ------------------------------------------------------------ elevenlabs
  // VERIFY ONLY: @elevenlabs/elevenlabs-js's client.webhooks.constructEvent
  // (no signing function). "t=<seconds>,v0=" + hex HMAC-SHA256 of
  // "{t}.{body}" with the webhook secret; the SDK refuses a t older than
  // 30 min before Date.now() (fixed to the vector's time).
  {
    const { ElevenLabsClient } = require("@elevenlabs/elevenlabs-js");
    const SDK = pkg("@elevenlabs/elevenlabs-js");
    const SECRET = "hookbox-sdk-elevenlabs-secret";
    const client = new ElevenLabsClient({ apiKey: "hookbox-sdk-unused" });
    const t = "1700000000";
    const body = '{"type":"post_call_transcription","event_timestamp":1700000000,"data":{"agent_id":"agent_01hf6j2q1y7v9k3m5n8p0r2t4w","conversation_id":"conv_01hf6j2q1y7v9k3m5n8p0r2t4x","status":"done"}}';
    assertTamperKeepsJson(body);
    const header = `t=${t},v0=${hmacHex("sha256", SECRET, `${t}.${body}`)}`;
    await atClock(1_700_000_000_000, async () => {
      assert.equal((await client.webhooks.constructEvent(body, header, SECRET)).type, "post_call_transcription");
      await assert.rejects(client.webhooks.constructEvent(tamper(body), header, SECRET), /does not match/);
    });
    await atClock(1_700_001_801_000, async () => {
      await assert.rejects(client.webhooks.constructEvent(body, header, SECRET), /tolerance/);
    });
    emit({
      preset: "elevenlabs",
      sdk: SDK,
      function: "new ElevenLabsClient().webhooks.constructEvent(rawBody, sigHeader, secret)",
      mode: "verify only; HMAC by node:crypto, constructEvent accepts it at the vector's time, refuses a changed body and a clock 30 min 1 s later",
      secret: SECRET,
      headers: [["ElevenLabs-Signature", header]],
      body,
      now: 1_700_000_000,
    });
  }

  // ---------------------------------------------------------------- retell
  // SIGN: retell-sdk's Retell.sign (lib/webhook_auth.js; also exported as
  // `sign`), "v=<ms>,d=" + hex HMAC-SHA256 of body + ms with the API key, at
  // Date.now() (fixed); checked back with Retell.verify, which refuses a
  // timestamp more than 5 min from Date.now().
  {
    const { Retell } = require("retell-sdk");
    const SDK = pkg("retell-sdk");
    const API_KEY = "key_hookbox_sdk_retell_webhook";
    const body = '{"event":"call_ended","call":{"call_id":"Jabr9TXYYJHfvl6Syypi88rdAHYHmcq6","agent_id":"oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD","call_type":"phone_call","call_status":"ended","start_timestamp":1699999940000,"end_timestamp":1700000000000}}';
    assertTamperKeepsJson(body);
    const signature = await atClock(1_700_000_000_000, async () => {
      const signed = await Retell.sign(body, API_KEY);
      assert.equal(await Retell.verify(body, API_KEY, signed), true);
      assert.equal(await Retell.verify(tamper(body), API_KEY, signed), false);
      return signed;
    });
    assert.equal(signature, `v=1700000000000,d=${hmacHex("sha256", API_KEY, body + "1700000000000")}`);
    await atClock(1_700_000_301_000, async () => {
      assert.equal(await Retell.verify(body, API_KEY, signature), false);
    });
    emit({
      preset: "retell",
      sdk: SDK,
      function: "Retell.sign(body, apiKey)",
      mode: "sign; Retell.verify accepts it at the vector's time, refuses a changed body and a clock 301 s later",
      secret: API_KEY,
      headers: [["x-retell-signature", signature]],
      body,
      now: 1_700_000_000,
    });
  }
}
