// Helpers shared by the family modules (business.mjs, developer.mjs,
// messaging.mjs, payments.mjs, standard.mjs) that generate.mjs runs: the
// package label, the body tampering, HMAC and Standard Webhooks signing,
// the fixed clock, and `emit`, which prints a vector and collects it in
// `vectors` for the summary line.

import crypto from "node:crypto";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

/** `require` for the CommonJS SDKs, resolved from this directory's node_modules. */
export const require = createRequire(import.meta.url);

/** "name@version" of an installed package, read from its package.json. */
export function pkg(name) {
  // Not require.resolve: some packages do not export their package.json.
  const path = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  const { version } = JSON.parse(readFileSync(path, "utf8"));
  return `${name}@${version}`;
}

/** The text with its first letter or digit at or after `at` changed (as
 * shared/tests/presets.rs `tampered` does: 9→0, z→a, Z→A, else +1). */
export function tamper(text, at = Math.floor(text.length / 2)) {
  const bytes = Buffer.from(text, "utf8");
  const order = [...Array(bytes.length).keys()].slice(at).concat([...Array(at).keys()]);
  const i = order.find((k) => /[A-Za-z0-9]/.test(String.fromCharCode(bytes[k])));
  const c = bytes[i];
  bytes[i] = c === 0x39 ? 0x30 : c === 0x7a ? 0x61 : c === 0x5a ? 0x41 : c + 1;
  return bytes.toString("utf8");
}

export const hmacHex = (algo, key, message) =>
  crypto.createHmac(algo, key).update(message).digest("hex");

/** Every vector emitted so far, in order (generate.mjs counts them). */
export const vectors = [];

export function emit(v) {
  vectors.push(v);
  console.log(`== ${v.preset}`);
  console.log(`   sdk:     ${v.sdk} ${v.function} (${v.mode})`);
  console.log(`   secret:  ${v.secret}`);
  if (v.url) console.log(`   url:     ${v.url}`);
  for (const [name, value] of v.headers) console.log(`   header:  ${name}: ${value}`);
  console.log(`   body:    ${v.body}`);
  if (v.now !== undefined) console.log(`   now:     ${v.now}`);
}

/** Runs fn with Date.now() fixed at ms (restored afterwards). */
export async function atClock(ms, fn) {
  const realNow = Date.now;
  try {
    Date.now = () => ms;
    return await fn();
  } finally {
    Date.now = realNow;
  }
}

/** The tampered body (shared/tests/presets.rs tampering) must stay valid
 * JSON, so an SDK (and the preset) refuses it for its signature only. */
export function assertTamperKeepsJson(body, at) {
  JSON.parse(tamper(body, at));
}

/** A Standard Webhooks secret: whsec_ + base64 of 32 fixed bytes. */
export const whsec = (label) =>
  "whsec_" + crypto.createHash("sha256").update(label).digest("base64");

/** Standard Webhooks "v1,<base64 HMAC-SHA256(base64-decoded secret, id.ts.body)>". */
export const standardWebhooksSign = (secret, id, timestamp, body) =>
  "v1," +
  crypto
    .createHmac("sha256", Buffer.from(secret.replace(/^whsec_/, ""), "base64"))
    .update(`${id}.${timestamp}.${body}`)
    .digest("base64");
