// Headless-browser journey through the customer portal (see README.md).
//
//   node portal.mjs [--logout] <link-url> <receiver-url> <receiver-control-url> <screenshot-dir>
//   node portal.mjs --read-only <read-only-link-url> <screenshot-dir>
//   node portal.mjs --invalid <link-url> <screenshot-dir>
//
// The journey opens the link in headless Chromium (/usr/bin/chromium, or
// $CHROMIUM), adds an endpoint at <receiver-url> taking two event types, sends
// examples while the receiver answers 200 and then 500 (set through
// POST <receiver-control-url>?status=NNN), resends a failed delivery,
// recovers another, rotates and reveals the secret, disables and enables the
// endpoint; with --logout it then logs out (which revokes the link on hookbox)
// and checks the session is gone. --read-only checks that a read-only link shows no
// write control; --invalid that a bad link shows the "invalid, expired or
// revoked" message and nothing else. Every mode fails on a page error, a CSP
// violation or server text run as markup.
// Success: prints one JSON line {"ok":true,...} and exits 0.
// Any failure: prints {"ok":false,"error":"..."} and exits 1.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { firstLine, harness } from './common.mjs';

const h = harness('portal.mjs', 120_000);   // h.expectingErrors: set while probing refusals on purpose (their 401/403 show in the console)
const { started, pageErrors, cspViolations } = h;
const DELIVERY_TIMEOUT_MS = 30_000;
const USAGE = 'usage: node portal.mjs [--logout] <link-url> <receiver-url> <receiver-control-url> <screenshot-dir>\n' +
  '       node portal.mjs --read-only <read-only-link-url> <screenshot-dir>\n' +
  '       node portal.mjs --invalid <link-url> <screenshot-dir>';

let screenshotDir = null;

const tid = id => `[data-testid="${id}"]`;
const pad = n => String(n).padStart(2, '0');
const localInput = d => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;

// Opens a portal URL and waits for the page to settle: loaded, or one of its error screens.
async function open(page, url) {
  const resp = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 15_000 })
    .catch(e => { throw new Error(`could not open ${url}: ${firstLine(e)}`); });
  if (!resp || !resp.ok()) throw new Error(`GET ${url.split('#')[0]} answered ${resp ? resp.status() : 'nothing'}`);
  const csp = resp.headers()['content-security-policy'] ?? '';
  if (!/script-src 'self'/.test(csp) || /unsafe-(inline|eval)/.test(csp)) {
    throw new Error(`the page is not served with the strict Content-Security-Policy (got ${JSON.stringify(csp)})`);
  }
  await page.waitForFunction(() => document.body.dataset.loaded === '1'
    || ['session-error', 'load-error', 'logged-out'].some(id => document.getElementById(id) && !document.getElementById(id).hidden),
  null, { timeout: 15_000, polling: 100 })
    .catch(() => { throw new Error('the page neither loaded nor showed an error within 15 s'); });
  if (page.url().includes('key=')) throw new Error(`the key is still in the address bar: ${page.url()}`);
}
async function requireLoaded(page) {
  if (await page.locator(tid('session-error')).isVisible()) throw new Error('the page says the link is invalid, expired or revoked');
  if (await page.locator(tid('load-error')).isVisible()) {
    throw new Error(`the page could not load: ${(await page.locator(tid('load-error')).textContent()).trim()}`);
  }
}

// No error, no CSP violation, no server text turned into markup.
async function assertClean(page, stage) {
  const st = await page.evaluate(() => ({
    pwned: window.__pwned !== undefined,
    foreign: document.querySelectorAll('img, iframe, object, embed, frame, style, b, i:not(.legend i)').length,
    scripts: [...document.scripts].filter(s => !/\/portal\.js(?:[?#]|$)/.test(s.src)).length,
    handlers: [...document.querySelectorAll('*')].filter(el => [...el.attributes].some(a => /^on/i.test(a.name))).length,
  }));
  if (st.pwned) throw new Error(`${stage}: server text ran as markup (window.__pwned is set)`);
  if (st.foreign || st.scripts || st.handlers) {
    throw new Error(`${stage}: server text became markup (${st.foreign} foreign elements, ${st.scripts} extra scripts, ${st.handlers} on* attributes)`);
  }
  if (cspViolations.length) throw new Error(`${stage}: Content-Security-Policy violations: ${cspViolations.join(' | ')}`);
  if (pageErrors.length) throw new Error(`${stage}: the page raised errors: ${pageErrors.join(' | ')}`);
}

// Every string the API holds with markup in it shows literally where the page shows it.
async function assertLiteral(page, stage) {
  const problems = await page.evaluate(async () => {
    const out = [];
    const get = async path => {
      const r = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' } });
      if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
      return r.json();
    };
    const q = s => `"${String(s).slice(0, 80)}"`;
    const shown = el => el && el.checkVisibility();
    const endpoints = (await get('api/endpoints?limit=100')).data || [];
    for (const ep of endpoints) {
      const row = document.querySelector(`[data-testid="endpoint-row-${CSS.escape(ep.id)}"]`);
      if (!row) { out.push(`endpoint ${ep.id} is not listed`); continue; }
      for (const v of [ep.url, ep.description]) if (v && !row.textContent.includes(v)) out.push(`row ${ep.id} does not show ${q(v)}`);
    }
    const detail = document.querySelector('[data-testid="endpoint-detail"]');
    const sel = shown(detail) ? detail.getAttribute('data-endpoint-id') : null;
    const ep = endpoints.find(e => e.id === sel);
    if (ep) {
      const headers = document.querySelector('[data-testid="endpoint-headers"]')?.textContent ?? '';
      for (const n of ep.header_names || []) if (!headers.includes(n)) out.push(`header name ${q(n)} not shown`);
      const attempts = (await get(`api/endpoints/${encodeURIComponent(sel)}/attempts?limit=50`)).data || [];
      for (const a of attempts) {
        const row = document.querySelector(`[data-testid="attempt-row-${CSS.escape(a.id)}"]`);
        if (!row) continue;   // newer than the table
        for (const v of [a.response, a.error]) if (v && !row.textContent.includes(v)) out.push(`attempt ${a.id} does not show ${q(v)}`);
      }
    }
    const form = document.querySelector('[data-testid="add-endpoint-form"]');
    if (shown(form)) {
      for (const t of (await get('api/event-types')).data || []) {
        if (t.description && !form.textContent.includes(t.description)) out.push(`event type ${t.name}: description ${q(t.description)} not shown`);
      }
    }
    return out;
  });
  if (problems.length) throw new Error(`${stage}: text not shown literally: ${problems.join('; ')}`);
}

async function openEndpoint(page, id) {
  const detail = `${tid('endpoint-detail')}[data-endpoint-id="${id}"]`;
  if (!await page.locator(detail).isVisible()) await page.locator(tid(`open-${id}`)).click({ timeout: 10_000 });
  await page.locator(`${detail} ${tid('attempts')}[data-loaded-for="${id}"]`).waitFor({ state: 'attached', timeout: 10_000 })
    .catch(() => { throw new Error(`endpoint ${id}: its deliveries did not load within 10 s of opening it`); });
}

// Clicks a control and returns the API answer it caused (checked against the expected status).
async function clickFor(page, testid, method, pathEnd, status, what) {
  const [resp] = await Promise.all([
    page.waitForResponse(r => r.request().method() === method && new URL(r.url()).pathname.endsWith(pathEnd), { timeout: 10_000 }),
    page.locator(tid(testid)).click({ timeout: 10_000 }),
  ]).catch(e => { throw new Error(`${what}: clicking ${testid} did not ${method} …${pathEnd}: ${firstLine(e)}`); });
  const body = resp.status() === 204 ? null : await resp.json().catch(() => null);
  if (resp.status() !== status) throw new Error(`${what} answered HTTP ${resp.status()} (want ${status}): ${JSON.stringify(body)}`);
  return body;
}

async function attemptRows(page) {
  return page.$$eval('tr[data-testid^="attempt-row-"]', rows => rows.map(r => ({
    id: r.getAttribute('data-testid').slice('attempt-row-'.length), status: r.dataset.status,
    code: r.dataset.statusCode, message: r.dataset.messageId })));
}
// Waits for an attempt row matching {message, status, code}, not among `exclude`; returns its id.
async function waitAttempt(page, want, what) {
  const handle = await page.waitForFunction(({ message, status, code, exclude }) => {
    for (const r of document.querySelectorAll('tr[data-testid^="attempt-row-"]')) {
      const id = r.getAttribute('data-testid').slice('attempt-row-'.length);
      if (exclude.includes(id) || r.dataset.messageId !== message) continue;
      if (r.dataset.status === status && r.dataset.statusCode === String(code)) return id;
    }
    return null;
  }, { exclude: [], ...want }, { timeout: DELIVERY_TIMEOUT_MS, polling: 250 }).catch(async () => {
    const rows = (await attemptRows(page).catch(() => [])).slice(0, 8)
      .map(r => `${r.message || '-'} ${r.status} ${r.code || '-'}`).join(', ');
    throw new Error(`no ${what} within ${DELIVERY_TIMEOUT_MS / 1000} s (newest rows: ${rows || 'none'})`);
  });
  return handle.jsonValue();
}

async function setReceiver(control, status) {
  const u = new URL(control);
  u.searchParams.set('status', String(status));
  const r = await fetch(u, { method: 'POST', signal: AbortSignal.timeout(5000) })
    .catch(e => { throw new Error(`receiver control ${u}: ${e.message}`); });
  if (!r.ok) throw new Error(`receiver control ${u} answered HTTP ${r.status}`);
}

async function journey(page, [link, receiver, control], { logout }) {
  const shots = [];
  const shot = async name => {
    const p = join(screenshotDir, `portal-${name}.png`);
    await page.screenshot({ path: p, fullPage: true });
    shots.push(p);
  };
  await setReceiver(control, 200);
  await open(page, link);
  await requireLoaded(page);
  await assertClean(page, 'after loading');
  await assertLiteral(page, 'after loading');

  // Endpoints already there whose text carries markup: open each, it must show as text.
  const marked = await page.evaluate(async () => {
    const r = await fetch('api/endpoints?limit=100', { credentials: 'same-origin' });
    return ((await r.json()).data || []).filter(e => /</.test([e.url, e.description, ...(e.header_names || [])].join(''))).map(e => e.id);
  });
  for (const id of marked.slice(0, 3)) {
    await openEndpoint(page, id);
    await assertLiteral(page, `endpoint ${id}`);
    await assertClean(page, `endpoint ${id}`);
  }

  // Add an endpoint taking the first two non-deprecated event types of the catalog.
  const types = await page.$$eval('input[data-testid^="type-checkbox-"]',
    els => els.filter(e => e.dataset.deprecated !== 'true').map(e => e.value));
  if (types.length < 2) throw new Error(`the catalog offers ${types.length} non-deprecated event types, need 2`);
  const [t1, t2] = types;
  const description = `e2e journey ${new Date(started).toISOString()} <img src=x onerror="window.__pwned=1"> & <b>not bold</b>`;
  await page.locator(tid('add-endpoint-url')).fill(receiver);
  await page.locator(tid('add-endpoint-description')).fill(description);
  await page.locator(tid(`type-checkbox-${t1}`)).check();
  await page.locator(tid(`type-checkbox-${t2}`)).check();
  const ep = await clickFor(page, 'add-endpoint-submit', 'POST', '/api/endpoints', 201, 'adding the endpoint');
  const id = ep && ep.id;
  if (!id) throw new Error(`adding the endpoint answered no id: ${JSON.stringify(ep)}`);
  const enc = encodeURIComponent(id);
  const row = page.locator(tid(`endpoint-row-${id}`));
  await row.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => { throw new Error(`row endpoint-row-${id} not shown within 10 s`); });
  const chips = (await page.locator(`${tid(`endpoint-types-${id}`)} .chip`).allTextContents()).map(s => s.trim());
  if (chips.length !== 2 || !chips.includes(t1) || !chips.includes(t2)) {
    throw new Error(`row ${id} shows event types ${JSON.stringify(chips)}, want ${JSON.stringify([t1, t2])}`);
  }
  if (!(await row.textContent()).includes(description)) throw new Error(`row ${id} does not show its description literally`);
  await openEndpoint(page, id);
  await shot('list');

  const sendExample = async type => {
    await page.locator(tid('example-type')).selectOption(type);
    const r = await clickFor(page, 'example-submit', 'POST', `/api/endpoints/${enc}/example`, 202, `sending an example of ${type}`);
    if (!r || !r.message_id) throw new Error(`the example answered no message_id: ${JSON.stringify(r)}`);
    return r.message_id;
  };

  // 1. delivered
  const m1 = await sendExample(t1);
  await waitAttempt(page, { message: m1, status: 'success', code: 200 }, `successful attempt (200) of example ${m1}`);
  // 2. failing, then resent by hand
  await setReceiver(control, 500);
  const m2 = await sendExample(t1);
  const failed = await waitAttempt(page, { message: m2, status: 'failed', code: 500 }, `failed attempt (500) of example ${m2}`);
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart"]')?.getAttribute('data-failed')) >= 1,
    null, { timeout: 10_000, polling: 250 }).catch(() => { throw new Error('the chart shows no failed attempt within 10 s'); });
  await shot('deliveries');
  await setReceiver(control, 200);
  const seen = (await attemptRows(page)).map(r => r.id);
  await clickFor(page, `resend-${failed}`, 'POST', `/api/endpoints/${enc}/messages/${encodeURIComponent(m2)}/resend`, 202, 'Resend');
  await waitAttempt(page, { message: m2, status: 'success', code: 200, exclude: seen }, `new successful attempt (200) of ${m2} after Resend`);
  // 3. failing, then recovered
  await setReceiver(control, 500);
  const m3 = await sendExample(t2);
  await waitAttempt(page, { message: m3, status: 'failed', code: 500 }, `failed attempt (500) of example ${m3}`);
  // recovered while the receiver still fails (so its own retry, 5 s later on
  // hookbox, cannot deliver it first), then the receiver is back
  await page.locator(tid('recover-since')).fill(localInput(new Date(started - 120_000)));
  const rec = await clickFor(page, 'recover-submit', 'POST', `/api/endpoints/${enc}/recover`, 200, 'Recover');
  await setReceiver(control, 200);
  const outcome = page.locator(`${tid('recover-outcome')}[data-recovered]`);
  await outcome.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => { throw new Error('the recover outcome is not shown'); });
  const recovered = Number(await outcome.getAttribute('data-recovered'));
  const recText = await outcome.textContent();
  if (!(recovered >= 1) || recovered !== Number(rec && rec.recovered) || !recText.includes(`${recovered} `) || !/sent again/.test(recText)) {
    throw new Error(`Recover: shown ${JSON.stringify(recText)} (data-recovered=${recovered}) for ${JSON.stringify(rec)}, want >= 1 sent again`);
  }
  await waitAttempt(page, { message: m3, status: 'success', code: 200 }, `successful attempt (200) of ${m3} after Recover`);
  await shot('recovered');

  // 4. the secret
  const rot = await clickFor(page, 'rotate-secret', 'POST', `/api/endpoints/${enc}/secret/rotate`, 200, 'Rotate');
  if (rot && ('key' in rot || 'secret' in rot)) throw new Error('rotating the secret answered the secret itself');
  await page.waitForFunction(() => /valid until/.test(document.querySelector('[data-testid="secret-outcome"]')?.textContent ?? ''),
    null, { timeout: 5_000 }).catch(() => { throw new Error('no outcome shown after Rotate'); });
  const rev = await clickFor(page, 'reveal-secret', 'POST', `/api/endpoints/${enc}/secret/reveal`, 200, 'Reveal');
  if (!rev || !/^whsec_/.test(rev.key)) throw new Error(`Reveal answered ${JSON.stringify(rev)}`);
  await page.waitForFunction(key => document.querySelector('[data-testid="secret-value"]')?.textContent === key
    && document.querySelector('[data-testid="secret-value"]').checkVisibility(), rev.key, { timeout: 5_000 })
    .catch(() => { throw new Error('the revealed secret (whsec_…) is not shown'); });
  await shot('secret');
  await page.locator(tid('secret-hide')).click();
  if (await page.locator(tid('secret-value')).isVisible()) throw new Error('Hide left the secret on screen');

  // 5. disable, enable
  const rowState = async want => page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.getAttribute('data-disabled') === want,
    { sel: tid(`endpoint-row-${id}`), want }, { timeout: 10_000 })
    .catch(() => { throw new Error(`row ${id} not data-disabled="${want}" within 10 s`); });
  await clickFor(page, `disable-${id}`, 'POST', `/api/endpoints/${enc}/disable`, 200, 'Disable');
  await rowState('true');
  await clickFor(page, `enable-${id}`, 'POST', `/api/endpoints/${enc}/enable`, 200, 'Enable');
  await rowState('false');

  await assertLiteral(page, 'at the end');
  await assertClean(page, 'at the end');
  await shot('final');
  const result = { endpoint_id: id, types: [t1, t2], message_ids: [m1, m2, m3], recovered, screenshots: shots };
  if (!logout) return result;

  // 6. log out: the session is gone for good
  await clickFor(page, 'logout', 'DELETE', '/api/session', 204, 'Log out');
  await page.locator(tid('logged-out')).waitFor({ state: 'visible', timeout: 5_000 })
    .catch(() => { throw new Error('no logged-out message after Log out'); });
  h.expectingErrors = true;
  const after = await page.evaluate(async () => (await fetch('api/session', { credentials: 'same-origin' })).status);
  if (after !== 401) throw new Error(`after Log out, GET api/session answered ${after}, want 401`);
  await assertClean(page, 'after logging out');
  return { ...result, logged_out: true };
}

async function readOnly(page, [link]) {
  await open(page, link);
  await requireLoaded(page);
  if (!await page.locator(tid('read-only-badge')).isVisible()) throw new Error('no read-only badge on a read-only link');
  const writeControls = async where => {
    const found = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, form')]
      .filter(el => el.checkVisibility())
      .map(el => el.getAttribute('data-testid') || el.tagName.toLowerCase())
      .filter(t => !/^(logout|open-.+|attempts-filter|attempts-more)$/.test(t)));
    if (found.length) throw new Error(`read-only link, ${where}: write controls shown: ${found.join(', ')}`);
  };
  await writeControls('the list');
  const ids = await page.$$eval('tr[data-testid^="endpoint-row-"]', rows => rows.map(r => r.getAttribute('data-testid').slice('endpoint-row-'.length)));
  for (const id of ids.slice(0, 3)) {
    await openEndpoint(page, id);
    await writeControls(`endpoint ${id}`);
    await assertLiteral(page, `read-only, endpoint ${id}`);
  }
  // The server must refuse writes too, CSRF token or not.
  h.expectingErrors = true;
  const refused = await page.evaluate(async () => {
    const s = await (await fetch('api/session', { credentials: 'same-origin' })).json();
    const r = await fetch('api/endpoints', { method: 'POST', credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-hookbox-csrf': s.csrf },
      body: JSON.stringify({ url: 'https://example.invalid/read-only-probe', description: 'must be refused', filter_types: null }) });
    return r.status;
  });
  h.expectingErrors = false;
  if (refused !== 403) throw new Error(`read-only link: POST api/endpoints with the CSRF token answered ${refused}, want 403`);
  await assertClean(page, 'read-only');
  const p = join(screenshotDir, 'portal-read-only.png');
  await page.screenshot({ path: p, fullPage: true });
  return { read_only: true, endpoints: ids.length, screenshots: [p] };
}

async function invalid(page, [link]) {
  h.expectingErrors = true;          // the refused POST api/session shows as a console error
  await open(page, link);
  if (!await page.locator(tid('session-error')).isVisible()) throw new Error('a bad link did not show the session-error message');
  const text = (await page.locator(tid('session-error')).textContent()).replace(/\s+/g, ' ').trim();
  if (!/invalid, expired or revoked/.test(text)) throw new Error(`session-error says ${JSON.stringify(text)}`);
  const others = await page.evaluate(() => [...document.querySelectorAll('main > *, header button, [data-testid="read-only-badge"]')]
    .filter(el => el.id !== 'session-error' && el.checkVisibility()).map(el => el.id || el.getAttribute('data-testid') || el.tagName));
  if (others.length) throw new Error(`a bad link shows more than the message: ${others.join(', ')}`);
  await assertClean(page, 'bad link');
  const p = join(screenshotDir, 'portal-invalid.png');
  await page.screenshot({ path: p, fullPage: true });
  return { session_error: text, screenshots: [p] };
}

async function main() {
  const argv = process.argv.slice(2);
  const flags = [];
  while (argv[0] && argv[0].startsWith('--')) flags.push(argv.shift());
  const mode = flags.find(f => f === '--read-only' || f === '--invalid') ?? 'journey';
  const want = mode === 'journey' ? 4 : 2;
  const flagsOk = flags.every(f => (mode === 'journey' ? f === '--logout' : f === mode)) && new Set(flags).size === flags.length;
  if (!flagsOk || argv.length !== want || argv.some(a => !a)) throw new Error(USAGE);
  screenshotDir = argv[want - 1];
  for (const u of argv.slice(0, want - 1)) {
    try { new URL(u); } catch { throw new Error(`not a URL: ${u}\n${USAGE}`); }
  }
  mkdirSync(screenshotDir, { recursive: true });
  const page = await h.launch({
    profile: 'portal', pageError: firstLine,
    options: { timezoneId: Intl.DateTimeFormat().resolvedOptions().timeZone },   // datetime-local values mean the same here and there
  });
  const result = await ({ journey, '--read-only': readOnly, '--invalid': invalid })[mode](page, argv, { logout: flags.includes('--logout') });
  await h.succeed({ mode: mode.replace(/^--/, ''), ...result });
}

// When it goes wrong, keep what the browser showed.
h.run(main, () => screenshotDir && join(screenshotDir, 'portal-failure.png'));
