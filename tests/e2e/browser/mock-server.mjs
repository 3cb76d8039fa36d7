// In-memory mock of the local stack's admin API (see README.md), for
// developing and testing tools/local/admin/index.html without Rust.
//
//   node mock-server.mjs [--port N]
//
// Listens on 127.0.0.1 (port 0 = any free port unless --port) and prints one
// JSON line: {"url":"http://127.0.0.1:<port>","quarantined_id":"<uuid>"}.
// Serves the page at /admin and /admin/ (read from disk on every request, so
// edits show on reload) and the API under /admin/api. Replaying the
// quarantined row moves it to "pending", then to "processed" about a second
// later, as the real processor would. Stops on SIGTERM / SIGINT.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const PAGE = fileURLToPath(new URL('../../../tools/local/admin/index.html', import.meta.url));
const INBOX_STATUSES = ['pending', 'processing', 'deferred', 'processed', 'quarantined', 'dead'];
const OUTBOX_STATUSES = ['pending', 'delivered', 'dead'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROCESS_DELAY_MS = 1000;

const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;

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

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const path = url.pathname;
  if (req.method === 'GET' && (path === '/admin' || path === '/admin/')) {
    const html = await readFile(PAGE);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    return res.end(html);
  }
  if (!path.startsWith('/admin/api/')) return send(res, 404, { error: `not found: ${path}` });
  const route = path.slice('/admin/api/'.length);
  const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 50) || 50, 1), 500);
  const status = url.searchParams.get('status');

  if (req.method === 'GET' && route === 'stats') {
    return send(res, 200, {
      inbox: counts(inbox, INBOX_STATUSES), outbox: counts(outbox, OUTBOX_STATUSES),
      oldest_pending_seconds: { inbox: oldestPending(inbox), outbox: oldestPending(outbox) }, history,
    });
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

const server = http.createServer((req, res) => {
  handle(req, res).catch(e => { if (!res.headersSent) send(res, 500, { error: String(e && e.message || e) }); else res.end(); });
});
server.listen(port, '127.0.0.1', () => {
  const { port: p } = server.address();
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${p}`, quarantined_id: quarantined.id,
    disabled_destination: 'legacy-erp' }) + '\n');
});
const stop = () => { clearInterval(sampler); server.close(); server.closeAllConnections?.(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
