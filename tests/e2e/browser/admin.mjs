// Headless-browser check of the admin page (see README.md).
//
//   node admin.mjs <base-url> <inbox-id> <screenshot.png> [<disabled-destination>]
//
// Opens <base-url>/admin in headless Chromium (/usr/bin/chromium, or $CHROMIUM),
// waits for the first refresh, checks that inbox row <inbox-id> is shown as
// quarantined, screenshots the page, clicks its Replay button, then waits (up
// to 20 s) until the row has left the attention tables and the processed count
// is at least 1, and screenshots again to <screenshot>-after.png. With
// <disabled-destination>: checks it is shown as disabled, clicks its Enable
// button, and waits until it is shown healthy.
// Success: prints one JSON line {"ok":true,...} and exits 0.
// Any failure: prints {"ok":false,"error":"..."} and exits 1.
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const started = Date.now();
const OVERALL_TIMEOUT_MS = 90_000;
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

let context = null;
let userDataDir = null;
let finished = false;

function cleanup() {
  if (userDataDir) {
    try { rmSync(userDataDir, { recursive: true, force: true }); } catch { /* best effort */ }
    userDataDir = null;
  }
}
function fail(message) {
  if (finished) return;
  finished = true;
  process.stdout.write(JSON.stringify({ ok: false, error: message }) + '\n');
  process.stderr.write(`admin.mjs: FAILED: ${message}\n`);
  const done = () => { cleanup(); process.exit(1); };
  if (context) context.close().then(done, done); else done();
  setTimeout(done, 5000).unref();
}
process.on('uncaughtException', e => fail(`uncaught: ${e && e.stack || e}`));
process.on('unhandledRejection', e => fail(`unhandled rejection: ${e && e.stack || e}`));
setTimeout(() => fail(`gave up after ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS).unref();

async function main() {
  const [baseArg, id, shot, destination] = process.argv.slice(2);
  if (!baseArg || !id || !shot || process.argv.length > 6) {
    throw new Error('usage: node admin.mjs <base-url> <inbox-id> <screenshot.png> [<disabled-destination>]');
  }
  const base = baseArg.replace(/\/+$/, '');
  const after = /\.png$/i.test(shot) ? shot.replace(/\.png$/i, '-after.png') : `${shot}-after.png`;

  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  try {
    accessSync(executablePath, constants.X_OK);
  } catch {
    throw new Error(`Chromium not found or not executable at ${executablePath} ` +
      '(install it with `apt-get install -y chromium`, or set CHROMIUM to its path)');
  }
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`cannot load playwright-core (run \`npm ci\` in tests/e2e/browser): ${e.message}`);
  }

  userDataDir = mkdtempSync(join(tmpdir(), 'hookbox-admin-chromium-'));
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 30_000,
      viewport: { width: 1360, height: 900 },
    });
  } catch (e) {
    throw new Error(`could not start Chromium at ${executablePath}: ${e.message.split('\n')[0]}`);
  }
  const page = context.pages()[0] ?? await context.newPage();
  const pageErrors = [];
  const consoleErrors = [];
  page.on('pageerror', e => pageErrors.push(String(e && e.message || e)));
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()); });

  const url = `${base}/admin`;
  const resp = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 15_000 })
    .catch(e => { throw new Error(`could not open ${url}: ${e.message.split('\n')[0]}`); });
  if (!resp || !resp.ok()) throw new Error(`GET ${url} answered ${resp ? resp.status() : 'nothing'}`);
  await page.waitForSelector('body[data-loaded="1"]', { state: 'attached', timeout: 15_000 })
    .catch(async () => {
      const line = await page.evaluate(() => document.getElementById('status')?.textContent ?? '').catch(() => '');
      throw new Error(`page never finished its first refresh (body[data-loaded="1"] within 15 s); status line: ${JSON.stringify(line)}`);
    });

  const rowSel = `[data-testid="inbox-row-${id}"]`;
  const row = page.locator(rowSel);
  await row.waitFor({ state: 'visible', timeout: 10_000 })
    .catch(() => { throw new Error(`row ${rowSel} not shown within 10 s of the first refresh`); });
  const status = await row.getAttribute('data-status');
  if (status !== 'quarantined') throw new Error(`row ${id} has data-status=${JSON.stringify(status)}, expected "quarantined"`);
  const processedBefore = await count(page, 'count-inbox-processed');

  await page.screenshot({ path: shot, fullPage: true });

  const [replay] = await Promise.all([
    page.waitForResponse(r => r.request().method() === 'POST' && r.url().includes(`/inbox/${encodeURIComponent(id)}/replay`),
      { timeout: 10_000 }),
    page.locator(`[data-testid="replay-${id}"]`).click({ timeout: 10_000 }),
  ]).catch(e => { throw new Error(`clicking replay-${id} did not POST the replay: ${e.message.split('\n')[0]}`); });
  const replayBody = await replay.json().catch(() => null);
  if (!replay.ok()) throw new Error(`replay answered HTTP ${replay.status()}: ${JSON.stringify(replayBody)}`);
  const outcome = replayBody && replayBody.outcome;
  if (outcome !== 'enqueued' && outcome !== 'pending_for_sweeper') {
    throw new Error(`replay outcome ${JSON.stringify(outcome)}, expected "enqueued" or "pending_for_sweeper"`);
  }

  await page.waitForFunction(({ sel }) => {
    const cell = document.querySelector('[data-testid="count-inbox-processed"]');
    const n = cell ? Number(cell.textContent.replace(/[^\d]/g, '')) : 0;
    return !document.querySelector(sel) && n >= 1;
  }, { sel: rowSel }, { timeout: 20_000, polling: 200 }).catch(async () => {
    const still = await page.locator(rowSel).count();
    const n = await count(page, 'count-inbox-processed');
    throw new Error(`within 20 s of Replay: row still shown=${still > 0}, count-inbox-processed=${n} (want row gone and >= 1)`);
  });
  const processedAfter = await count(page, 'count-inbox-processed');

  let enabled = null;
  if (destination) {
    const dSel = `[data-testid="destination-row-${destination}"]`;
    const dRow = page.locator(dSel);
    await dRow.waitFor({ state: 'visible', timeout: 10_000 })
      .catch(() => { throw new Error(`destination row ${dSel} not shown within 10 s`); });
    const state = await dRow.getAttribute('data-state');
    if (state !== 'disabled') throw new Error(`destination ${destination} has data-state=${JSON.stringify(state)}, expected "disabled"`);
    const [resp] = await Promise.all([
      page.waitForResponse(r => r.request().method() === 'POST'
        && r.url().includes(`/destinations/${encodeURIComponent(destination)}/enable`), { timeout: 10_000 }),
      page.locator(`[data-testid="enable-${destination}"]`).click({ timeout: 10_000 }),
    ]).catch(e => { throw new Error(`clicking enable-${destination} did not POST the enable: ${e.message.split('\n')[0]}`); });
    const body = await resp.json().catch(() => null);
    enabled = body && body.outcome;
    if (!resp.ok() || enabled !== 'enabled') throw new Error(`enable answered HTTP ${resp.status()}: ${JSON.stringify(body)}`);
    await page.waitForFunction(sel => document.querySelector(sel)?.getAttribute('data-state') === 'healthy',
      dSel, { timeout: 20_000, polling: 200 })
      .catch(() => { throw new Error(`destination ${destination} not shown healthy within 20 s of Enable`); });
  }

  await page.screenshot({ path: after, fullPage: true });

  if (await page.evaluate(() => window.__hookbox_xss !== undefined)) {
    throw new Error('untrusted text was interpreted as markup (window.__hookbox_xss was set)');
  }
  if (pageErrors.length) throw new Error(`page raised errors: ${pageErrors.join(' | ')}`);

  finished = true;
  await context.close();
  context = null;
  cleanup();
  process.stdout.write(JSON.stringify({
    ok: true, url, id, replay_outcome: outcome, enable_outcome: enabled, processed_before: processedBefore, processed_after: processedAfter,
    screenshots: [shot, after], console_errors: consoleErrors, ms: Date.now() - started,
  }) + '\n');
  process.exit(0);
}

async function count(page, testid) {
  const text = await page.locator(`[data-testid="${testid}"]`).textContent({ timeout: 2_000 }).catch(() => null);
  return text == null ? null : Number(text.replace(/[^\d]/g, ''));
}

main().catch(async e => {
  // Keep what the browser showed when it went wrong, next to the requested screenshot.
  const shot = process.argv[4];
  if (context && shot && !finished) {
    const page = context.pages()[0];
    const failShot = /\.png$/i.test(shot) ? shot.replace(/\.png$/i, '-failure.png') : `${shot}-failure.png`;
    if (page) await page.screenshot({ path: failShot, fullPage: true, timeout: 5_000 }).catch(() => {});
  }
  fail(e && e.message || String(e));
});
