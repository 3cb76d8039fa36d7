// The customer portal against the in-memory mock API (part of `npm test`).
// 1. portal.mjs with a missing Chromium must fail (exit 1, clear message);
// 2. the journey against portal-mock-server.mjs (under a /Prod stage prefix) must pass;
// 3. the read-only link shows no write control (portal.mjs --read-only);
// 4. a bad link shows only "invalid, expired or revoked" (portal.mjs --invalid).
// Screenshots go to out/portal/ (ignored by git). Exits non-zero on any failure.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkChromiumMissing, echo, here, lastJson, missingScreenshots, run, startMock, stopMock, tally } from './common.mjs';

const out = join(here, 'out', 'portal');
mkdirSync(out, { recursive: true });
const t = tally();

// 1. Missing Chromium: must fail loudly, never pass.
await checkChromiumMissing(t, 'portal.mjs', ['http://127.0.0.1:9/portal/#key=x', 'http://127.0.0.1:9/receiver', 'http://127.0.0.1:9/control', out]);

let mock;
try {
  mock = await startMock('portal-mock-server.mjs');
} catch (e) {
  t.record('portal mock server starts', false, e.message);
}
if (mock) {
  const { link, read_only_link: readOnlyLink, invalid_link: invalidLink, receiver, control } = mock.info;
  try {
    // 2. The journey.
    {
      const name = 'portal journey against the mock API (add, deliver, fail, resend, recover, secret, disable/enable, log out)';
      const r = await run(['portal.mjs', '--logout', link, receiver, control, out]);
      echo(r);
      const res = lastJson(r.stdout);
      let ok = r.code === 0 && res?.ok === true && res.recovered >= 1 && res.message_ids?.length === 3 && res.logged_out === true;
      let detail = ok ? '' : `portal.mjs exit ${r.code}`;
      const missing = missingScreenshots(['list', 'deliveries', 'recovered', 'secret', 'final'].map(n => join(out, `portal-${n}.png`)));
      if (missing) { ok = false; detail += missing; }
      t.record(name, ok, detail.trim());
    }
    // 3. The read-only link.
    {
      const r = await run(['portal.mjs', '--read-only', readOnlyLink, out]);
      echo(r);
      const ok = r.code === 0 && lastJson(r.stdout)?.ok === true;
      t.record('portal read-only link: badge, no write control, writes refused', ok, ok ? '' : `portal.mjs --read-only exit ${r.code}`);
    }
    // 4. A bad link.
    {
      const r = await run(['portal.mjs', '--invalid', invalidLink, out]);
      echo(r);
      const ok = r.code === 0 && lastJson(r.stdout)?.ok === true;
      t.record('portal bad link: "invalid, expired or revoked" and nothing else', ok, ok ? '' : `portal.mjs --invalid exit ${r.code}`);
    }
  } finally {
    stopMock(mock);
  }
}

t.finish();
