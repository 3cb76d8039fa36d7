// Generates (or, where the official SDK only verifies, confirms) hookbox
// preset test vectors with the providers' OFFICIAL SDK packages, pinned in
// package.json / package-lock.json. Every input is fixed (secret, body,
// timestamp): a re-run prints the same values, which
// shared/tests/presets/sdk.rs holds (`Source::Sdk`).
//
//   cd tools/presets/sdk && npm ci --ignore-scripts && npm run --silent vectors
//
// For each vector the script prints the SDK package@version and function,
// whether the SDK SIGNED (produced the value) or only VERIFIED it (then the
// value comes from Node's crypto and the script asserts that the SDK
// accepts it and refuses a one-byte-changed body, or header where the body
// is not authenticated), and the headers, body, URL and secret.
//
// Nothing here opens a network connection: the SDK functions used are pure
// computations over their arguments.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);

/** "name@version" of an installed package, read from its package.json. */
function pkg(name) {
  // Not require.resolve: some packages do not export their package.json.
  const path = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  const { version } = JSON.parse(readFileSync(path, "utf8"));
  return `${name}@${version}`;
}

/** The text with its first letter or digit at or after `at` changed (as
 * shared/tests/presets.rs `tampered` does: 9→0, z→a, Z→A, else +1). */
function tamper(text, at = Math.floor(text.length / 2)) {
  const bytes = Buffer.from(text, "utf8");
  const order = [...Array(bytes.length).keys()].slice(at).concat([...Array(at).keys()]);
  const i = order.find((k) => /[A-Za-z0-9]/.test(String.fromCharCode(bytes[k])));
  const c = bytes[i];
  bytes[i] = c === 0x39 ? 0x30 : c === 0x7a ? 0x61 : c === 0x5a ? 0x41 : c + 1;
  return bytes.toString("utf8");
}

const hmacHex = (algo, key, message) =>
  crypto.createHmac(algo, key).update(message).digest("hex");

const vectors = [];
function emit(v) {
  vectors.push(v);
  console.log(`== ${v.preset}`);
  console.log(`   sdk:     ${v.sdk} ${v.function} (${v.mode})`);
  console.log(`   secret:  ${v.secret}`);
  if (v.url) console.log(`   url:     ${v.url}`);
  for (const [name, value] of v.headers) console.log(`   header:  ${name}: ${value}`);
  console.log(`   body:    ${v.body}`);
  if (v.now !== undefined) console.log(`   now:     ${v.now}`);
}

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

// ---------------------------------------------------------------- linear
// VERIFY ONLY: @linear/sdk's LinearWebhookClient.verify (no signing
// function). It checks the body's webhookTimestamp against Date.now()
// within 60 s, so the clock is fixed to the vector's time while it runs.
{
  const { LinearWebhookClient } = await import("@linear/sdk/webhooks");
  const SDK = pkg("@linear/sdk");
  const SECRET = "hookbox-sdk-linear-secret";
  const body = '{"action":"create","type":"Issue","data":{"id":"9cfb482a-81e3-4154-b5b9-2c805e70a02d","title":"SDK vector"},"webhookTimestamp":1700000000000}';
  const signature = hmacHex("sha256", SECRET, body);
  const realNow = Date.now;
  try {
    Date.now = () => 1_700_000_000_000;
    const client = new LinearWebhookClient(SECRET);
    assert.equal(client.verify(Buffer.from(body), signature), true);
    assert.throws(() => client.verify(Buffer.from(tamper(body, body.indexOf("SDK vector"))), signature));
    Date.now = () => 1_700_000_061_000;
    assert.throws(() => client.verify(Buffer.from(body), signature), /timestamp/);
  } finally {
    Date.now = realNow;
  }
  emit({
    preset: "linear",
    sdk: SDK,
    function: "LinearWebhookClient#verify(rawBody, signature) (@linear/sdk/webhooks)",
    mode: "verify only; HMAC by node:crypto, verify accepts it at the body's webhookTimestamp, refuses a changed body and a clock 61 s later",
    secret: SECRET,
    headers: [
      ["Linear-Signature", signature],
      ["Linear-Delivery", "6b5e1e2c-3c4d-4e5f-8a9b-0c1d2e3f4a5b"],
      ["Linear-Event", "Issue"],
    ],
    body,
    now: 1_700_000_000,
  });
}

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

console.log(`\n${vectors.length} vectors from ${new Set(vectors.map((v) => v.preset)).size} presets; every SDK check passed.`);
