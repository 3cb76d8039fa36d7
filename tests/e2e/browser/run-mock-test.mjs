// `npm test`: the operator page against the in-memory mock API.
// 1. admin.mjs with a missing Chromium must fail (exit 1, clear message);
// 2. mock-server.mjs (under the stage prefix /Prod) + admin.mjs opened with the
//    mock's operator link must pass (exit 0, {"ok":true,...}): the key traded
//    for a session cookie, every POST with its CSRF token, the strict CSP.
// Screenshots go to out/ (ignored by git). Exits non-zero on any failure.
import { spawn } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'out');
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

function startMock() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'mock-server.mjs'), '--prefix', '/Prod'], { stdio: ['ignore', 'pipe', 'inherit'] });
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
  const r = await run(['admin.mjs', 'http://127.0.0.1:9', '00000000-0000-0000-0000-000000000000', join(out, 'none.png')],
    { CHROMIUM: '/nonexistent/chromium' });
  const ok = r.code === 1 && /Chromium not found/.test(r.stdout) && !/"ok":true/.test(r.stdout);
  record('admin.mjs fails when Chromium is missing', ok, ok ? '' : `exit ${r.code}: ${r.stdout}${r.stderr}`);
}

// 2. The page against the mock API, opened with an operator link.
let mock;
try {
  mock = await startMock();
  const shot = join(out, 'admin.png');
  const r = await run(['admin.mjs', mock.info.link, mock.info.quarantined_id, shot, mock.info.disabled_destination]);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  let ok = r.code === 0 && /^\{"ok":true/m.test(r.stdout) && /"link":true/.test(r.stdout) && /"csp":true/.test(r.stdout);
  let detail = ok ? '' : `admin.mjs exit ${r.code}`;
  for (const f of [shot, join(out, 'admin-after.png')]) {
    try { if (statSync(f).size < 1000) throw new Error('tiny'); } catch { ok = false; detail += ` missing screenshot ${f}`; }
  }
  record('admin page against the mock API via an operator link (session, CSRF, CSP; tenants, replay, enable)', ok, detail.trim());
} catch (e) {
  record('admin page against the mock API via an operator link (session, CSRF, CSP; tenants, replay, enable)', false, e.message);
} finally {
  if (mock) { mock.child.removeAllListeners('exit'); mock.child.kill('SIGTERM'); }
}

const failed = results.filter(x => !x).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
