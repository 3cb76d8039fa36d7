// Headless-browser check of the admin page (see README.md).
//
//   node admin.mjs <base-url> <inbox-id> <screenshot.png> [<disabled-destination>]
//
// Opens <base-url>/admin in headless Chromium (/usr/bin/chromium, or $CHROMIUM)
// -- or <base-url> as is when it is an operator link (holds "#key=") --,
// waits for the session and the first refresh, checks the Tenants card shows
// rows when the API has any, checks that inbox row <inbox-id> is shown as
// quarantined, screenshots the page, clicks its Replay button, then waits (up
// to 20 s) until the row has left the attention tables and the processed count
// is at least 1, and screenshots again to <screenshot>-after.png. With
// <disabled-destination>: checks it is shown as disabled, clicks its Enable
// button, and waits until it is shown healthy. Throughout, it fails on a page
// error, a Content-Security-Policy violation, or server text run as markup.
// Success: prints one JSON line {"ok":true,...} and exits 0.
// Any failure: prints {"ok":false,"error":"..."} and exits 1.
import { harness } from './common.mjs';

const h = harness('admin.mjs', 90_000);
const { pageErrors, cspViolations } = h;

async function main() {
  const [baseArg, id, shot, destination] = process.argv.slice(2);
  if (!baseArg || !id || !shot || process.argv.length > 6) {
    throw new Error('usage: node admin.mjs <base-url> <inbox-id> <screenshot.png> [<disabled-destination>]');
  }
  const isLink = baseArg.includes('#key=');
  const url = isLink ? baseArg : `${baseArg.replace(/\/+$/, '')}/admin`;
  const shownUrl = url.replace(/#key=.*$/, '#key=…');   // never print the key
  const after = /\.png$/i.test(shot) ? shot.replace(/\.png$/i, '-after.png') : `${shot}-after.png`;

  const page = await h.launch({ profile: 'admin' });

  const resp = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 15_000 })
    .catch(e => { throw new Error(`could not open ${shownUrl}: ${e.message.split('\n')[0].replaceAll(url, shownUrl)}`); });
  if (!resp || !resp.ok()) throw new Error(`GET ${shownUrl} answered ${resp ? resp.status() : 'nothing'}`);
  const csp = resp.headers()['content-security-policy'] ?? null;
  if (csp != null && (!/script-src 'self'/.test(csp) || /unsafe-(inline|eval)/.test(csp))) {
    throw new Error(`the page's Content-Security-Policy is not the strict one: ${JSON.stringify(csp)}`);
  }
  await page.waitForFunction(() => document.body.dataset.loaded === '1'
    || (document.getElementById('session-error') && !document.getElementById('session-error').hidden),
  null, { timeout: 15_000, polling: 100 })
    .catch(async () => {
      const line = await page.evaluate(() => document.getElementById('status')?.textContent ?? '').catch(() => '');
      throw new Error(`page never finished its first refresh (body[data-loaded="1"] within 15 s); status line: ${JSON.stringify(line)}`);
    });
  if (await page.locator('[data-testid="session-error"]').isVisible()) {
    throw new Error(`the page refused the session: ${JSON.stringify((await page.locator('[data-testid="session-error"]').textContent()).replace(/\s+/g, ' ').trim())}`);
  }
  if (page.url().includes('key=')) throw new Error('the operator key is still in the address bar after the session was opened');
  const operator = await page.locator('[data-testid="session-operator"]').textContent({ timeout: 2_000 }).catch(() => null);
  if (!operator) throw new Error('the header does not show the operator (session-operator is empty)');
  await assertClean(page, 'after the first refresh');

  // Tenants: when the API lists any, the card shows them (names as text).
  const listed = await page.evaluate(async () => {
    const res = await fetch('api/tenants?limit=50', { credentials: 'same-origin', headers: { accept: 'application/json' } });
    const body = await res.json().catch(() => null);
    return { status: res.status, data: body && Array.isArray(body.data) ? body.data.map(t => ({ id: t.id, name: t.name })) : null };
  });
  if (listed.status !== 200 || !listed.data) throw new Error(`GET api/tenants answered HTTP ${listed.status}, not a page of tenants`);
  let tenantsShown = 0;
  if (listed.data.length) {
    await page.waitForFunction(() => {
      const n = Number(document.querySelector('[data-testid="tenants-count"]')?.textContent.replace(/[^\d]/g, '') || 0);
      return n >= 1 && document.querySelector('[data-testid^="tenant-row-"]');
    }, null, { timeout: 10_000, polling: 200 })
      .catch(() => { throw new Error(`the API lists ${listed.data.length} tenant(s) but the Tenants card shows none within 10 s`); });
    tenantsShown = await count(page, 'tenants-count');
    const wrong = await page.evaluate(rows => rows.filter(t => {
      const tr = document.querySelector(`[data-testid="tenant-row-${CSS.escape(t.id)}"]`);
      return tr && tr.cells[0].textContent !== (t.name ?? '—');
    }).map(t => t.id), listed.data);
    if (wrong.length) throw new Error(`tenant names not shown literally: ${wrong.join(', ')}`);
  }

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

  await assertClean(page, 'at the end');
  const history = await page.locator('[data-testid="chart-inbox"]').getAttribute('data-history');

  await h.succeed({
    url: shownUrl, link: isLink, operator, csp: csp != null, tenants: tenantsShown, history, id, replay_outcome: outcome, enable_outcome: enabled, processed_before: processedBefore, processed_after: processedAfter,
    screenshots: [shot, after],
  });
}

// No JavaScript error, no CSP violation, no server text turned into markup.
async function assertClean(page, stage) {
  const st = await page.evaluate(() => ({
    pwned: window.__pwned !== undefined || window.__hookbox_xss !== undefined,
    foreign: document.querySelectorAll('img, iframe, object, embed, frame, style').length,
    scripts: [...document.scripts].filter(s => !/\/admin\.js(?:[?#]|$)/.test(s.src)).length,
    handlers: [...document.querySelectorAll('*')].filter(el => [...el.attributes].some(a => /^on/i.test(a.name))).length,
  }));
  if (st.pwned) throw new Error(`${stage}: untrusted text ran as markup (window.__pwned or window.__hookbox_xss is set)`);
  if (st.foreign || st.scripts || st.handlers) {
    throw new Error(`${stage}: untrusted text became markup (${st.foreign} foreign elements, ${st.scripts} extra scripts, ${st.handlers} on* attributes)`);
  }
  if (cspViolations.length) throw new Error(`${stage}: Content-Security-Policy violations: ${cspViolations.join(' | ')}`);
  if (pageErrors.length) throw new Error(`${stage}: page raised errors: ${pageErrors.join(' | ')}`);
}

async function count(page, testid) {
  const text = await page.locator(`[data-testid="${testid}"]`).textContent({ timeout: 2_000 }).catch(() => null);
  return text == null ? null : Number(text.replace(/[^\d]/g, ''));
}

// When it goes wrong, keep what the browser showed next to the requested screenshot.
h.run(main, () => {
  const shot = process.argv[4];
  return shot && (/\.png$/i.test(shot) ? shot.replace(/\.png$/i, '-failure.png') : `${shot}-failure.png`);
});
