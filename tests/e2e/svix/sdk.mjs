// Svix's official Node.js SDK (the `svix` package, unmodified) against
// hookbox's management API, as a team on Svix keeps its code and points the
// SDK at hookbox (docs/tenants.md, "The HTTP API"). Run in phases by
// tests/e2e/tests/svix_sdks.rs (the package is installed in
// tests/e2e/publish, whose package.json pins it):
//
//   node sdk.mjs setup   <server url> <token> <app uid> <receiver base url>
//   node sdk.mjs disable <server url> <token> <app uid> <endpoint uid>
//   node sdk.mjs enable  <server url> <token> <app uid> <endpoint uid>
//   node sdk.mjs publish <server url> <token> <app uid> <n>
//   node sdk.mjs attempts <server url> <token> <app uid> <message id>
//   node sdk.mjs recover <server url> <token> <app uid> <endpoint uid> <since, RFC 3339>
//   node sdk.mjs portal  <server url> <token> <app uid>
//   node sdk.mjs delete  <server url> <token> <app uid>
//
// Each phase prints one JSON document of what the SDK returned.

import assert from "node:assert/strict";
import { createRequire } from "node:module";

// resolved from tests/e2e/publish/node_modules
const require = createRequire(new URL("../publish/package.json", import.meta.url));
const { Svix, ApiException } = await import(require.resolve("svix"));

const CHOSEN = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ROTATED = "whsec_dGhpcyBpcyB0aGUgbmV4dCBzZWNyZXQga2V5IQ==";

async function setup(svix, appUid, receivers) {
  await svix.health.get();
  const app = await svix.application.create({
    name: `Acme (${appUid})`,
    uid: appUid,
    metadata: { plan: "pro" },
  });
  const same = await svix.application.getOrCreate({ name: "ignored", uid: appUid });
  assert.equal(same.id, app.id);
  assert.equal((await svix.application.get(appUid)).id, app.id);
  const renamed = await svix.application.patch(appUid, { name: `Acme Inc (${appUid})` });
  assert.equal(renamed.name, `Acme Inc (${appUid})`);
  const upserted = await svix.application.upsert(appUid, {
    name: renamed.name,
    uid: appUid,
    metadata: { plan: "gold" },
  });
  assert.deepEqual(upserted.metadata, { plan: "gold" });

  const ids = [];
  let iterator;
  for (;;) {
    const page = await svix.application.list({ limit: 1, iterator });
    ids.push(...page.data.map((a) => a.id));
    if (page.done) break;
    iterator = page.iterator;
  }
  assert.ok(ids.includes(app.id), `${app.id} listed`);

  try {
    await svix.eventType.create({ name: "order.paid", description: "An order was paid" });
  } catch (e) {
    // the other SDK's run made it already
    assert.ok(e instanceof ApiException && e.body.code === "event_type_exists", String(e));
  }

  const everything = await svix.endpoint.create(appUid, {
    url: `${receivers}/${appUid}/all`,
    uid: "all",
    description: "everything",
  });
  const orders = await svix.endpoint.create(appUid, {
    url: `${receivers}/${appUid}/orders`,
    uid: "orders",
    eventTypes: ["order.paid"],
    metadata: { team: "billing" },
    secret: CHOSEN,
  });
  assert.deepEqual(orders.eventTypes, ["order.paid"]);
  const listed = await svix.endpoint.list(appUid, { limit: 10 });
  assert.deepEqual(
    listed.data.map((e) => e.uid),
    ["all", "orders"],
  );
  assert.equal((await svix.endpoint.get(appUid, "orders")).id, orders.id);
  const updated = await svix.endpoint.upsert(appUid, "all", {
    url: `${receivers}/${appUid}/all`,
    uid: "all",
    description: "all events",
  });
  assert.equal(updated.description, "all events");
  const patched = await svix.endpoint.patch(appUid, "orders", { description: "paid orders" });
  assert.deepEqual(patched.eventTypes, ["order.paid"]);

  assert.equal((await svix.endpoint.getSecret(appUid, "orders")).key, CHOSEN);
  await svix.endpoint.rotateSecret(appUid, "orders", { key: ROTATED, gracePeriodSeconds: 3600 });
  assert.equal((await svix.endpoint.getSecret(appUid, "orders")).key, ROTATED);

  const errors = {};
  try {
    await svix.endpoint.create(appUid, { url: "ftp://files.example" });
  } catch (e) {
    errors.bad_url = e.body.detail.map((d) => d.loc);
  }
  try {
    await svix.application.get("nobody");
  } catch (e) {
    errors.missing = { status: e.code, ...e.body };
  }
  return {
    app: app.id,
    endpoints: { all: everything.id, orders: orders.id },
    secrets: {
      all: (await svix.endpoint.getSecret(appUid, "all")).key,
      orders: (await svix.endpoint.getSecret(appUid, "orders")).key,
    },
    errors,
  };
}

async function setDisabled(svix, appUid, endpointUid, disabled) {
  const out = await svix.endpoint.patch(appUid, endpointUid, { disabled });
  const again = await svix.endpoint.get(appUid, endpointUid);
  return { disabled: out.disabled, read_back: again.disabled };
}

async function publish(svix, appUid, n) {
  const out = await svix.message.create(appUid, {
    eventType: "order.paid",
    payload: { n },
    eventId: `order-${n}`,
  });
  // v2 SDKs leave payloads out unless asked
  const got = await svix.message.get(appUid, `order-${n}`, { withContent: true });
  assert.equal(got.id, out.id);
  assert.deepEqual(got.payload, { n });
  return { id: out.id };
}

async function attempts(svix, appUid, msgId) {
  const page = await svix.messageAttempt.listByMsg(appUid, msgId);
  return page.data
    .map((a) => [a.endpointId, Number(a.status), a.responseStatusCode])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

async function recover(svix, appUid, endpointUid, since) {
  const out = await svix.endpoint.recover(appUid, endpointUid, { since: new Date(since) });
  return { task: String(out.task), status: String(out.status) };
}

// a read-only portal link for an hour (docs/portal.md), then logged out
// with its own token, as a page's "log out" does through Svix's API
async function portal(svix, url, appUid) {
  const access = await svix.authentication.appPortalAccess(appUid, {
    expiry: 3600,
    readOnly: true,
  });
  assert.ok(access.url.endsWith(`/portal/#key=${access.token}`), access.url);
  await new Svix(access.token, { serverUrl: url }).authentication.logout();
  return { url: access.url, token: access.token };
}

async function remove(svix, appUid) {
  for (const e of (await svix.endpoint.list(appUid)).data) {
    await svix.endpoint.delete(appUid, e.id);
  }
  const left = (await svix.endpoint.list(appUid)).data.length;
  await svix.application.delete(appUid);
  let gone = false;
  try {
    await svix.application.get(appUid);
  } catch (e) {
    gone = e instanceof ApiException && e.code === 404;
  }
  return { endpoints_left: left, gone };
}

const [phase, url, token, appUid, extra, extra2] = process.argv.slice(2);
const svix = new Svix(token, { serverUrl: url });
let out;
if (phase === "setup") out = await setup(svix, appUid, extra);
else if (phase === "disable" || phase === "enable")
  out = await setDisabled(svix, appUid, extra, phase === "disable");
else if (phase === "publish") out = await publish(svix, appUid, Number(extra));
else if (phase === "attempts") out = await attempts(svix, appUid, extra);
else if (phase === "recover") out = await recover(svix, appUid, extra, extra2);
else if (phase === "portal") out = await portal(svix, url, appUid);
else if (phase === "delete") out = await remove(svix, appUid);
else throw new Error(`unknown phase ${phase}`);
console.log(JSON.stringify(out));
