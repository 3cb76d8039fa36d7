// SDK vectors for the developer family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/developer.rs): linear.
// Each block runs the provider's official SDK, asserts its accept and
// refuse cases and calls `emit`. generate.mjs runs this module's run(); the
// helpers are lib.mjs's.

import assert from "node:assert/strict";
import { require, pkg, tamper, hmacHex, emit } from "./lib.mjs";

export async function run() {
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
}
