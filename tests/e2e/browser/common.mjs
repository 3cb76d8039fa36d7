// What the scripts here share (see README.md): the browser checks' harness
// (admin.mjs, portal.mjs), the mock-test runners' helpers (run-*.mjs) and the
// mock servers' HTTP plumbing (*mock-server.mjs). Nothing runs on import.
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const firstLine = e => String(e && e.message || e).split('\n')[0];

// ---- browser checks ----

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// The life of one check `script`: it fails at most once -- {"ok":false,"error"} on
// stdout, "<script>: FAILED: …" on stderr, exit 1 -- on a thrown error, an
// uncaught one, or after `timeoutMs`; the browser and its temporary profile go
// either way. Collects the page's errors, console errors and CSP violations.
export function harness(script, timeoutMs) {
  let userDataDir = null;
  const h = {
    started: Date.now(),
    context: null,
    finished: false,
    expectingErrors: false,     // console errors are not collected while set
    pageErrors: [],
    consoleErrors: [],
    cspViolations: [],
  };
  const cleanup = () => {
    if (userDataDir) {
      try { rmSync(userDataDir, { recursive: true, force: true }); } catch { /* best effort */ }
      userDataDir = null;
    }
  };
  h.fail = message => {
    if (h.finished) return;
    h.finished = true;
    process.stdout.write(JSON.stringify({ ok: false, error: message }) + '\n');
    process.stderr.write(`${script}: FAILED: ${message}\n`);
    const done = () => { cleanup(); process.exit(1); };
    if (h.context) h.context.close().then(done, done); else done();
    setTimeout(done, 5000).unref();
  };
  process.on('uncaughtException', e => h.fail(`uncaught: ${e && e.stack || e}`));
  process.on('unhandledRejection', e => h.fail(`unhandled rejection: ${e && e.stack || e}`));
  setTimeout(() => h.fail(`gave up after ${timeoutMs / 1000} s`), timeoutMs).unref();

  // Chromium ($CHROMIUM or /usr/bin/chromium) on a fresh profile hookbox-<profile>-chromium-*;
  // returns its page, with the collectors attached.
  h.launch = async ({ profile, options = {}, pageError = e => String(e && e.message || e) }) => {
    const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
    try {
      accessSync(executablePath, constants.X_OK);
    } catch {
      throw new Error(`Chromium not found or not executable at ${executablePath} ` +
        '(install it with `apt-get install -y chromium`, or set CHROMIUM to its path)');
    }
    let chromium;
    try {
      ({ chromium } = await import('playwright-core'));
    } catch (e) {
      throw new Error(`cannot load playwright-core (run \`npm ci\` in tests/e2e/browser): ${e.message}`);
    }
    userDataDir = mkdtempSync(join(tmpdir(), `hookbox-${profile}-chromium-`));
    try {
      h.context = await chromium.launchPersistentContext(userDataDir, {
        executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 30_000,
        viewport: { width: 1360, height: 900 }, ...options,
      });
    } catch (e) {
      throw new Error(`could not start Chromium at ${executablePath}: ${firstLine(e)}`);
    }
    await h.context.exposeBinding('__hookboxCspViolation', (_source, text) => { h.cspViolations.push(String(text)); });
    await h.context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', e => {
        window.__hookboxCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile || 'page'}:${e.lineNumber})`);
      }, true);
    });
    const page = h.context.pages()[0] ?? await h.context.newPage();
    page.on('pageerror', e => h.pageErrors.push(pageError(e)));
    page.on('console', m => {
      if (/Content.Security.Policy/i.test(m.text())) h.cspViolations.push(m.text());
      else if (m.type() === 'error' && !h.expectingErrors) h.consoleErrors.push(m.text());
    });
    return page;
  };

  // Success: closes the browser, prints {"ok":true,...fields,"console_errors","ms"}, exits 0.
  h.succeed = async fields => {
    h.finished = true;
    await h.context.close();
    h.context = null;
    cleanup();
    process.stdout.write(JSON.stringify({
      ok: true, ...fields, console_errors: h.consoleErrors, ms: Date.now() - h.started,
    }) + '\n');
    process.exit(0);
  };

  // Runs main; when it throws, screenshots the moment to failureShot() (if any) and fails.
  h.run = (main, failureShot) => main().catch(async e => {
    const path = h.context && !h.finished ? failureShot() : null;
    if (path) {
      const page = h.context.pages()[0];
      if (page) await page.screenshot({ path, fullPage: true, timeout: 5_000 }).catch(() => {});
    }
    h.fail(e && e.message || String(e));
  });
  return h;
}

// ---- the mock-test runners ----

// node <args> in this folder: {code, stdout, stderr}.
export function run(args, env = {}) {
  return new Promise(resolve => {
    const child = spawn(process.execPath, args, { cwd: here, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', d => { stdout += d; });
    child.stderr.on('data', d => { stderr += d; });
    child.on('close', code => resolve({ code, stdout, stderr }));
  });
}
// Passes a run's output on.
export function echo(r) {
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
}
export function lastJson(stdout) {
  const line = stdout.trim().split('\n').pop();
  try { return JSON.parse(line); } catch { return null; }
}
// " missing screenshot <f>" for each file absent or under 1000 bytes.
export function missingScreenshots(files) {
  let detail = '';
  for (const f of files) {
    try { if (statSync(f).size < 1000) throw new Error('tiny'); } catch { detail += ` missing screenshot ${f}`; }
  }
  return detail;
}

// "ok  <name>" / "FAIL <name>: <detail>" lines, then "<n> passed, <m> failed" and the exit.
export function tally() {
  const results = [];
  return {
    record(name, ok, detail) {
      results.push(ok);
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
    },
    finish() {
      const failed = results.filter(x => !x).length;
      console.log(`${results.length - failed} passed, ${failed} failed`);
      process.exit(failed ? 1 : 0);
    },
  };
}

// The check `script` run with a missing Chromium must fail loudly, never pass.
export async function checkChromiumMissing(t, script, args) {
  const r = await run([script, ...args], { CHROMIUM: '/nonexistent/chromium' });
  const ok = r.code === 1 && /Chromium not found/.test(r.stdout) && !/"ok":true/.test(r.stdout);
  t.record(`${script} fails when Chromium is missing`, ok, ok ? '' : `exit ${r.code}: ${r.stdout}${r.stderr}`);
}

// Starts a mock server of this folder under /Prod: {child, info} (its JSON line).
export function startMock(script) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, script), '--prefix', '/Prod'], { stdio: ['ignore', 'pipe', 'inherit'] });
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
export function stopMock(mock) {
  mock.child.removeAllListeners('exit');
  mock.child.kill('SIGTERM');
}

// ---- the mock servers ----

export const arg = name => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };
// --port N (0: any free port) and --prefix /Stage (without a trailing slash).
export const mockArgs = () => ({ port: Number(arg('--port') ?? 0), prefix: (arg('--prefix') ?? '').replace(/\/+$/, '') });
export const hex = n => randomBytes(n).toString('hex');
export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
export const SECURITY = { 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY', 'cache-control': 'no-store' };

// send(res, status, body, headers): JSON with `base` headers; problem(): {code, detail}.
export function responder(base) {
  const send = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...base, ...headers });
    res.end(body === undefined ? '' : JSON.stringify(body));
  };
  return { send, problem: (res, status, code, detail, headers) => send(res, status, { code, detail }, headers) };
}
export function readBody(req) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on('data', c => { size += c.length; if (size > 65536) { reject(new Error('too large')); req.destroy(); } else chunks.push(c); });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
export function cookies(req) {
  return Object.fromEntries((req.headers.cookie ?? '').split(';').map(c => c.trim().split('=')).filter(p => p.length === 2));
}

// shared/<page>/: its three files, read on every request (edits show on reload).
export function pageAssets(page) {
  const files = {
    '': ['index.html', 'text/html; charset=utf-8'],
    [`${page}.js`]: [`${page}.js`, 'text/javascript; charset=utf-8'],
    [`${page}.css`]: [`${page}.css`, 'text/css; charset=utf-8'],
  };
  const dir = new URL(`../../../shared/${page}/`, import.meta.url);
  return {
    files,
    async serve(req, res, rest) {
      const [file, type] = files[rest];
      const text = await readFile(new URL(file, dir));
      res.writeHead(200, { 'content-type': type, ...SECURITY });
      return res.end(req.method === 'HEAD' ? undefined : text);
    },
  };
}

// Listens on 127.0.0.1:port, prints ready(origin) as one JSON line, answers
// internal(e) with a 500 when handle throws, stops on SIGTERM / SIGINT.
export function serve({ port, handle, send, internal, ready, onStop = () => {} }) {
  const server = http.createServer((req, res) => {
    handle(req, res).catch(e => { if (!res.headersSent) send(res, 500, internal(String(e && e.message || e))); else res.end(); });
  });
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(JSON.stringify(ready(`http://127.0.0.1:${server.address().port}`)) + '\n');
  });
  const stop = () => { onStop(); server.close(); server.closeAllConnections?.(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return server;
}
