// In-memory mock of the operator page's API (see README.md), for developing
// and testing shared/admin/ without Rust.
//
//   node mock-server.mjs [--port N] [--prefix /Prod] [--trusted] [--no-history] [--tenants-page N]
//
// Listens on 127.0.0.1 (port 0 = any free port unless --port) and prints one
// JSON line: {"url","prefix","link","invalid_link","quarantined_id","disabled_destination"}.
// Serves the page at <prefix>/admin/ (<prefix>/admin redirects there), its
// three files read from shared/admin/ on every request (edits show on reload),
// with the strict Content-Security-Policy, and the API under
// <prefix>/admin/api/. POST api/session {"key"} with the printed link's key
// answers the session and sets an HttpOnly SameSite=Strict cookie
// (hookbox_admin); every other call needs that cookie (401 {"code","detail"}
// without), and every POST its X-Hookbox-Csrf (403 {"code":"csrf"}). With
// --trusted a call without a cookie is let in, as the local stack does for
// loopback: GET api/session answers {"operator":"local","expires_at":null,"csrf":null}.
// --no-history: stats carry an empty history (as the deployed function's do).
// --tenants-page N: at most N tenants a page (to see "Load more").
// Replaying the quarantined row moves it to "pending", then to "processed"
// about a second later, as the real processor would. Stops on SIGTERM / SIGINT.
import { randomUUID } from 'node:crypto';
import { SECURITY, arg, cookies, hex, mockArgs, pageAssets, readBody, responder, serve } from './common.mjs';

const ASSETS = pageAssets('admin');
const COOKIE = 'hookbox_admin';
const SESSION_MS = 8 * 3600_000;
const INBOX_STATUSES = ['pending', 'processing', 'deferred', 'processed', 'quarantined', 'dead'];
const OUTBOX_STATUSES = ['pending', 'delivered', 'dead'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROCESS_DELAY_MS = 1000;

const { port, prefix } = mockArgs();
const trusted = process.argv.includes('--trusted');
const noHistory = process.argv.includes('--no-history');
const tenantsPage = Number(arg('--tenants-page') ?? 500);
const BASE = `${prefix}/admin/`;
const KEY = `hbp_${hex(32)}`;
const sessions = new Map();      // cookie value -> {operator, csrf, expires}

const now = Date.now();
const ago = s => new Date(now - s * 1000).toISOString();
const inbox = [];
const outbox = [];
function addInbox(status, fields = {}) {
  const row = {
    id: randomUUID(), partner: 'demo', event_id: `evt_${inbox.length + 1}`, event_type: 'order.created',
    status, attempts: 1, received_at: ago(600 - inbox.length * 30), last_error: null, ...fields,
  };
  inbox.push(row);
  return row;
}
const quarantined = addInbox('quarantined', {
  event_id: 'evt_quarantined_1', event_type: 'order.paid', attempts: 1,
  last_error: 'handler rejected the payload: missing field `amount` at line 1 column 42',
});
// Untrusted text must show as text: if the page ever used it as markup, this sets window.__hookbox_xss.
addInbox('dead', {
  partner: 'stripe', event_id: 'evt_dead_<b>bold</b>', event_type: null, attempts: 8,
  last_error: '<img src=x onerror="window.__hookbox_xss=1"><script>window.__hookbox_xss=1</script> & timeout after 8 attempts',
});
addInbox('deferred', { partner: 'shopify', event_id: 'evt_deferred_1', event_type: 'order.updated', attempts: 0,
  last_error: 'waiting for earlier event evt_41 of ordering key order_17' });
addInbox('pending', { event_id: 'evt_pending_1', received_at: ago(42) });
outbox.push({
  id: randomUUID(), destination: 'https://partner.example/hooks', event_type: 'invoice.sent', aggregate_id: 'inv_1001',
  status: 'dead', attempts: 12, last_status_code: 503, last_error: 'HTTP 503 Service Unavailable', created_at: ago(3600),
});
outbox.push({
  id: randomUUID(), destination: 'https://partner.example/hooks', event_type: 'invoice.paid', aggregate_id: 'inv_1002',
  status: 'pending', attempts: 1, last_status_code: null, last_error: null, created_at: ago(20),
});
let dlq = 2;   // messages sitting in the SQS dead-letter queue
const destinations = [
  { name: 'crm', state: 'healthy', consecutive_failures: 0, failing_since: null, open_until: null,
    disabled_at: null, disabled_reason: null, pending: 1 },
  { name: 'legacy-erp', state: 'disabled', consecutive_failures: 412, failing_since: ago(5 * 86400),
    open_until: ago(-60), disabled_at: ago(600), disabled_reason: 'failing continuously since 2026-11-26 08:00:00 UTC (412 failed attempts in a row)',
    pending: 1830 },
];

function counts(rows, statuses) {
  const c = Object.fromEntries(statuses.map(s => [s, 0]));
  for (const r of rows) c[r.status] += 1;
  return c;
}
function oldestPending(rows) {
  const times = rows.filter(r => r.status === 'pending').map(r => Date.parse(r.received_at ?? r.created_at));
  return times.length ? Math.round((Date.now() - Math.min(...times)) / 1000) : null;
}
// History: 60 synthetic samples (5 minutes) ending at the current counts, then a real sample every 5 s.
const history = [];
function sample(at = new Date()) {
  history.push({ at: at.toISOString().replace(/\.\d+Z$/, 'Z'), inbox: counts(inbox, INBOX_STATUSES), outbox: counts(outbox, OUTBOX_STATUSES) });
  if (history.length > 120) history.shift();
}
for (let i = 60; i >= 1; i--) {
  sample(new Date(now - i * 5000));
  const h = history[history.length - 1];
  const wave = Math.round((6 + 5 * Math.sin(i / 6)) * Math.min(1, (i - 1) / 12));   // tapers to the live counts
  h.inbox.pending += wave; h.inbox.processing += i % 7 === 0 ? 2 : 0;
  h.outbox.pending += Math.round((3 + 3 * Math.cos(i / 5)) * Math.min(1, (i - 1) / 12));
  if (i > 40) { h.inbox.quarantined -= 1; h.inbox.dead -= 1; }
}
sample();
const sampler = setInterval(() => sample(), 5000);

// Tenants: one with markup in its name (must show as text), one with an unhealthy endpoint, one disabled.
const tenants = [
  { id: 'app_2fKq8M1xVw3nYc', uid: 'acme', name: 'Acme Corp', disabled: false, endpoints: 3, unhealthy_endpoints: 1 },
  { id: 'app_7hTz0Qp4LmR9sd', uid: null, name: 'Globex <img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script> & <b>Co</b>',
    disabled: false, endpoints: 1, unhealthy_endpoints: 0 },
  { id: 'app_9cWe5Nb2XkJ1ty', uid: 'initech', name: 'Initech', disabled: true, endpoints: 0, unhealthy_endpoints: 0 },
];

// ---- HTTP plumbing ----
const { send, problem } = responder(SECURITY);
const sessionDoc = s => ({ operator: s.operator, expires_at: s.expires == null ? null : new Date(s.expires).toISOString(), csrf: s.csrf });
const LOCAL = { operator: 'local', expires: null, csrf: null };

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const path = url.pathname;
  if (path === `${prefix}/admin`) {
    res.writeHead(301, { location: `admin/${url.search}`, 'cache-control': 'no-store' });
    return res.end();
  }
  if (!path.startsWith(BASE)) return send(res, 404, { error: `not found: ${path}` });
  const rest = path.slice(BASE.length);
  if (rest in ASSETS.files) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'GET only' });
    return ASSETS.serve(req, res, rest);
  }
  if (!rest.startsWith('api/')) return send(res, 404, { error: `not found: ${path}` });
  const route = rest.slice('api/'.length);

  let body = {};
  if (req.method === 'POST') {
    const text = await readBody(req);
    if (text) {
      try { body = JSON.parse(text); } catch { return problem(res, 400, 'bad_request', 'the body is not JSON'); }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return problem(res, 400, 'bad_request', 'the body must be a JSON object');
    }
  }
  if (route === 'session' && req.method === 'POST') {
    if (body.key !== KEY) return problem(res, 401, 'unauthorized', 'this operator link is invalid, expired or revoked');
    const sid = hex(24);
    const s = { operator: 'ops@example.com', csrf: hex(16), expires: Date.now() + SESSION_MS };
    sessions.set(sid, s);
    return send(res, 200, sessionDoc(s),
      { 'set-cookie': `${COOKIE}=${sid}; Path=${BASE}; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MS / 1000}` });
  }
  const sid = cookies(req)[COOKIE];
  let s = sid && sessions.get(sid);
  if (s && s.expires < Date.now()) s = null;
  if (!s && trusted) s = LOCAL;
  if (!s) return problem(res, 401, 'unauthorized', 'no operator session: open an operator link');
  if (req.method === 'POST' && s.csrf != null && req.headers['x-hookbox-csrf'] !== s.csrf) {
    return problem(res, 403, 'csrf', 'missing or wrong X-Hookbox-Csrf header');
  }
  if (route === 'session') {
    if (req.method === 'GET') return send(res, 200, sessionDoc(s));
    return problem(res, 405, 'method_not_allowed', `${req.method} api/session`);
  }

  const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 50) || 50, 1), 500);
  const status = url.searchParams.get('status');

  if (req.method === 'GET' && route === 'stats') {
    return send(res, 200, {
      inbox: counts(inbox, INBOX_STATUSES), outbox: counts(outbox, OUTBOX_STATUSES),
      oldest_pending_seconds: { inbox: oldestPending(inbox), outbox: oldestPending(outbox) }, history: noHistory ? [] : history,
    });
  }
  if (req.method === 'GET' && route === 'tenants') {
    const after = url.searchParams.get('after');
    let start = 0;
    if (after) { const i = tenants.findIndex(t => t.id === after); start = i < 0 ? tenants.length : i + 1; }
    const data = tenants.slice(start, start + Math.min(limit, tenantsPage));
    const done = start + data.length >= tenants.length;
    return send(res, 200, { data, iterator: data.length ? data[data.length - 1].id : null, done });
  }
  if (req.method === 'GET' && route === 'inbox') {
    if (!['quarantined', 'dead', 'deferred'].includes(status)) return send(res, 400, { error: `bad status: ${status}` });
    return send(res, 200, { rows: inbox.filter(r => r.status === status).slice(0, limit) });
  }
  if (req.method === 'GET' && route === 'outbox') {
    if (status !== 'dead') return send(res, 400, { error: `bad status: ${status}` });
    return send(res, 200, { rows: outbox.filter(r => r.status === status).slice(0, limit) });
  }
  if (req.method === 'GET' && route === 'destinations') return send(res, 200, { rows: destinations });
  const e = route.match(/^destinations\/([^/]+)\/enable$/);
  if (req.method === 'POST' && e) {
    const name = decodeURIComponent(e[1]);
    const d = destinations.find(x => x.name === name);
    if (!d) return send(res, 200, { name, outcome: 'missing' });
    Object.assign(d, { state: 'healthy', consecutive_failures: 0, failing_since: null, open_until: null,
      disabled_at: null, disabled_reason: null });
    return send(res, 200, { name, outcome: 'enabled' });
  }
  if (req.method === 'POST' && route === 'dlq/redrive') {
    const moved = dlq; dlq = 0;
    return send(res, 200, { moved });
  }
  const m = route.match(/^(inbox|outbox)\/([^/]+)\/(replay|retry)$/);
  if (req.method === 'POST' && m && (m[1] === 'inbox') === (m[3] === 'replay')) {
    const id = decodeURIComponent(m[2]);
    if (!UUID.test(id)) return send(res, 400, { error: `not a uuid: ${id}` });
    if (m[1] === 'inbox') {
      const row = inbox.find(r => r.id === id);
      if (!row) return send(res, 200, { id, outcome: 'missing' });
      if (!['quarantined', 'dead'].includes(row.status)) return send(res, 200, { id, outcome: 'not_replayable' });
      row.status = 'pending';
      setTimeout(() => { row.status = 'processed'; row.attempts += 1; row.last_error = null; }, PROCESS_DELAY_MS);
      return send(res, 200, { id, outcome: 'enqueued' });
    }
    const row = outbox.find(r => r.id === id);
    if (!row) return send(res, 200, { id, outcome: 'missing' });
    if (row.status !== 'dead') return send(res, 200, { id, outcome: 'not_retryable' });
    row.status = 'pending';
    setTimeout(() => { row.status = 'delivered'; row.attempts += 1; row.last_status_code = 200; row.last_error = null; }, PROCESS_DELAY_MS);
    return send(res, 200, { id, outcome: 'retried' });
  }
  return send(res, 404, { error: `no route: ${req.method} ${path}` });
}

serve({
  port, handle, send, internal: error => ({ error }), onStop: () => clearInterval(sampler),
  ready: origin => ({ url: origin, prefix, link: `${origin}${BASE}#key=${KEY}`,
    invalid_link: `${origin}${BASE}#key=hbp_${'0'.repeat(64)}`, quarantined_id: quarantined.id,
    disabled_destination: 'legacy-erp' }),
});
