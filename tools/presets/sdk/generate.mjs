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
// This file is the entry point; the blocks live in one module per family
// of hookbox's preset catalog (shared/src/signature/presets/catalog/*.rs):
// business.mjs, developer.mjs, messaging.mjs, payments.mjs, standard.mjs
// and telephony.mjs, each exporting `run()`, which generate.mjs runs in that
// order. Their shared helpers (pkg, tamper, hmacHex, emit, atClock, ...)
// are in lib.mjs. A failed check throws, and the script exits non-zero.
//
// Nothing here opens a network connection: the SDK functions used are pure
// computations over their arguments.

import { vectors } from "./lib.mjs";
import * as business from "./business.mjs";
import * as developer from "./developer.mjs";
import * as messaging from "./messaging.mjs";
import * as payments from "./payments.mjs";
import * as standard from "./standard.mjs";
import * as telephony from "./telephony.mjs";

for (const family of [business, developer, messaging, payments, standard, telephony]) {
  await family.run();
}

console.log(`\n${vectors.length} vectors from ${new Set(vectors.map((v) => v.preset)).size} presets; every SDK check passed.`);
