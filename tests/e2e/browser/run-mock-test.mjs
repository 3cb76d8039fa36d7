// `npm test`: the operator page against the in-memory mock API.
// 1. admin.mjs with a missing Chromium must fail (exit 1, clear message);
// 2. mock-server.mjs (under the stage prefix /Prod) + admin.mjs opened with the
//    mock's operator link must pass (exit 0, {"ok":true,...}): the key traded
//    for a session cookie, every POST with its CSRF token, the strict CSP.
// Screenshots go to out/ (ignored by git). Exits non-zero on any failure.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkChromiumMissing, echo, here, missingScreenshots, run, startMock, stopMock, tally } from './common.mjs';

const out = join(here, 'out');
mkdirSync(out, { recursive: true });
const t = tally();

// 1. Missing Chromium: must fail loudly, never pass.
await checkChromiumMissing(t, 'admin.mjs', ['http://127.0.0.1:9', '00000000-0000-0000-0000-000000000000', join(out, 'none.png')]);

// 2. The page against the mock API, opened with an operator link.
const name = 'admin page against the mock API via an operator link (session, CSRF, CSP; tenants, replay, enable)';
let mock;
try {
  mock = await startMock('mock-server.mjs');
  const shot = join(out, 'admin.png');
  const r = await run(['admin.mjs', mock.info.link, mock.info.quarantined_id, shot, mock.info.disabled_destination]);
  echo(r);
  let ok = r.code === 0 && /^\{"ok":true/m.test(r.stdout) && /"link":true/.test(r.stdout) && /"csp":true/.test(r.stdout);
  let detail = ok ? '' : `admin.mjs exit ${r.code}`;
  const missing = missingScreenshots([shot, join(out, 'admin-after.png')]);
  if (missing) { ok = false; detail += missing; }
  t.record(name, ok, detail.trim());
} catch (e) {
  t.record(name, false, e.message);
} finally {
  if (mock) stopMock(mock);
}

t.finish();
