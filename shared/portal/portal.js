// hookbox customer portal: one tenant manages its own webhook endpoints.
//
// Opened from a link <base>/portal/#key=<token>: the key is traded once for an
// HttpOnly session cookie (POST api/session) and removed from the address bar.
// Every API call is relative to the page, so it works under any path prefix.
// The page runs under a strict Content-Security-Policy (no inline script or
// style, no eval), and every string from the server reaches the DOM as text
// (textContent / attribute values), never as markup.
'use strict';
(() => {
  const REFRESH_MS = 2000;    // the selected endpoint's deliveries and stats, while the page is visible
  const LIST_EVERY = 5;       // the endpoint list every 5th refresh
  const ATTEMPTS_PAGE = 50;

  const S = {
    csrf: '', readOnly: false, catalog: [], endpoints: [],
    sel: null,              // selected endpoint id
    gen: 0,                 // bumped on every selection change: late answers for another endpoint are dropped
    mode: 'view',           // the detail's head: view | edit | delete
    headMsg: null,          // {text, good}: the outcome of the last action in the head
    attempts: [], attemptsIter: null, attemptsDone: true, attemptsPages: 0, filter: '',
    stats: null,
    resent: new Map(),      // attempt id -> {text, good}
    busy: new Set(), drawn: new Map(),
    timer: null, ticking: false, again: false, ticks: 0, ended: false,
  };

  // ---- DOM helpers: text goes through append(string) / setAttribute only ----
  const $ = id => document.getElementById(id);
  function h(tag, attrs = {}, ...kids) {
    const el = document.createElement(tag);
    const props = {};
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
      else if (/^on|^style$/i.test(k)) throw new Error(`h(): no inline ${k}`);   // the CSP forbids them anyway
      else if (k === 'value' || k === 'checked') props[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid != null && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
    }
    Object.assign(el, props);          // after the children: a <select>'s value needs its options
    return el;
  }
  function s(tag, attrs = {}, text) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text != null) el.textContent = String(text);
    return el;
  }
  // Redraw a part only when what it shows changed (keeps focus, selections and pending clicks).
  function changed(key, value) {
    const sig = JSON.stringify(value);
    if (S.drawn.get(key) === sig) return false;
    S.drawn.set(key, sig);
    return true;
  }
  function outcome(id, text, good) {
    const el = $(id);
    if (!el) return;
    el.textContent = text;
    el.className = `outcome ${good ? 'good' : 'bad'}`;
  }

  const pad = n => String(n).padStart(2, '0');
  function when(iso, seconds = true) {
    if (iso == null) return '—';
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    const t = `${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ''}`;
    return d.toDateString() === new Date().toDateString() ? t
      : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${t}`;
  }
  const localInput = d => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const list = page => (page && Array.isArray(page.data) ? page.data : []);

  // ---- API ----
  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }
  async function api(method, path, body) {
    const init = { method, credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } };
    if (method !== 'GET') {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body ?? {});
      if (!(method === 'POST' && path === 'api/session')) init.headers['x-hookbox-csrf'] = S.csrf;
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'network', `Could not reach the server (${e.message}).`);
    }
    const text = await res.text().catch(() => '');
    let data = null;
    if (text) { try { data = JSON.parse(text); } catch { /* not JSON */ } }
    if (res.status === 401 && path !== 'api/session') sessionGone();
    if (!res.ok) {
      const detail = data && typeof data === 'object' ? data.detail || data.code : null;
      throw new ApiError(res.status, data && data.code, String(detail || `HTTP ${res.status} ${res.statusText}`.trim()));
    }
    return data;
  }
  const epPath = (id, rest = '') => `api/endpoints/${encodeURIComponent(id)}${rest}`;
  const current = () => S.endpoints.find(e => e.id === S.sel) || null;

  // ---- views ----
  function show(view) {
    for (const id of ['loading', 'session-error', 'load-error', 'logged-out', 'app']) $(id).hidden = id !== view;
    $('logout').hidden = view !== 'app' || !S.csrf;
    if (view !== 'app' && view !== 'loading') {
      S.ended = true;
      clearTimeout(S.timer);
      for (const id of ['status', 'session-expires', 'tenant-name']) $(id).textContent = '';
      $('read-only-badge').hidden = true;
    }
  }
  function sessionGone() {
    if ($('logged-out').hidden) show('session-error');
  }

  async function start() {
    const key = new URLSearchParams(location.hash.replace(/^#/, '')).get('key');
    let session;
    try {
      if (key) {
        try {
          session = await api('POST', 'api/session', { key });
        } finally {
          history.replaceState(null, '', location.pathname + location.search);   // never keep the key around
        }
      } else {
        session = await api('GET', 'api/session');
      }
    } catch (e) {
      if (e.status >= 400 && e.status < 500) return show('session-error');
      $('load-error-detail').textContent = e.message;
      return show('load-error');
    }
    S.csrf = String(session.csrf ?? '');
    S.readOnly = session.read_only === true;
    document.body.classList.toggle('read-only', S.readOnly);
    $('read-only-badge').hidden = !S.readOnly;
    const tenant = session.tenant || {};
    const name = tenant.name || tenant.uid || tenant.id || '';
    $('tenant-name').textContent = name;
    document.title = name ? `Webhooks · ${name}` : 'Webhooks';
    if (session.expires_at) {
      $('session-expires').textContent = `link valid until ${when(session.expires_at, false)}`;
      $('session-expires').title = String(session.expires_at);
    }
    try {
      const [catalog] = await Promise.all([api('GET', 'api/event-types'), loadEndpoints()]);
      S.catalog = list(catalog);
    } catch (e) {
      if (S.ended) return;
      $('load-error-detail').textContent = e.message;
      return show('load-error');
    }
    if (!S.readOnly) buildAddForm();
    show('app');
    renderList();
    document.body.dataset.loaded = '1';
    if (S.endpoints.length) select(S.endpoints[0].id);
    schedule();
  }

  async function logout() {
    $('logout').disabled = true;
    try {
      await api('DELETE', 'api/session', {});
    } catch (e) {
      if (e.status !== 401) {
        $('status').textContent = `Log out failed: ${e.message}`;
        $('logout').disabled = false;
        return;
      }
    }
    show('logged-out');
  }

  // ---- periodic refresh ----
  function schedule(ms = REFRESH_MS) {
    clearTimeout(S.timer);
    if (!S.ended && document.visibilityState === 'visible') S.timer = setTimeout(tick, ms);
  }
  function kick() {                    // soon after an action, to show its effect
    if (S.ticking) S.again = true; else schedule(400);
  }
  async function tick() {
    if (S.ticking || S.ended) return;
    S.ticking = true;
    try {
      S.ticks += 1;
      if (S.ticks % LIST_EVERY === 0) await loadEndpoints();
      if (S.sel) await Promise.all([loadAttempts(false), loadStats()]);
      $('status').textContent = '';
      if ($('attempts-updated')) $('attempts-updated').textContent = `updated ${when(new Date().toISOString())}`;
    } catch (e) {
      if (!S.ended) $('status').textContent = `Refresh failed: ${e.message}`;
    } finally {
      S.ticking = false;
      schedule(S.again ? 300 : REFRESH_MS);
      S.again = false;
    }
  }
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') schedule(0); else clearTimeout(S.timer);
  });

  // ---- endpoint list ----
  async function loadEndpoints() {
    const all = [];
    let after = null;
    for (let i = 0; i < 20; i++) {     // at most 2,000 endpoints
      const q = new URLSearchParams({ limit: '100' });
      if (after) q.set('after', after);
      const page = await api('GET', `api/endpoints?${q}`);
      all.push(...list(page));
      if (page.done !== false || !page.iterator || !list(page).length) break;
      after = page.iterator;
    }
    S.endpoints = all;
    if (S.sel && !current()) deselect();
    renderList();
    renderHead();
    renderStats();
  }
  function endpointState(ep, health = ep.health || {}) {
    if (ep.disabled) return ['disabled', 'Disabled', 'bad'];
    if (ep.held) return ['held', 'On hold', 'warn'];
    if (health.open_until && Date.parse(health.open_until) > Date.now()) return ['paused', 'Paused', 'warn'];
    if (health.failing_since || health.consecutive_failures > 0) return ['failing', 'Failing', 'warn'];
    return ['ok', 'Active', 'good'];
  }
  function statusBadge(ep, testid) {
    const [, label, cls] = endpointState(ep);
    return h('span', { class: `badge ${cls}`, 'data-testid': testid }, label);
  }
  function typeChips(types) {
    if (types == null) return h('span', { class: 'muted' }, 'all event types');
    const deprecated = new Set(S.catalog.filter(t => t.deprecated).map(t => t.name));
    return h('span', { class: 'chips' }, types.map(t => deprecated.has(t)
      ? h('span', { class: 'chip dep', title: 'deprecated event type' }, t)
      : h('span', { class: 'chip' }, t)));
  }
  function renderList() {
    $('endpoint-count').textContent = String(S.endpoints.length);
    if (!changed('list', [S.endpoints, S.sel, S.catalog.length])) return;
    const rows = S.endpoints.map(ep => h('tr', {
      'data-testid': `endpoint-row-${ep.id}`, 'data-disabled': String(ep.disabled === true),
      class: ep.id === S.sel ? 'sel' : null, onclick: () => select(ep.id),
    },
    h('td', { class: 'ep' },
      h('button', { type: 'button', class: 'link mono', 'data-testid': `open-${ep.id}`, title: ep.url }, ep.url),
      ep.description ? h('div', { class: 'muted clip', title: ep.description, 'data-testid': `endpoint-description-${ep.id}` }, ep.description) : null),
    h('td', { 'data-testid': `endpoint-types-${ep.id}` }, typeChips(ep.filter_types)),
    h('td', { class: 'nowrap' }, statusBadge(ep, `endpoint-status-${ep.id}`))));
    $('endpoint-list').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { class: 'empty', colspan: 3 },
      S.readOnly ? 'No endpoints yet.' : 'No endpoints yet: add one to start receiving webhooks.'))]));
  }

  // ---- event type picker (add and edit forms) ----
  function typePicker(prefix, selected) {
    const chosen = new Set(selected || []);
    const count = h('span', { class: 'hint' });
    const boxes = S.catalog.map(t => h('input', {
      type: 'checkbox', value: t.name, 'data-testid': `${prefix}${t.name}`, 'data-deprecated': String(t.deprecated === true),
      checked: chosen.has(t.name),
    }));
    const update = () => {
      const n = boxes.filter(b => b.checked).length;
      count.textContent = n ? `${n} selected` : 'none ticked: every event type, including future ones';
    };
    boxes.forEach(b => b.addEventListener('change', update));
    update();
    const el = h('fieldset', { class: 'types' }, h('legend', {}, 'Event types'), count,
      S.catalog.length ? h('div', { class: 'list' }, S.catalog.map((t, i) => h('label', { class: 'type' }, boxes[i],
        h('span', {}, h('span', { class: 'name' }, t.name), t.deprecated ? [' ', h('span', { class: 'badge warn' }, 'deprecated')] : null),
        t.description ? h('span', { class: 'desc' }, t.description) : null)))
        : h('div', { class: 'hint' }, 'No event types are published yet.'));
    return { el, selected: () => { const v = boxes.filter(b => b.checked).map(b => b.value); return v.length ? v : null; } };
  }

  // ---- add an endpoint ----
  let addPicker = null;
  function buildAddForm() {
    $('add-url').placeholder = 'https://example.com/webhooks';   // here, not in the HTML: it names no other origin
    addPicker = typePicker('type-checkbox-', null);
    $('add-types').replaceChildren(addPicker.el);
  }
  async function addEndpoint(e) {
    e.preventDefault();
    const btn = $('add-submit');
    if (S.readOnly || btn.disabled) return;
    const url = $('add-url').value.trim();
    $('add-error').textContent = '';
    if (!url) { $('add-error').textContent = 'Enter the URL that should receive the webhooks.'; return; }
    btn.disabled = true;
    try {
      const ep = await api('POST', 'api/endpoints', { url, description: $('add-description').value.trim(), filter_types: addPicker.selected() });
      $('add-form').reset();
      buildAddForm();
      $('list-outcome').textContent = '';
      S.endpoints = S.endpoints.filter(x => x.id !== ep.id).concat(ep);
      select(ep.id);
    } catch (err) {
      $('add-error').textContent = err.message;
    } finally {
      btn.disabled = false;
    }
  }

  // ---- the selected endpoint ----
  function select(id) {
    if (S.sel === id) return;
    Object.assign(S, { sel: id, mode: 'view', headMsg: null, attempts: [], attemptsIter: null, attemptsDone: true,
      attemptsPages: 0, filter: '', stats: null });
    S.gen += 1;
    S.resent.clear();
    renderList();
    renderDetail();
    Promise.all([loadAttempts(true), loadStats()]).catch(e => { if (!S.ended) $('status').textContent = `Load failed: ${e.message}`; });
  }
  function deselect() {
    S.sel = null;
    S.gen += 1;
    renderDetail();
  }
  function replaceEndpoint(ep) {
    S.endpoints = S.endpoints.map(x => (x.id === ep.id ? ep : x));
    renderList();
    renderHead();
    renderStats();
  }

  function renderDetail() {
    const ep = current(), d = $('detail');
    for (const k of ['head', 'attempts', 'stats']) S.drawn.delete(k);
    if (!ep) { d.hidden = true; d.replaceChildren(); d.removeAttribute('data-endpoint-id'); return; }
    d.hidden = false;
    d.setAttribute('data-endpoint-id', ep.id);
    const filter = h('select', { class: 'inline', 'data-testid': 'attempts-filter', 'aria-label': 'show',
      onchange: e => { S.filter = e.target.value; S.attempts = []; S.attemptsPages = 0; renderAttempts(); loadAttempts(true).catch(showAttemptsError); } },
    h('option', { value: '' }, 'all'), h('option', { value: 'success' }, 'succeeded'), h('option', { value: 'failed' }, 'failed'));
    d.replaceChildren(
      h('div', { id: 'detail-head' }),
      h('div', { class: 'panels' },
        h('div', { class: 'panel' }, h('h4', {}, 'Last 24 hours'),
          h('div', { class: 'health', id: 'health', 'data-testid': 'health' }),
          s('svg', { class: 'chart', id: 'chart', 'data-testid': 'chart', viewBox: '0 0 600 170', role: 'img', 'aria-label': 'deliveries per hour' }),
          h('div', { class: 'legend' }, h('span', {}, h('i', { class: 'ok' }), 'succeeded'), h('span', {}, h('i', { class: 'failed' }), 'failed'),
            h('span', {}, h('i', { class: 'rate' }), 'success rate'), h('span', { id: 'chart-summary', 'data-testid': 'chart-summary' }))),
        S.readOnly ? null : testPanel(ep),
        S.readOnly ? null : secretPanel()),
      h('div', {},
        h('h3', {}, 'Deliveries', filter, h('span', { class: 'sub', id: 'attempts-updated' })),
        h('div', { class: 'tablewrap' }, h('table', { id: 'attempts-table', 'data-testid': 'attempts' },
          h('thead', {}, h('tr', {}, ['Time', 'Event type', 'Message', 'Status', 'Code', 'Latency', 'Response'].map(t => h('th', {}, t)),
            S.readOnly ? null : h('th', {}, ''))),
          h('tbody', { id: 'attempts-body' }))),
        h('div', { class: 'error', id: 'attempts-error' }),
        h('div', { class: 'row' }, h('button', { type: 'button', class: 'btn ghost small', id: 'attempts-more', 'data-testid': 'attempts-more',
          hidden: true, onclick: loadMore }, 'Load older'))));
    renderHead();
    renderStats();
    renderAttempts();
  }

  function renderHead() {
    const ep = current(), el = $('detail-head');
    if (!ep || !el) return;
    if (S.mode === 'edit') {          // never redraw a form being filled in
      if (el.dataset.editing !== ep.id) { el.dataset.editing = ep.id; el.replaceChildren(editForm(ep)); S.drawn.delete('head'); }
      return;
    }
    delete el.dataset.editing;
    if (!changed('head', [ep, S.mode, S.headMsg, [...S.busy], S.catalog.length])) return;
    const busy = S.busy.has(`ep:${ep.id}`);
    const headers = Array.isArray(ep.header_names) ? ep.header_names : [];
    el.replaceChildren(...[
      h('div', { class: 'head' },
        h('div', { class: 'info' },
          h('div', { class: 'url', 'data-testid': 'endpoint-url' }, ep.url),
          h('div', { class: ep.description ? 'desc' : 'desc muted', 'data-testid': 'endpoint-description' }, ep.description || 'no description'),
          h('div', { class: 'meta' },
            statusBadge(ep, 'endpoint-state'),
            h('span', {}, 'ID', h('span', { class: 'mono' }, ep.id)),
            ep.uid ? h('span', {}, 'UID', h('span', { class: 'mono' }, ep.uid)) : null,
            h('span', { title: ep.created_at ?? '' }, `created ${when(ep.created_at, false)}`),
            ep.rate_limit != null ? h('span', {}, `at most ${ep.rate_limit} deliveries/s`) : null,
            ep.ordered ? h('span', {}, 'delivered in order') : null),
          h('div', { class: 'meta' },
            h('span', {}, 'Event types', typeChips(ep.filter_types)),
            h('span', { 'data-testid': 'endpoint-headers' }, 'Custom headers',
              headers.length ? h('span', { class: 'chips' }, headers.map(n => h('span', { class: 'chip' }, n))) : h('span', {}, 'none')))),
        S.readOnly ? null : h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'btn ghost', 'data-testid': `edit-${ep.id}`, disabled: busy,
            onclick: () => { S.mode = 'edit'; S.headMsg = null; renderHead(); } }, 'Edit'),
          ep.disabled
            ? h('button', { type: 'button', class: 'btn', 'data-testid': `enable-${ep.id}`, disabled: busy, onclick: () => setDisabled(ep, false) }, 'Enable')
            : h('button', { type: 'button', class: 'btn ghost', 'data-testid': `disable-${ep.id}`, disabled: busy, onclick: () => setDisabled(ep, true) }, 'Disable'),
          h('button', { type: 'button', class: 'btn ghost danger', 'data-testid': `delete-${ep.id}`, disabled: busy || S.mode === 'delete',
            onclick: () => { S.mode = 'delete'; S.headMsg = null; renderHead(); } }, 'Delete'))),
      S.mode === 'delete' ? h('div', { class: 'confirm', 'data-testid': 'delete-confirm-box' },
        h('p', {}, 'Delete this endpoint? Its signing secret goes with it and whatever was not delivered to it yet is dropped. This cannot be undone.'),
        h('div', { class: 'row' },
          h('button', { type: 'button', class: 'btn danger', 'data-testid': 'delete-confirm', disabled: busy, onclick: () => deleteEndpoint(ep) }, 'Delete endpoint'),
          h('button', { type: 'button', class: 'btn ghost', 'data-testid': 'delete-cancel', disabled: busy,
            onclick: () => { S.mode = 'view'; renderHead(); } }, 'Cancel'))) : null,
      S.headMsg ? h('div', { class: `outcome ${S.headMsg.good ? 'good' : 'bad'}`, 'data-testid': 'endpoint-outcome' }, S.headMsg.text) : null,
    ].filter(Boolean));
  }

  function editForm(ep) {
    const picker = typePicker('edit-type-checkbox-', ep.filter_types);
    const url = h('input', { type: 'url', 'data-testid': 'edit-url', value: ep.url ?? '', autocomplete: 'off' });
    const desc = h('input', { type: 'text', 'data-testid': 'edit-description', value: ep.description ?? '', autocomplete: 'off' });
    const err = h('div', { class: 'error outcome', 'data-testid': 'edit-error' });
    const save = h('button', { type: 'submit', class: 'btn', 'data-testid': 'edit-submit' }, 'Save');
    const cancel = () => { S.mode = 'view'; renderHead(); };
    return h('form', { novalidate: true, 'data-testid': 'edit-form', onsubmit: async e => {
      e.preventDefault();
      save.disabled = true;
      err.textContent = '';
      try {
        const upd = await api('PATCH', epPath(ep.id), { url: url.value.trim(), description: desc.value.trim(), filter_types: picker.selected() });
        if (S.sel !== ep.id) return;
        S.mode = 'view';
        S.headMsg = { text: 'Saved.', good: true };
        replaceEndpoint(upd);
      } catch (x) {
        err.textContent = x.message;
        save.disabled = false;
      }
    } },
    h('h3', {}, 'Edit endpoint'),
    h('label', { class: 'field' }, 'URL', url),
    h('label', { class: 'field' }, 'Description', desc),
    picker.el,
    h('div', { class: 'row' }, save, h('button', { type: 'button', class: 'btn ghost', 'data-testid': 'edit-cancel', onclick: cancel }, 'Cancel')),
    err);
  }

  async function setDisabled(ep, disable) {
    const key = `ep:${ep.id}`;
    if (S.busy.has(key)) return;
    S.busy.add(key);
    renderHead();
    try {
      const upd = await api('POST', epPath(ep.id, disable ? '/disable' : '/enable'), {});
      S.headMsg = { text: disable ? 'Disabled: nothing is delivered to it until you enable it again.' : 'Enabled: deliveries resume.', good: true };
      S.busy.delete(key);
      if (upd && upd.id === ep.id) replaceEndpoint(upd);
    } catch (e) {
      S.headMsg = { text: e.message, good: false };
    } finally {
      S.busy.delete(key);
      renderHead();
    }
  }

  async function deleteEndpoint(ep) {
    const key = `ep:${ep.id}`;
    if (S.busy.has(key)) return;
    S.busy.add(key);
    renderHead();
    try {
      const r = await api('DELETE', epPath(ep.id), {});
      S.busy.delete(key);
      S.endpoints = S.endpoints.filter(x => x.id !== ep.id);
      if (S.sel === ep.id) deselect();
      renderList();
      const n = Number(r && r.undelivered) || 0;
      outcome('list-outcome', `Deleted ${ep.url}${n ? ` (${plural(n, 'undelivered message', 'undelivered messages')} dropped)` : ''}.`, true);
    } catch (e) {
      S.busy.delete(key);
      S.headMsg = { text: e.message, good: false };
      renderHead();
    }
  }

  // ---- health and chart ----
  async function loadStats() {
    const id = S.sel;
    if (!id) return;
    const st = await api('GET', epPath(id, '/stats?hours=24'));
    if (id !== S.sel) return;
    S.stats = st;
    renderStats();
  }
  function renderStats() {
    const ep = current();
    if (!ep || !$('health')) return;
    const health = (S.stats && S.stats.health) || ep.health || {};
    if (!changed('stats', [S.stats, ep.disabled, ep.held, ep.disabled_reason, ep.health])) return;
    const [state, label, cls] = endpointState(ep, health);
    const n = Number(health.consecutive_failures) || 0;
    const detail = {
      disabled: ep.disabled_reason || 'nothing is delivered until it is enabled again',
      held: 'deliveries wait and go out once it is released',
      paused: `${plural(n, 'failure', 'failures')} in a row; next try ${when(health.open_until)}`,
      failing: `${health.failing_since ? `since ${when(health.failing_since)}` : 'recently'} · ${plural(n, 'failure', 'failures')} in a row`,
      ok: 'deliveries are going through',
    }[state];
    const el = $('health');
    el.setAttribute('data-state', state);
    el.replaceChildren(h('span', { class: `badge ${cls}` }, state === 'ok' ? 'Healthy' : label), h('span', { class: 'muted' }, detail));
    drawChart($('chart'), S.stats && Array.isArray(S.stats.buckets) ? S.stats.buckets : null);
  }
  function drawChart(svg, buckets) {
    const W = 600, H = 170, L = 30, R = 34, T = 10, B = 22;
    const nodes = [];
    const ok = (buckets || []).reduce((a, b) => a + (Number(b.success) || 0), 0);
    const failed = (buckets || []).reduce((a, b) => a + (Number(b.failed) || 0), 0);
    svg.setAttribute('data-success', String(ok));
    svg.setAttribute('data-failed', String(failed));
    $('chart-summary').textContent = ok + failed
      ? `${Math.floor(ok / (ok + failed) * 1000) / 10}% of ${plural(ok + failed, 'attempt', 'attempts')} succeeded`
        + (S.stats && S.stats.complete === false ? ' (partial count)' : '') : '';
    if (!buckets || !buckets.length || !(ok + failed)) {
      nodes.push(s('text', { class: 'empty', x: W / 2, y: H / 2, 'text-anchor': 'middle' }, buckets ? 'No delivery attempts in the last 24 hours' : 'loading…'));
      svg.replaceChildren(...nodes);
      return;
    }
    const max = niceMax(Math.max(...buckets.map(b => (Number(b.success) || 0) + (Number(b.failed) || 0))));
    const bw = (W - L - R) / buckets.length;
    const Y = v => T + (1 - v / max) * (H - T - B);
    for (const v of [0, max / 2, max]) {
      nodes.push(s('line', { class: 'grid', x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      nodes.push(s('text', { x: L - 5, y: Y(v) + 3, 'text-anchor': 'end' }, v));
    }
    nodes.push(s('text', { x: W - R + 5, y: Y(max) + 3 }, '100%'), s('text', { x: W - R + 5, y: Y(0) + 3 }, '0%'));
    const hour = iso => { const d = new Date(iso); return isNaN(d) ? '' : `${pad(d.getHours())}:${pad(d.getMinutes())}`; };
    const rate = [];
    buckets.forEach((b, i) => {
      const good = Number(b.success) || 0, bad = Number(b.failed) || 0, x = L + i * bw + 1, w = Math.max(bw - 2, 1);
      const g = s('g', {});
      g.append(s('title', {}, `${hour(b.start)}: ${good} succeeded, ${bad} failed`));
      if (good) g.append(s('rect', { class: 'ok', x, width: w, y: Y(good), height: Y(0) - Y(good) }));
      if (bad) g.append(s('rect', { class: 'failed', x, width: w, y: Y(good + bad), height: Y(good) - Y(good + bad) }));
      nodes.push(g);
      if (good + bad) rate.push(`${(x + w / 2).toFixed(1)},${(T + (1 - good / (good + bad)) * (H - T - B)).toFixed(1)}`);
    });
    if (rate.length > 1) nodes.push(s('polyline', { class: 'rate', points: rate.join(' ') }));
    for (const i of [0, Math.floor(buckets.length / 2), buckets.length - 1]) {
      nodes.push(s('text', { x: L + (i + 0.5) * bw, y: H - 6, 'text-anchor': 'middle' }, hour(buckets[i].start)));
    }
    svg.replaceChildren(...nodes);
  }
  function niceMax(v) {              // 2, 4, 10, 20, 40, 100, …: the middle grid line stays a round number
    if (v <= 2) return 2;
    const raw = v / 2, p = 10 ** Math.floor(Math.log10(raw));
    return 2 * [1, 2, 5, 10].map(m => m * p).find(m => m >= raw);
  }

  // ---- send an example, recover ----
  function testPanel(ep) {
    const types = S.catalog.map(t => t.name);
    const preferred = (ep.filter_types || []).find(t => types.includes(t)) || (S.catalog.find(t => !t.deprecated) || S.catalog[0] || {}).name;
    const typeSelect = h('select', { id: 'example-type', 'data-testid': 'example-type', 'aria-label': 'event type', value: preferred ?? '',
      disabled: !types.length }, S.catalog.map(t => h('option', { value: t.name }, t.deprecated ? `${t.name} (deprecated)` : t.name)));
    const since = h('input', { type: 'datetime-local', id: 'recover-since', 'data-testid': 'recover-since', 'aria-label': 'since',
      value: localInput(new Date(Date.now() - 86_400_000)) });
    return h('div', { class: 'panel write' },
      h('div', { class: 'part' }, h('h4', {}, 'Send an example event'),
        h('p', {}, "Delivers the event type's example payload to this endpoint."),
        h('div', { class: 'row' }, typeSelect,
          h('button', { type: 'button', class: 'btn', id: 'example-submit', 'data-testid': 'example-submit', disabled: !types.length, onclick: sendExample }, 'Send')),
        h('div', { class: 'outcome', id: 'example-outcome', 'data-testid': 'example-outcome' })),
      h('div', { class: 'part' }, h('h4', {}, 'Recover failed deliveries'),
        h('p', {}, 'Sends again every delivery that failed since:'),
        h('div', { class: 'row' }, since,
          h('button', { type: 'button', class: 'btn ghost', id: 'recover-submit', 'data-testid': 'recover-submit', onclick: recover }, 'Recover')),
        h('div', { class: 'outcome', id: 'recover-outcome', 'data-testid': 'recover-outcome' })));
  }
  // Runs one action of the panels: button disabled meanwhile, outcome (text) shown under it.
  async function act(buttonId, outcomeId, fn) {
    const gen = S.gen, btn = $(buttonId);
    if (!btn || btn.disabled) return false;
    btn.disabled = true;
    let text, good = true;
    try { text = await fn(); } catch (e) { text = e.message; good = false; }
    if (gen !== S.gen) return false;
    btn.disabled = false;
    if (text !== undefined) outcome(outcomeId, text, good);
    else if ($(outcomeId)?.classList.contains('bad')) outcome(outcomeId, '', true);   // clear an earlier error
    kick();
    return good;
  }
  function sendExample() {
    const id = S.sel, type = $('example-type').value;
    return act('example-submit', 'example-outcome', async () => {
      const r = await api('POST', epPath(id, '/example'), { event_type: type });
      return r && r.delivery_id
        ? `Sent ${type} (${r.message_id}); the delivery shows below in a moment.`
        : `Created ${r && r.message_id}, but nothing is delivered now (the endpoint is disabled or does not take ${type}).`;
    });
  }
  async function recover() {
    const id = S.sel, value = $('recover-since').value, since = new Date(value);
    let r = null;
    const ok = await act('recover-submit', 'recover-outcome', async () => {
      if (!value || isNaN(since)) throw new Error('Pick the date and time to recover from.');
      r = await api('POST', epPath(id, '/recover'), { since: since.toISOString() });
      const n = Number(r && r.recovered) || 0, dead = Number(r && r.dead) || 0;
      if (!n) return '0 deliveries sent again: none failed since then.';
      return `${plural(n, 'delivery', 'deliveries')} sent again${dead ? ` (${dead} had been given up)` : ''}.`;
    });
    const el = $('recover-outcome');
    if (ok && el && r) {
      el.setAttribute('data-recovered', String(Number(r.recovered) || 0));
      el.title = `recovered ${r.recovered ?? 0}, dead ${r.dead ?? 0}, failed ${r.failed ?? 0}`;
    }
  }

  // ---- signing secret ----
  function secretPanel() {
    return h('div', { class: 'panel write' }, h('h4', {}, 'Signing secret'),
      h('p', {}, 'Every delivery is signed with it (webhook-signature header): check the signature to know a delivery is genuine.'),
      h('div', { class: 'row' },
        h('button', { type: 'button', class: 'btn', id: 'reveal-secret', 'data-testid': 'reveal-secret', onclick: reveal }, 'Reveal'),
        h('button', { type: 'button', class: 'btn ghost', id: 'rotate-secret', 'data-testid': 'rotate-secret', onclick: rotate }, 'Rotate')),
      h('div', { class: 'secret', id: 'secret-box', 'data-testid': 'secret-box', hidden: true },
        h('code', { id: 'secret-value', 'data-testid': 'secret-value' }),
        h('button', { type: 'button', class: 'btn ghost small', 'data-testid': 'secret-hide', onclick: hideSecret }, 'Hide')),
      h('div', { class: 'outcome', id: 'secret-outcome', 'data-testid': 'secret-outcome' }));
  }
  function hideSecret() {
    if (!$('secret-box')) return;
    $('secret-value').textContent = '';
    $('secret-box').hidden = true;
  }
  function reveal() {
    const id = S.sel, gen = S.gen;
    return act('reveal-secret', 'secret-outcome', async () => {
      const r = await api('POST', epPath(id, '/secret/reveal'), {});
      if (gen === S.gen) {
        $('secret-value').textContent = String(r && r.key);
        $('secret-box').hidden = false;
      }
      return undefined;                // the secret box is the outcome
    });
  }
  function rotate() {
    const id = S.sel;
    return act('rotate-secret', 'secret-outcome', async () => {
      const r = await api('POST', epPath(id, '/secret/rotate'), {});
      hideSecret();
      return `New secret in use. The previous one stays valid until ${when(r && r.previous_valid_until, false)}: update your verification before then.`;
    });
  }

  // ---- deliveries (attempts) ----
  function showAttemptsError(e) {
    if ($('attempts-error')) $('attempts-error').textContent = e.message;
  }
  async function loadAttempts(reset) {
    const id = S.sel, filter = S.filter;
    if (!id) return;
    const q = new URLSearchParams({ limit: String(ATTEMPTS_PAGE) });
    if (filter) q.set('status', filter);
    const page = await api('GET', epPath(id, `/attempts?${q}`));
    if (id !== S.sel || filter !== S.filter) return;
    const data = list(page);
    if (reset || S.attemptsPages <= 1) {
      Object.assign(S, { attempts: data, attemptsIter: page.iterator ?? null, attemptsDone: page.done !== false, attemptsPages: 1 });
    } else {                            // keep the older pages loaded with "Load older"
      const seen = new Set(data.map(a => a.id));
      S.attempts = data.concat(S.attempts.filter(a => !seen.has(a.id)));
    }
    if ($('attempts-error')) $('attempts-error').textContent = '';
    if ($('attempts-table')) $('attempts-table').setAttribute('data-loaded-for', id);
    renderAttempts();
  }
  async function loadMore() {
    const id = S.sel, filter = S.filter, btn = $('attempts-more');
    if (!S.attemptsIter || btn.disabled) return;
    btn.disabled = true;
    try {
      const q = new URLSearchParams({ limit: String(ATTEMPTS_PAGE), before: S.attemptsIter });
      if (filter) q.set('status', filter);
      const page = await api('GET', epPath(id, `/attempts?${q}`));
      if (id !== S.sel || filter !== S.filter) return;
      const seen = new Set(S.attempts.map(a => a.id));
      S.attempts = S.attempts.concat(list(page).filter(a => !seen.has(a.id)));
      Object.assign(S, { attemptsIter: page.iterator ?? null, attemptsDone: page.done !== false, attemptsPages: S.attemptsPages + 1 });
      renderAttempts();
    } catch (e) {
      showAttemptsError(e);
    } finally {
      btn.disabled = false;
    }
  }
  function deliveryLine(a) {
    const parts = [`attempt ${a.attempt ?? '?'}`];
    if (a.delivery_status === 'pending' && a.status !== 'success') parts.push(a.next_attempt_at ? `retry ${when(a.next_attempt_at)}` : 'retrying');
    if (a.delivery_status === 'dead') parts.push('gave up');
    return parts.join(' · ');
  }
  function renderAttempts() {
    const body = $('attempts-body');
    if (!body) return;
    $('attempts-more').hidden = S.attemptsDone || !S.attemptsIter;
    if (!changed('attempts', [S.sel, S.attempts, [...S.resent], [...S.busy]])) return;
    const rows = S.attempts.map(a => {
      const resent = S.resent.get(a.id), success = a.status === 'success';
      return h('tr', { 'data-testid': `attempt-row-${a.id}`, 'data-status': a.status, 'data-status-code': a.status_code ?? '',
        'data-message-id': a.message_id ?? '' },
      h('td', { class: 'nowrap', title: a.timestamp ?? '' }, when(a.timestamp)),
      h('td', { class: 'mono' }, a.event_type ?? '—'),
      h('td', { class: 'mono nowrap', title: a.delivery_id ? `delivery ${a.delivery_id}` : null }, a.message_id ?? '—'),
      h('td', { class: 'nowrap' }, h('span', { class: `badge ${success ? 'good' : 'bad'}` }, success ? 'succeeded' : 'failed'),
        h('span', { class: 'sub' }, deliveryLine(a))),
      h('td', { class: 'num' }, a.status_code ?? '—'),
      h('td', { class: 'num' }, a.latency_ms == null ? '—' : `${a.latency_ms} ms`),
      h('td', { class: 'resp' },
        a.error ? h('div', { class: 'err' }, a.error) : null,
        a.response ? h('div', { class: 'excerpt', title: a.response }, a.response) : a.error ? null : h('span', { class: 'muted' }, '—')),
      S.readOnly ? null : h('td', { class: 'nowrap' },
        a.message_id ? h('button', { type: 'button', class: 'btn ghost small', 'data-testid': `resend-${a.id}`,
          disabled: S.busy.has(`resend:${a.id}`), title: 'Deliver this message again', onclick: () => resend(a) }, 'Resend') : null,
        resent ? h('div', { class: `outcome ${resent.good ? 'good' : 'bad'}`, 'data-testid': `resend-outcome-${a.id}` }, resent.text) : null));
    });
    const empty = { '': 'No delivery attempts yet.', success: 'No successful attempts.', failed: 'No failed attempts.' }[S.filter];
    body.replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { class: 'empty', colspan: S.readOnly ? 7 : 8 }, empty))]));
  }
  async function resend(a) {
    const key = `resend:${a.id}`, id = S.sel;
    if (S.busy.has(key) || !a.message_id) return;
    S.busy.add(key);
    renderAttempts();
    let res;
    try {
      const r = await api('POST', epPath(id, `/messages/${encodeURIComponent(a.message_id)}/resend`), {});
      res = { text: r && r.outcome === 'in_flight' ? 'already under way' : 'sent again', good: true };
    } catch (e) {
      res = { text: e.message, good: false };
    }
    S.busy.delete(key);
    if (id !== S.sel) return;
    S.resent.set(a.id, res);
    renderAttempts();
    kick();
  }

  // ---- wiring ----
  $('add-form').addEventListener('submit', addEndpoint);
  $('logout').addEventListener('click', logout);
  start().catch(e => {
    $('load-error-detail').textContent = String(e && e.message || e);
    show('load-error');
  });
})();
