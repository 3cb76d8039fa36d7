// In-memory mock of the customer portal's JSON API (see README.md), for
// developing and testing shared/portal/ without Rust.
//
//   node portal-mock-server.mjs [--port N] [--prefix /Prod]
//
// Listens on 127.0.0.1 (any free port unless --port) and prints one JSON line:
// {"url","link","read_only_link","invalid_link","receiver","control"}.
// Serves the page at <prefix>/portal/ (<prefix>/portal redirects there), its
// assets read from shared/portal on every request (edits show on reload), and
// the API under <prefix>/portal/api/ for one tenant: a session cookie
// (HttpOnly, SameSite=Strict) from POST api/session, CSRF enforced on every
// write, a read-only key as well. Also an embedded receiver: /receiver answers
// the status set by POST /receiver-control?status=NNN (200 at first), and a
// fake relay that turns each example / resend / recover into an attempt about
// 300 ms later (a real POST when the endpoint's URL is on 127.0.0.1, else the
// receiver's current status). Hostile markup sits in an event type's
// description, an endpoint's URL, description and header name, and in failed
// responses: the page must show it as text. Stops on SIGTERM / SIGINT.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { SECURITY, cookies, hex, mockArgs, pageAssets, readBody, responder, serve } from './common.mjs';

const ASSETS = pageAssets('portal');
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>';
const COOKIE = 'hookbox_portal';
const RELAY_DELAY_MS = 300;
const MAX_ATTEMPTS = 5;            // a delivery is dead after this many failed attempts

const { port, prefix } = mockArgs();
const BASE = `${prefix}/portal/`;

const rid = p => `${p}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const iso = (ms = Date.now()) => new Date(ms).toISOString();
const KEY = `hbp_${hex(32)}`;
const READ_ONLY_KEY = `hbp_${hex(32)}`;
const tenant = { id: 'app_2fKq8M1xVw3nYc', uid: 'acme', name: 'Acme Corp' };

const catalog = [
  { name: 'invoice.paid', description: 'An invoice was paid in full.', deprecated: false,
    schema: { type: 'object', properties: { id: { type: 'string' }, amount: { type: 'integer' } } },
    example: { id: 'in_1001', amount: 4200, currency: 'eur' } },
  { name: 'invoice.created', description: 'Use invoice.finalized instead.', deprecated: true, schema: null,
    example: { id: 'in_1001' } },
  { name: 'invoice.payment_failed', description: 'A payment attempt for an invoice failed.', deprecated: false,
    schema: null, example: { id: 'in_1002', reason: 'card_declined' } },
  { name: 'customer.updated', description: `A customer's details changed ${HOSTILE}`, deprecated: false,
    schema: null, example: { id: 'cus_17', email: 'new@example.com' } },
];
const typeNames = new Set(catalog.map(t => t.name));

const endpoints = [];            // creation order
const messages = new Map();      // id -> {id, endpoint_id, event_type, payload, created_at}
const deliveries = new Map();    // id -> {id, endpoint_id, message_id, status, attempts, next_attempt_at, created_at}
const attempts = [];             // newest first
const sessions = new Map();      // id -> {readOnly, csrf, expires}
const secrets = new Map();       // endpoint id -> {current, previous}: never in an endpoint document
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
let receiverStatus = 200;
let receiverHits = 0;

function newEndpoint(fields) {
  const now = iso();
  const ep = {
    id: rid('ep'), uid: null, url: '', description: '', disabled: false, disabled_reason: null, held: false,
    filter_types: null, rate_limit: null, ordered: false, header_names: [],
    health: { consecutive_failures: 0, failing_since: null, open_until: null },
    created_at: now, updated_at: now, ...fields,
  };
  secrets.set(ep.id, { current: newSecret(), previous: null });
  endpoints.push(ep);
  return ep;
}
function newMessage(ep, type, at = Date.now()) {
  const m = { id: rid('msg'), endpoint_id: ep.id, event_type: type, created_at: iso(at),
    payload: { type, timestamp: iso(at), data: catalog.find(t => t.name === type)?.example ?? {} } };
  messages.set(m.id, m);
  return m;
}
function newDelivery(ep, msg, at = Date.now()) {
  const d = { id: randomUUID(), endpoint_id: ep.id, message_id: msg.id, status: 'pending', attempts: 0,
    next_attempt_at: null, created_at: iso(at) };
  deliveries.set(d.id, d);
  return d;
}
function record(ep, d, { code, body, error, latency, at = Date.now() }) {
  const ok = code != null && code >= 200 && code < 300;
  d.attempts += 1;
  d.status = ok ? 'delivered' : d.attempts >= MAX_ATTEMPTS ? 'dead' : 'pending';
  d.next_attempt_at = d.status === 'pending' ? iso(at + 5 * 60_000) : null;
  attempts.push({ id: rid('atmpt'), endpoint_id: ep.id, delivery_id: d.id, message_id: d.message_id,
    event_type: messages.get(d.message_id)?.event_type ?? null, attempt: d.attempts, timestamp: iso(at),
    status_code: code ?? null, latency_ms: latency ?? null, error: error ?? (ok ? null : `HTTP ${code}`),
    response: body == null ? null : body.slice(0, 256), status: ok ? 'success' : 'failed' });
  attempts.sort((a, b) => b.timestamp.localeCompare(a.timestamp));
  const h = ep.health;
  if (ok) Object.assign(h, { consecutive_failures: 0, failing_since: null, open_until: null });
  else Object.assign(h, { consecutive_failures: h.consecutive_failures + 1, failing_since: h.failing_since ?? iso(at) });
}
function attemptDoc(a) {
  const d = deliveries.get(a.delivery_id);
  const { endpoint_id: _, ...doc } = a;
  return { ...doc, delivery_status: d ? d.status : 'delivered', next_attempt_at: d ? d.next_attempt_at : null };
}
const receiverBody = code => (code >= 200 && code < 300 ? '{"received":true}' : `upstream failed ${HOSTILE} (status ${code})`);

// The fake relay: one attempt of delivery d, a little later.
function deliverSoon(d) {
  setTimeout(async () => {
    const ep = endpoints.find(e => e.id === d.endpoint_id);
    if (!ep || ep.disabled || d.status === 'delivered') return;
    const started = Date.now();
    let code = null, body = null, error = null;
    const msg = messages.get(d.message_id);
    let local = false;
    try { local = ['127.0.0.1', 'localhost'].includes(new URL(ep.url).hostname); } catch { /* not a URL */ }
    if (local) {
      const payload = JSON.stringify(msg.payload);
      const ts = Math.floor(Date.now() / 1000);
      const sig = createHmac('sha256', Buffer.from(secrets.get(ep.id).current.slice('whsec_'.length), 'base64'))
        .update(`${msg.id}.${ts}.${payload}`).digest('base64');
      try {
        const res = await fetch(ep.url, { method: 'POST', body: payload, signal: AbortSignal.timeout(5000),
          headers: { 'content-type': 'application/json', 'webhook-id': msg.id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` } });
        code = res.status;
        body = await res.text();
      } catch (e) {
        error = `connection failed: ${e.message}`;
      }
    } else {
      code = receiverStatus;
      body = receiverBody(code);
    }
    record(ep, d, { code, body, error, latency: Date.now() - started + 7 });
  }, RELAY_DELAY_MS);
}

// ---- seed: an endpoint with hostile text and a day of history, and a disabled one ----
{
  const now = Date.now();
  const erp = newEndpoint({
    url: `https://erp.acme.example/hooks?src=<script>window.__pwned=1</script>`,
    description: `ERP sync ${HOSTILE}`, uid: 'erp',
    filter_types: ['invoice.paid', 'customer.updated'],
    header_names: ['x-acme-tenant', `x-acme-<img src=x onerror="window.__pwned=1">`],
    rate_limit: 50, created_at: iso(now - 9 * 86400_000), updated_at: iso(now - 2 * 86400_000),
  });
  const history = [];
  for (let hr = 23; hr >= 0; hr--) {
    const n = [2, 3, 1, 4, 2, 5, 3][hr % 7];
    for (let k = 0; k < n; k++) {
      const code = (hr < 3 && k === 0) || (hr % 5 === 0 && k === 1) ? 503 : 200;
      history.push({ at: now - hr * 3600_000 - (k + 1) * 420_000, code, type: k % 3 ? 'invoice.paid' : 'customer.updated',
        latency: 40 + ((hr * 7 + k * 13) % 90) });
    }
  }
  for (const x of history.sort((a, b) => a.at - b.at)) {
    const d = newDelivery(erp, newMessage(erp, x.type, x.at), x.at);
    record(erp, d, { code: x.code, body: receiverBody(x.code), latency: x.latency, at: x.at });
  }
  const analytics = newEndpoint({
    url: 'https://analytics.acme.example/webhooks', description: 'Analytics pipeline',
    disabled: true, disabled_reason: 'failing continuously for 5 days (1,204 failed attempts)',
    created_at: iso(now - 40 * 86400_000), updated_at: iso(now - 86400_000),
  });
  analytics.health = { consecutive_failures: 1204, failing_since: iso(now - 6 * 86400_000), open_until: null };
}

// ---- HTTP plumbing ----
const { send, problem } = responder({ 'cache-control': 'no-store' });
const sessionDoc = s => ({ link_id: s.readOnly ? 'pl_readonly' : 'pl_full', tenant, read_only: s.readOnly, expires_at: iso(s.expires), csrf: s.csrf });
function page(data, limit, after) {
  let start = 0;
  if (after) { const i = data.findIndex(x => x.id === after); start = i < 0 ? data.length : i + 1; }
  const slice = data.slice(start, start + limit);
  return { data: slice, iterator: slice.length ? slice[slice.length - 1].id : null, done: start + limit >= data.length };
}
function validate(body, partial) {
  const out = {};
  if (!partial || 'url' in body) {
    let ok = false;
    try { ok = typeof body.url === 'string' && ['http:', 'https:'].includes(new URL(body.url).protocol); } catch { /* no */ }
    if (!ok || body.url.length > 2048) return 'url must be an absolute http:// or https:// URL';
    out.url = body.url;
  }
  if ('description' in body) {
    if (typeof body.description !== 'string' || body.description.length > 1000) return 'description must be a string of at most 1000 characters';
    out.description = body.description;
  }
  if ('filter_types' in body) {
    const ft = body.filter_types;
    if (ft !== null) {
      if (!Array.isArray(ft) || !ft.length) return 'filter_types must be null (every type) or a non-empty list';
      const unknown = ft.find(t => !typeNames.has(t));
      if (unknown !== undefined) return `filter_types: unknown event type ${JSON.stringify(unknown)}`;
    }
    out.filter_types = ft === null ? null : [...new Set(ft)];
  }
  return out;
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const path = url.pathname;

  // the embedded receiver and its control
  if (path === '/receiver') {
    receiverHits += 1;
    await readBody(req).catch(() => '');
    res.writeHead(receiverStatus, { 'content-type': receiverStatus < 300 ? 'application/json' : 'text/html' });
    return res.end(receiverBody(receiverStatus));
  }
  if (path === '/receiver-control') {
    if (req.method === 'POST') {
      const st = Number(url.searchParams.get('status'));
      if (!Number.isInteger(st) || st < 200 || st > 599) return problem(res, 400, 'bad_request', 'status must be 200..599');
      receiverStatus = st;
    }
    return send(res, 200, { status: receiverStatus, hits: receiverHits });
  }

  if (path === `${prefix}/portal`) {
    res.writeHead(301, { location: `portal/${url.search}` });
    return res.end();
  }
  if (!path.startsWith(BASE)) return problem(res, 404, 'not_found', `no route: ${path}`);
  const rest = path.slice(BASE.length);
  if (rest in ASSETS.files) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return problem(res, 405, 'method_not_allowed', 'GET only');
    return ASSETS.serve(req, res, rest);
  }
  if (!rest.startsWith('api/')) return problem(res, 404, 'not_found', `no route: ${path}`);
  return handleApi(req, res, url, rest.slice('api/'.length));
}

async function handleApi(req, res, url, route) {
  const m = req.method;
  const reply = (status, body, headers = {}) => send(res, status, body, { ...SECURITY, 'content-type': 'application/json', ...headers });
  const fail = (status, code, detail) => reply(status, { code, detail });
  let body = {};
  if (m === 'POST' || m === 'PATCH' || m === 'DELETE') {
    const text = await readBody(req);
    if (text) {
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return fail(415, 'unsupported_media_type', 'send JSON (content-type: application/json)');
      try { body = JSON.parse(text); } catch { return fail(400, 'bad_request', 'the body is not JSON'); }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return fail(400, 'bad_request', 'the body must be a JSON object');
    }
  }
  const cookiePath = `${prefix}/portal/`;

  if (route === 'session' && m === 'POST') {
    const readOnly = body.key === READ_ONLY_KEY;
    if (body.key !== KEY && !readOnly) return fail(401, 'unauthorized', 'this link is invalid, expired or revoked');
    const sid = hex(24);
    const s = { readOnly, csrf: hex(16), expires: Date.now() + 8 * 3600_000 };
    sessions.set(sid, s);
    return reply(200, sessionDoc(s), { 'set-cookie': `${COOKIE}=${sid}; Path=${cookiePath}; HttpOnly; SameSite=Strict; Max-Age=28800` });
  }
  const sid = cookies(req)[COOKIE];
  const s = sid && sessions.get(sid);
  if (!s || s.expires < Date.now()) return fail(401, 'unauthorized', 'no session: open your link again');
  const write = m !== 'GET' && m !== 'HEAD';
  if (write && req.headers['x-hookbox-csrf'] !== s.csrf) return fail(403, 'csrf', 'missing or wrong X-Hookbox-Csrf header');

  if (route === 'session') {
    if (m === 'GET') return reply(200, sessionDoc(s));
    if (m === 'DELETE') {
      sessions.delete(sid);
      res.writeHead(204, { ...SECURITY, 'set-cookie': `${COOKIE}=; Path=${cookiePath}; HttpOnly; SameSite=Strict; Max-Age=0` });
      return res.end();
    }
    return fail(405, 'method_not_allowed', `${m} api/session`);
  }
  if (write && s.readOnly) return fail(403, 'read_only', 'this link can only look, not change anything');

  const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 50) || 50, 1), 250);
  const after = url.searchParams.get('after');
  if (route === 'event-types' && m === 'GET') return reply(200, { data: catalog });
  if (route === 'endpoints') {
    if (m === 'GET') return reply(200, page(endpoints, limit, after));
    if (m === 'POST') {
      const v = validate(body, false);
      if (typeof v === 'string') return fail(422, 'validation', v);
      return reply(201, newEndpoint({ description: '', ...v }));
    }
    return fail(405, 'method_not_allowed', `${m} api/endpoints`);
  }
  const r = route.match(/^endpoints\/([^/]+)(?:\/(.+))?$/);
  if (!r) return fail(404, 'not_found', `no route: ${route}`);
  const ep = endpoints.find(e => e.id === decodeURIComponent(r[1]));
  if (!ep) return fail(404, 'not_found', `no endpoint ${r[1]}`);
  const sub = r[2] ?? '';
  const touch = () => { ep.updated_at = iso(); };

  if (sub === '') {
    if (m === 'GET') return reply(200, ep);
    if (m === 'PATCH') {
      const v = validate(body, true);
      if (typeof v === 'string') return fail(422, 'validation', v);
      Object.assign(ep, v);
      touch();
      return reply(200, ep);
    }
    if (m === 'DELETE') {
      endpoints.splice(endpoints.indexOf(ep), 1);
      let undelivered = 0;
      for (const d of deliveries.values()) {
        if (d.endpoint_id !== ep.id) continue;
        if (d.status !== 'delivered') undelivered += 1;
        deliveries.delete(d.id);
      }
      for (let i = attempts.length - 1; i >= 0; i--) if (attempts[i].endpoint_id === ep.id) attempts.splice(i, 1);
      const n = secrets.get(ep.id).previous ? 2 : 1;
      secrets.delete(ep.id);
      return reply(200, { id: ep.id, undelivered, secrets: n });
    }
    return fail(405, 'method_not_allowed', `${m} endpoint`);
  }
  if (sub === 'attempts' && m === 'GET') {
    const status = url.searchParams.get('status');
    if (status && status !== 'success' && status !== 'failed') return fail(422, 'validation', 'status must be success or failed');
    const mine = attempts.filter(a => a.endpoint_id === ep.id && (!status || a.status === status));
    const p = page(mine, limit, url.searchParams.get('before'));
    return reply(200, { ...p, data: p.data.map(attemptDoc) });
  }
  if (sub === 'stats' && m === 'GET') {
    const hours = Math.min(Math.max(Number(url.searchParams.get('hours') ?? 24) || 24, 1), 168);
    const first = Math.floor(Date.now() / 3600_000) * 3600_000 - (hours - 1) * 3600_000;
    const buckets = Array.from({ length: hours }, (_, i) => ({ start: iso(first + i * 3600_000), success: 0, failed: 0 }));
    for (const a of attempts) {
      if (a.endpoint_id !== ep.id) continue;
      const i = Math.floor((Date.parse(a.timestamp) - first) / 3600_000);
      if (i >= 0 && i < hours) buckets[i][a.status === 'success' ? 'success' : 'failed'] += 1;
    }
    return reply(200, { id: ep.id, hours, buckets, complete: true, health: ep.health, disabled: ep.disabled });
  }
  if (m !== 'POST') return fail(405, 'method_not_allowed', `${m} ${sub}`);
  if (sub === 'disable' || sub === 'enable') {
    ep.disabled = sub === 'disable';
    ep.disabled_reason = ep.disabled ? 'disabled from the portal' : null;
    if (!ep.disabled) {
      ep.health = { consecutive_failures: 0, failing_since: null, open_until: null };
      for (const d of deliveries.values()) if (d.endpoint_id === ep.id && d.status === 'pending') deliverSoon(d);
    }
    touch();
    return reply(200, ep);
  }
  if (sub === 'secret/rotate') {
    const sec = secrets.get(ep.id);
    Object.assign(sec, { previous: sec.current, current: newSecret() });
    touch();
    return reply(200, { id: ep.id, previous_valid_until: iso(Date.now() + 24 * 3600_000) });
  }
  if (sub === 'secret/reveal') return reply(200, { key: secrets.get(ep.id).current });
  if (sub === 'example') {
    if (!typeNames.has(body.event_type)) return fail(422, 'validation', `event_type: unknown event type ${JSON.stringify(body.event_type ?? null)}`);
    const msg = newMessage(ep, body.event_type);
    if (ep.disabled) return reply(202, { message_id: msg.id, delivery_id: null, event_type: msg.event_type });
    const d = newDelivery(ep, msg);
    deliverSoon(d);
    return reply(202, { message_id: msg.id, delivery_id: d.id, event_type: msg.event_type });
  }
  const rs = sub.match(/^messages\/([^/]+)\/resend$/);
  if (rs) {
    const msg = messages.get(decodeURIComponent(rs[1]));
    if (!msg || msg.endpoint_id !== ep.id) return fail(404, 'not_found', `no message ${rs[1]} for this endpoint`);
    // as hookbox does: the same delivery again (same webhook-id), attempts from 1
    const d = [...deliveries.values()].reverse().find(x => x.message_id === msg.id && x.endpoint_id === ep.id) ?? newDelivery(ep, msg);
    const was = d.status;
    if (was !== 'pending') Object.assign(d, { status: 'pending', attempts: 0 });
    deliverSoon(d);
    return reply(202, { message_id: msg.id, endpoint_id: ep.id, delivery_id: d.id, was,
      outcome: was === 'pending' ? 'due_now' : 'resent' });
  }
  if (sub === 'recover') {
    const since = Date.parse(body.since);
    if (typeof body.since !== 'string' || isNaN(since)) return fail(422, 'validation', 'since must be an RFC 3339 date-time');
    let recovered = 0, dead = 0, failed = 0;
    for (const d of deliveries.values()) {
      if (d.endpoint_id !== ep.id || d.status === 'delivered' || Date.parse(d.created_at) < since || d.attempts === 0) continue;
      recovered += 1;
      if (d.status === 'dead') dead += 1; else failed += 1;
      Object.assign(d, { status: 'pending', attempts: 0 });
      deliverSoon(d);
    }
    return reply(200, { id: ep.id, since: iso(since), recovered, dead, failed });
  }
  return fail(404, 'not_found', `no route: ${route}`);
}

serve({
  port, handle, send, internal: detail => ({ code: 'internal', detail }),
  ready: origin => ({
    url: origin, prefix, link: `${origin}${BASE}#key=${KEY}`, read_only_link: `${origin}${BASE}#key=${READ_ONLY_KEY}`,
    invalid_link: `${origin}${BASE}#key=hbp_${'0'.repeat(64)}`, receiver: `${origin}/receiver`, control: `${origin}/receiver-control`,
  }),
});
