// The customer portal against the in-memory mock API (part of `npm test`).
// 1. portal.mjs with a missing Chromium must fail (exit 1, clear message);
// 2. the journey against portal-mock-server.mjs (under a /Prod stage prefix) must pass;
// 3. the read-only link shows no write control (portal.mjs --read-only);
// 4. a bad link shows only "invalid, expired or revoked" (portal.mjs --invalid).
// Screenshots go to out/portal/ (ignored by git). Exits non-zero on any failure.
import { spawn } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'out', 'portal');
mkdirSync(out, { recursive: true });
const results = [];

function run(args, env = {}) {
  return new Promise(resolve => {
    const child = spawn(process.execPath, args, { cwd: here, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', d => { stdout += d; });
    child.stderr.on('data', d => { stderr += d; });
    child.on('close', code => resolve({ code, stdout, stderr }));
  });
}
function record(name, ok, detail) {
  results.push(ok);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
}
function lastJson(stdout) {
  const line = stdout.trim().split('\n').pop();
  try { return JSON.parse(line); } catch { return null; }
}

function startMock() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'portal-mock-server.mjs'), '--prefix', '/Prod'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    const timer = setTimeout(() => { child.kill(); reject(new Error('mock server printed nothing within 10 s')); }, 10_000);
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`mock server exited early (${code})`)); });
    child.stdout.on('data', d => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try { resolve({ child, info: JSON.parse(buf.slice(0, nl)) }); } catch (e) { child.kill(); reject(e); }
    });
  });
}

// 1. Missing Chromium: must fail loudly, never pass.
{
  const r = await run(['portal.mjs', 'http://127.0.0.1:9/portal/#key=x', 'http://127.0.0.1:9/receiver', 'http://127.0.0.1:9/control', out],
    { CHROMIUM: '/nonexistent/chromium' });
  const ok = r.code === 1 && /Chromium not found/.test(r.stdout) && !/"ok":true/.test(r.stdout);
  record('portal.mjs fails when Chromium is missing', ok, ok ? '' : `exit ${r.code}: ${r.stdout}${r.stderr}`);
}

let mock;
try {
  mock = await startMock();
} catch (e) {
  record('portal mock server starts', false, e.message);
}
if (mock) {
  const { link, read_only_link: readOnlyLink, invalid_link: invalidLink, receiver, control } = mock.info;
  try {
    // 2. The journey.
    {
      const name = 'portal journey against the mock API (add, deliver, fail, resend, recover, secret, disable/enable, log out)';
      const r = await run(['portal.mjs', '--logout', link, receiver, control, out]);
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      const res = lastJson(r.stdout);
      let ok = r.code === 0 && res?.ok === true && res.recovered >= 1 && res.message_ids?.length === 3 && res.logged_out === true;
      let detail = ok ? '' : `portal.mjs exit ${r.code}`;
      for (const f of ['list', 'deliveries', 'recovered', 'secret', 'final'].map(n => join(out, `portal-${n}.png`))) {
        try { if (statSync(f).size < 1000) throw new Error('tiny'); } catch { ok = false; detail += ` missing screenshot ${f}`; }
      }
      record(name, ok, detail.trim());
    }
    // 3. The read-only link.
    {
      const r = await run(['portal.mjs', '--read-only', readOnlyLink, out]);
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      const ok = r.code === 0 && lastJson(r.stdout)?.ok === true;
      record('portal read-only link: badge, no write control, writes refused', ok, ok ? '' : `portal.mjs --read-only exit ${r.code}`);
    }
    // 4. A bad link.
    {
      const r = await run(['portal.mjs', '--invalid', invalidLink, out]);
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      const ok = r.code === 0 && lastJson(r.stdout)?.ok === true;
      record('portal bad link: "invalid, expired or revoked" and nothing else', ok, ok ? '' : `portal.mjs --invalid exit ${r.code}`);
    }
  } finally {
    mock.child.removeAllListeners('exit');
    mock.child.kill('SIGTERM');
  }
}

const failed = results.filter(x => !x).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
