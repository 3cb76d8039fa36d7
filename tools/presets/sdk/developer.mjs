// SDK vectors for the developer family of hookbox's preset catalog
// (shared/src/signature/presets/catalog/developer.rs): linear and workos.
// Each block runs the provider's official SDK, asserts its accept and
// refuse cases and calls `emit`. generate.mjs runs this module's run(); the
// helpers are lib.mjs's.

import assert from "node:assert/strict";
import { require, pkg, tamper, hmacHex, emit, atClock, assertTamperKeepsJson } from "./lib.mjs";

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

  // ---------------------------------------------------------------- workos
  // SIGN: @workos-inc/node's workos.webhooks.computeSignature(timestamp,
  // payload, secret), hex HMAC-SHA256 of "{t}.{JSON.stringify(payload)}"
  // (so the body is exactly JSON.stringify of the parsed payload); checked
  // back with workos.webhooks.constructEvent, which refuses a t older than
  // 180 s before Date.now() (fixed). WorkOS sends "t=<ms>, v1=<hex>".
  {
    const { WorkOS } = require("@workos-inc/node");
    const SDK = pkg("@workos-inc/node");
    const SECRET = "hookbox-sdk-workos-secret";
    const workos = new WorkOS("sk_test_hookbox_sdk_unused", { clientId: "client_hookbox_sdk_unused" });
    const t = "1700000000000";
    const body = '{"id":"event_01HF6J2Q1Y7V9K3M5N8P0R2T4W","event":"user.created","data":{"object":"user","id":"user_01HF6J2Q1Y7V9K3M5N8P0R2T4X","email":"sdk@example.com","first_name":"Sdk","last_name":"Vector","email_verified":true,"created_at":"2023-11-14T22:13:20.000Z","updated_at":"2023-11-14T22:13:20.000Z"},"created_at":"2023-11-14T22:13:20.000Z"}';
    const payload = JSON.parse(body);
    assert.equal(JSON.stringify(payload), body);
    assertTamperKeepsJson(body);
    const header = `t=${t}, v1=${await workos.webhooks.computeSignature(t, payload, SECRET)}`;
    assert.equal(header, `t=${t}, v1=${hmacHex("sha256", SECRET, `${t}.${body}`)}`);
    await atClock(1_700_000_000_000, async () => {
      assert.equal((await workos.webhooks.constructEvent({ payload, sigHeader: header, secret: SECRET })).event, "user.created");
      await assert.rejects(
        workos.webhooks.constructEvent({ payload: JSON.parse(tamper(body)), sigHeader: header, secret: SECRET }),
        /does not match/,
      );
    });
    await atClock(1_700_000_181_000, async () => {
      await assert.rejects(workos.webhooks.constructEvent({ payload, sigHeader: header, secret: SECRET }), /tolerance/);
    });
    emit({
      preset: "workos",
      sdk: SDK,
      function: "workos.webhooks.computeSignature(timestamp, payload, secret)",
      mode: "sign; workos.webhooks.constructEvent accepts it at the vector's time, refuses a changed body and a clock 181 s later",
      secret: SECRET,
      headers: [["WorkOS-Signature", header]],
      body,
      now: 1_700_000_000,
    });
  }
}
