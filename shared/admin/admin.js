// hookbox operator page: counts, charts, the rows needing attention, destinations and tenants.
//
// Served at <base>/admin/ (the local stack, or the management function under a
// stage prefix such as /Prod/admin/), opened with an operator link
// <base>/admin/#key=hbp_…: the key is traded once for an HttpOnly session
// cookie (POST api/session) and removed from the address bar. Without a key the
// page reads GET api/session (the cookie; the local stack trusts loopback).
// Every API call is relative to the page, so it works under any path prefix.
// The page runs under a strict Content-Security-Policy (no inline script or
// style, no eval), and every string from the server reaches the DOM as text
// (textContent / attribute values), never as markup.
'use strict';
(() => {
  const API = 'api/';                      // relative: <base>/admin/api/
  const LIMIT = 50;
  const REFRESH_MS = 2000;
  const STATUSES = {
    inbox: ['pending', 'processing', 'deferred', 'processed', 'quarantined', 'dead'],
    outbox: ['pending', 'delivered', 'dead'],
  };
  const ALERT = new Set(['quarantined', 'dead']);
  const COLOR = { pending:'#2563eb', processing:'#0891b2', deferred:'#d97706', processed:'#16a34a',
                  delivered:'#16a34a', quarantined:'#ea580c', dead:'#dc2626' };
  const INBOX_COLS = [
    ['Partner', r => r.partner], ['Event id', r => r.event_id, 'mono'], ['Type', r => r.event_type ?? '—'],
    ['Attempts', r => r.attempts, 'num'], ['Received', r => time(r.received_at)], ['Last error', r => r.last_error, 'err'],
  ];
  const TABLES = [
    { id:'inbox-quarantined', title:'Quarantined inbox', path:'inbox?status=quarantined', cols:INBOX_COLS, action:'replay' },
    { id:'inbox-dead', title:'Dead inbox', path:'inbox?status=dead', cols:INBOX_COLS, action:'replay' },
    { id:'inbox-deferred', title:'Deferred inbox', path:'inbox?status=deferred', cols:INBOX_COLS, action:null },
    { id:'outbox-dead', title:'Dead outbox', path:'outbox?status=dead', action:'retry', cols:[
      ['Destination', r => r.destination, 'mono'], ['Event type', r => r.event_type], ['Aggregate', r => r.aggregate_id, 'mono'],
      ['Attempts', r => r.attempts, 'num'], ['Last code', r => r.last_status_code ?? '—', 'num'],
      ['Created', r => time(r.created_at)], ['Last error', r => r.last_error, 'err'],
    ] },
  ];
  const GOOD = new Set(['enqueued', 'pending_for_sweeper', 'retried', 'enabled']);
  const STATE_CLASS = { healthy: 'good', open: 'meh', probing: 'meh', disabled: 'bad' };
  const hidden = { inbox: new Set(), outbox: new Set() };
  const outcomes = new Map();   // row id -> outcome text, shown until the row leaves the tables
  const busy = new Set();       // row ids with a request in flight
  const drawn = new Map();      // table id -> signature of what is drawn (redraw only on change)
  let lastData = null, timer = null, inflight = null, again = false;
  let csrf = null;              // the session's CSRF token (null: none needed, e.g. the local stack)
  let ended = false;            // the session was refused: nothing more happens
  let tenantPages = 1;          // pages of tenants shown ("Load more" adds one)

  // ---- DOM helpers: text always goes through append(string) / setAttribute, never innerHTML ----
  // `vars` sets CSS custom properties through the CSSOM (allowed by the CSP; style="" is not).
  function h(tag, attrs = {}, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
      else if (k === 'vars') for (const [p, x] of Object.entries(v)) el.style.setProperty(p, String(x));
      else if (/^on|^style$/i.test(k)) throw new Error(`h(): no inline ${k}`);   // the CSP forbids them anyway
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) if (kid != null) el.append(kid instanceof Node ? kid : String(kid));
    return el;
  }
  function s(tag, attrs = {}, text) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text != null) el.textContent = String(text);
    return el;
  }
  const $ = id => document.getElementById(id);
  const pad = n => String(n).padStart(2, '0');
  function time(iso) {
    if (iso == null) return '—';
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return d.toDateString() === new Date().toDateString() ? hms
      : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hms}`;
  }
  function age(sec) {
    if (sec == null) return 'none';
    sec = Math.max(0, Math.round(sec));
    if (sec < 60) return `${sec}s`;
    if (sec < 3600) return `${Math.floor(sec / 60)}m ${pad(sec % 60)}s`;
    if (sec < 86400) return `${Math.floor(sec / 3600)}h ${pad(Math.floor(sec % 3600 / 60))}m`;
    return `${Math.floor(sec / 86400)}d ${Math.floor(sec % 86400 / 3600)}h`;
  }

  // ---- API ----
  // Errors are {"error": …} (the data routes) or {"code": …, "detail": …} (session, auth): either is shown.
  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }
  async function api(path, method = 'GET', body) {
    const init = { method, credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } };
    if (method !== 'GET') {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body ?? {});
      if (csrf != null) init.headers['x-hookbox-csrf'] = csrf;
    }
    let res;
    try {
      res = await fetch(API + path, init);
    } catch (e) {
      throw new ApiError(0, `could not reach the server (${e.message})`);
    }
    let data = null;
    try { data = await res.json(); } catch { /* not JSON */ }
    if (res.status === 401 && path !== 'session') sessionRefused();
    if (!res.ok) {
      const said = data && typeof data === 'object' ? data.error || data.detail || data.code : null;
      throw new ApiError(res.status, String(said || `HTTP ${res.status}`));
    }
    if (data == null) throw new ApiError(res.status, `${path}: response is not JSON`);
    return data;
  }

  function setStatus(text, error) { $('status').textContent = text; $('status').className = error ? 'error' : ''; }

  // ---- session ----
  // Shows only the "invalid link" notice, and stops every timer.
  function sessionRefused() {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    for (const id of ['app', 'session', 'redrive', 'status']) $(id).hidden = true;
    $('session-error').hidden = false;
    document.title = 'hookbox admin · link refused';
  }
  let pendingKey = null;          // kept in memory only, to try again after a network failure
  async function start() {
    const key = new URLSearchParams(location.hash.replace(/^#/, '')).get('key');
    if (key) {
      pendingKey = key;
      history.replaceState(null, '', location.pathname + location.search);   // never keep the key in the address bar
    }
    let session;
    try {
      session = pendingKey ? await api('session', 'POST', { key: pendingKey }) : await api('session');
    } catch (e) {
      if (e.status === 401) return sessionRefused();
      const retry = !(e.status >= 400 && e.status < 500);
      setStatus(`could not open the session: ${e.message}${retry ? ' (retrying)' : ''}`, true);
      if (retry) timer = setTimeout(start, 5000);
      return;
    }
    pendingKey = null;
    csrf = session.csrf == null || session.csrf === '' ? null : String(session.csrf);
    $('session-operator').textContent = String(session.operator ?? '');
    if (session.expires_at) {
      $('session-expires').textContent = ` · link valid until ${time(session.expires_at)}`;
      $('session').title = `link valid until ${String(session.expires_at)}`;
    } else {
      $('session-expires').textContent = '';
    }
    $('session').hidden = false;
    $('redrive').hidden = false;
    $('app').hidden = false;
    setStatus('loading…');
    refresh();
  }

  // ---- counts -------------------------------------------------------------
  function buildCounts() {
    for (const kind of ['inbox', 'outbox']) {
      $(`counts-${kind}`).replaceChildren(...STATUSES[kind].map(st =>
        h('div', { class: 'tile', vars: { '--c': COLOR[st] }, id: `tile-${kind}-${st}` },
          h('div', { class: 'n', 'data-testid': `count-${kind}-${st}` }, '–'), h('div', { class: 'l' }, st))));
    }
  }
  function renderCounts(stats) {
    for (const kind of ['inbox', 'outbox']) {
      for (const st of STATUSES[kind]) {
        const n = Number(stats[kind]?.[st] ?? 0);
        document.querySelector(`[data-testid="count-${kind}-${st}"]`).textContent = String(n);
        $(`tile-${kind}-${st}`).classList.toggle('alert', ALERT.has(st) && n > 0);
        $(`legend-${kind}-${st}`).textContent = String(n);
      }
      $(`oldest-${kind}`).textContent = age(stats.oldest_pending_seconds?.[kind]);
    }
  }

  // ---- chart --------------------------------------------------------------
  function scale(v) {              // integer grid step from 1, 2, 5 x 10^k; at most 4 steps
    const raw = Math.max(v, 4) / 4, p = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map(m => m * p).find(m => m >= raw);
    return { step, max: step * Math.ceil(Math.max(v, 4) / step) };
  }
  function buildLegend(kind) {
    $(`legend-${kind}`).replaceChildren(...STATUSES[kind].map(st =>
      h('button', { type: 'button', vars: { '--c': COLOR[st] }, 'aria-pressed': 'true', title: 'show / hide',
        onclick: e => {
          hidden[kind].has(st) ? hidden[kind].delete(st) : hidden[kind].add(st);
          e.currentTarget.setAttribute('aria-pressed', String(!hidden[kind].has(st)));
          if (lastData) renderChart(kind, lastData.history);
        } }, h('i'), st, ' ', h('b', { id: `legend-${kind}-${st}` }, '–'))));
  }
  // history: the samples of the stats (the local stack keeps some; the deployed function none).
  function renderChart(kind, history) {
    const svg = $(`chart-${kind}`), W = 600, H = 190, L = 40, R = 10, T = 10, B = 22;
    const keys = STATUSES[kind].filter(st => !hidden[kind].has(st));
    const val = (sample, st) => Number(sample[kind]?.[st] ?? 0);
    if (history.length < 2) {
      const none = history.length === 0;
      svg.dataset.history = none ? 'none' : 'collecting';
      $(`span-${kind}`).textContent = '';
      svg.replaceChildren(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle' },
        none ? 'no history here: counts only' : 'collecting samples (one every 5 s)…'));
      return;
    }
    svg.dataset.history = 'drawn';
    const nodes = [];
    const ts = history.map((x, i) => { const t = Date.parse(x.at); return isNaN(t) ? i * 5000 : t; });
    const t0 = ts[0], t1 = Math.max(ts[ts.length - 1], t0 + 1);
    const { step, max } = scale(Math.max(0, ...history.flatMap(x => keys.map(st => val(x, st)))));
    const X = t => L + (t - t0) / (t1 - t0) * (W - L - R);
    const Y = v => T + (1 - v / max) * (H - T - B);
    for (let v = 0; v <= max; v += step) {
      nodes.push(s('line', { class: 'grid', x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      nodes.push(s('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end' }, v));
    }
    const tl = t => { const d = new Date(t); return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`; };
    nodes.push(s('text', { x: L, y: H - 5 }, tl(t0)), s('text', { x: W - R, y: H - 5, 'text-anchor': 'end' }, tl(t1)));
    for (const st of keys) {
      const pts = history.map((x, i) => `${X(ts[i]).toFixed(1)},${Y(val(x, st)).toFixed(1)}`).join(' ');
      const line = s('polyline', { points: pts, stroke: COLOR[st] });
      line.append(s('title', {}, st));
      nodes.push(line);
    }
    svg.replaceChildren(...nodes);
    $(`span-${kind}`).textContent = `last ${age((t1 - t0) / 1000)}`;
  }

  // ---- tables -------------------------------------------------------------
  function buildTables() {
    $('tables').replaceChildren(...TABLES.map(t =>
      h('section', { class: 'card spaced', id: `sec-${t.id}` },
        h('h2', {}, t.title, h('span', { class: 'sub', id: `n-${t.id}` }, '')),
        h('div', { class: 'tablewrap' }, h('table', { 'data-testid': `table-${t.id}` },
          h('thead', {}, h('tr', {}, t.cols.map(c => h('th', {}, c[0])), t.action ? h('th', {}, '') : null)),
          h('tbody', { id: `body-${t.id}` }))))));
  }
  function renderTable(t, rows) {
    const ids = rows.map(r => r.id);
    const sig = JSON.stringify([rows, ids.map(id => [outcomes.get(id), busy.has(id)])]);
    $(`n-${t.id}`).textContent = rows.length >= LIMIT ? `first ${LIMIT}` : String(rows.length);
    if (drawn.get(t.id) === sig) return;        // unchanged: keep the DOM (and any pending click) as is
    drawn.set(t.id, sig);
    const ncols = t.cols.length + (t.action ? 1 : 0);
    const trs = rows.map(r => {
      const tds = t.cols.map(([, get, cls]) => {
        const v = get(r);
        if (cls === 'err') return h('td', { class: 'err', title: v ?? '' }, v == null ? h('span', { class: 'muted' }, '—') : h('div', { class: 'clip' }, v));
        return h('td', { class: cls, title: cls === 'mono' ? v : null }, v);
      });
      if (t.action) {
        const out = outcomes.get(r.id);
        tds.push(h('td', {},
          h('button', { class: 'act', type: 'button', 'data-testid': `${t.action}-${r.id}`, disabled: busy.has(r.id),
            onclick: () => act(t.action, r.id) }, t.action === 'replay' ? 'Replay' : 'Retry'),
          out ? h('span', { class: `outcome ${GOOD.has(out) ? 'good' : out.startsWith('error') ? 'bad' : 'meh'}`,
            'data-testid': `outcome-${r.id}` }, out.replaceAll('_', ' ')) : null,
          t.action === 'retry' ? h('button', { class: 'act', type: 'button', 'data-testid': `attempts-${r.id}`,
            onclick: () => showAttempts(r.id) }, 'Attempts') : null));
      }
      const attrs = t.id.startsWith('inbox')
        ? { 'data-testid': `inbox-row-${r.id}`, 'data-status': r.status }
        : { 'data-testid': `outbox-row-${r.id}`, 'data-status': r.status };
      return h('tr', attrs, tds);
    });
    $(`body-${t.id}`).replaceChildren(...(trs.length ? trs : [h('tr', {}, h('td', { class: 'empty', colspan: ncols }, 'nothing here'))]));
  }
  function renderTables() {
    if (!lastData) return;
    const present = new Set();
    TABLES.forEach((t, i) => { const rows = lastData.tables[i]; rows.forEach(r => present.add(r.id)); renderTable(t, rows); });
    for (const id of outcomes.keys()) if (!present.has(id)) outcomes.delete(id);
  }

  // ---- actions ------------------------------------------------------------
  // Outcomes also go to a short log: the row itself usually leaves at the next refresh.
  function log(text, outcome) {
    const cls = GOOD.has(outcome) || String(outcome).startsWith('moved') ? 'good' : String(outcome).startsWith('error') || String(outcome).startsWith('failed') ? 'bad' : 'meh';
    $('log').prepend(h('li', {}, h('span', { class: 't' }, time(new Date().toISOString())), text, ': ',
      h('span', { class: `outcome ${cls}` }, String(outcome).replaceAll('_', ' '))));
    while ($('log').children.length > 5) $('log').lastChild.remove();
    $('log-card').hidden = false;
  }
  async function act(kind, id) {
    if (busy.has(id)) return;
    const row = lastData?.tables.flat().find(r => r.id === id);
    const what = row ? (row.partner ? `${row.partner} ${row.event_id}` : `${row.event_type} ${row.aggregate_id}`) : id;
    busy.add(id); renderTables();
    try {
      const res = await api(`${kind === 'replay' ? 'inbox' : 'outbox'}/${encodeURIComponent(id)}/${kind}`, 'POST');
      outcomes.set(id, String(res.outcome ?? 'done'));
    } catch (e) {
      outcomes.set(id, `error: ${e.message}`);
    } finally {
      busy.delete(id); renderTables();
    }
    if (ended) return;
    log(`${kind} ${what}`, outcomes.get(id));
    refresh();
  }
  // Every logged attempt of one delivery, in a card under the tables.
  async function showAttempts(id) {
    const card = $('attempts-card');
    card.hidden = false;
    $('attempts-title').textContent = id;
    try {
      const res = await api(`outbox/${encodeURIComponent(id)}/attempts`);
      const rows = (res.attempts ?? []).map(a => h('tr', {},
        h('td', { class: 'num' }, a.attempt), h('td', {}, time(a.attempted_at)), h('td', { class: 'mono' }, a.destination),
        h('td', { class: 'num' }, a.status_code ?? '—'), h('td', { class: 'num' }, a.latency_ms == null ? '—' : `${a.latency_ms} ms`),
        h('td', { class: 'err', title: a.error ?? '' }, a.error ?? '—'),
        h('td', { class: 'err', title: a.response_excerpt ?? '' }, a.response_excerpt ?? '—')));
      $('attempts-body').replaceChildren(...(rows.length ? rows
        : [h('tr', {}, h('td', { class: 'empty', colspan: 7 }, 'no attempt logged'))]));
    } catch (e) {
      $('attempts-body').replaceChildren(h('tr', {}, h('td', { class: 'empty', colspan: 7 }, `failed: ${e.message}`)));
    }
  }
  // The destinations' health (breaker, disabled), with Enable for those not healthy.
  function renderDestinations(rows) {
    $('n-destinations').textContent = String(rows.length);
    const sig = JSON.stringify([rows, rows.map(d => busy.has(`dest:${d.name}`))]);
    if (drawn.get('destinations') === sig) return;
    drawn.set('destinations', sig);
    const trs = rows.map(d => h('tr', { 'data-testid': `destination-row-${d.name}`, 'data-state': d.state },
      h('td', { class: 'mono' }, d.name),
      h('td', {}, h('span', { class: `outcome ${STATE_CLASS[d.state] ?? 'meh'}` }, d.state)),
      h('td', { class: 'num' }, d.consecutive_failures),
      h('td', {}, d.failing_since ? time(d.failing_since) : '—'),
      h('td', { class: 'num' }, d.pending),
      h('td', { class: 'err', title: d.disabled_reason ?? '' }, d.disabled_reason == null ? h('span', { class: 'muted' }, '—') : d.disabled_reason),
      h('td', {}, d.state === 'healthy' ? null : h('button', { class: 'act', type: 'button',
        'data-testid': `enable-${d.name}`, disabled: busy.has(`dest:${d.name}`),
        title: 'Deliver to it again, breaker closed', onclick: () => enableDestination(d.name) }, 'Enable'))));
    $('destinations-body').replaceChildren(...(trs.length ? trs
      : [h('tr', {}, h('td', { class: 'empty', colspan: 7 }, 'no destination synced yet'))]));
  }
  async function enableDestination(name) {
    const key = `dest:${name}`;
    if (busy.has(key)) return;
    busy.add(key); renderDestinations(lastData?.destinations ?? []);
    let outcome;
    try {
      const res = await api(`destinations/${encodeURIComponent(name)}/enable`, 'POST');
      outcome = String(res.outcome ?? 'done');
    } catch (e) {
      outcome = `error: ${e.message}`;
    } finally {
      busy.delete(key);
    }
    if (ended) return;
    log(`enable ${name}`, outcome);
    refresh();
  }
  // On a real SQS queue the server answers 409 {"error": …}: shown as "failed: …".
  async function redrive() {
    const btn = $('redrive');
    btn.disabled = true;
    try {
      const res = await api('dlq/redrive', 'POST');
      log('redrive DLQ', `moved ${Number(res.moved ?? 0)} message(s)`);
    } catch (e) {
      if (ended) return;
      log('redrive DLQ', `failed: ${e.message}`);
    } finally { btn.disabled = false; }
    refresh();
  }

  // ---- tenants ------------------------------------------------------------
  // The first `pages` pages of GET api/tenants (after=<iterator> for the next ones).
  async function loadTenants(pages) {
    const rows = [];
    let after = null, done = false;
    for (let p = 0; p < pages && !done; p++) {
      const page = await api(`tenants?limit=${LIMIT}${after == null ? '' : `&after=${encodeURIComponent(after)}`}`);
      rows.push(...(Array.isArray(page.data) ? page.data : []));
      after = page.iterator ?? null;
      done = page.done !== false || after == null;
    }
    return { rows, done };
  }
  function renderTenants(t) {
    $('tenants-error').textContent = t.error ? `could not list the tenants: ${t.error}` : '';
    if (t.error) return;                       // keep what was shown, with the error above it
    const { rows, done } = t;
    $('tenants-count').textContent = String(rows.length);
    $('tenants-more-note').textContent = done ? '' : 'more to load';
    $('tenants-more-box').hidden = done;
    const sig = JSON.stringify(rows);
    if (drawn.get('tenants') === sig) return;
    drawn.set('tenants', sig);
    const trs = rows.map(x => {
      const unhealthy = Number(x.unhealthy_endpoints ?? 0);
      return h('tr', { 'data-testid': `tenant-row-${x.id}`, 'data-disabled': String(x.disabled === true),
        'data-unhealthy': String(unhealthy), class: x.disabled === true ? 'off' : null },
        h('td', { class: 'name', title: x.name ?? '' }, x.name ?? '—'),
        h('td', { class: 'mono', title: x.uid ?? '' }, x.uid ?? '—'),
        h('td', { class: 'mono', title: x.id }, x.id),
        h('td', { class: 'num' }, Number(x.endpoints ?? 0)),
        h('td', { class: unhealthy > 0 ? 'num hot' : 'num' }, unhealthy),
        h('td', {}, x.disabled === true ? h('span', { class: 'flag bad' }, 'disabled') : h('span', { class: 'muted' }, 'no')));
    });
    $('tenants-body').replaceChildren(...(trs.length ? trs
      : [h('tr', {}, h('td', { class: 'empty', colspan: 6 }, 'no tenant yet'))]));
  }
  function moreTenants() {
    tenantPages += 1;
    $('tenants-more').disabled = true;
    refresh();
  }

  // ---- refresh loop -------------------------------------------------------
  async function load() {
    const tenants = loadTenants(tenantPages).catch(e => ({ error: e.message }));  // its failure spares the rest
    const [stats, dests, ...tables] = await Promise.all(['stats', 'destinations', ...TABLES.map(t => `${t.path}&limit=${LIMIT}`)].map(p => api(p)));
    lastData = { history: Array.isArray(stats.history) ? stats.history : [], tables: tables.map(b => Array.isArray(b.rows) ? b.rows : []),
                 destinations: Array.isArray(dests.rows) ? dests.rows : [] };
    renderDestinations(lastData.destinations);
    renderCounts(stats);
    renderChart('inbox', lastData.history);
    renderChart('outbox', lastData.history);
    renderTables();
    renderTenants(await tenants);
    $('tenants-more').disabled = false;
  }
  async function refresh() {
    if (ended) return;
    if (inflight) { again = true; return; }
    clearTimeout(timer);
    inflight = load().then(
      () => { if (ended) return; setStatus(`updated ${time(new Date().toISOString())} · every 2 s`); document.body.classList.remove('stale'); document.body.dataset.loaded = '1'; },
      e => { if (ended) return; setStatus(`refresh failed: ${e.message} (retrying; figures below are stale)`, true); document.body.classList.add('stale'); });
    await inflight;
    inflight = null;
    if (ended) return;
    if (again) { again = false; refresh(); } else timer = setTimeout(refresh, REFRESH_MS);
  }

  buildCounts(); buildLegend('inbox'); buildLegend('outbox'); buildTables();
  $('redrive').addEventListener('click', redrive);
  $('tenants-more').addEventListener('click', moreTenants);
  start().catch(e => setStatus(`could not start: ${e && e.message || e}`, true));
})();
