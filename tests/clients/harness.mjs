// Shared by the node:test client checks: starts infergate-emulator and infergate on port 0, waits
// for the proxy to list the served model, and stops both. Binaries: $INFERGATE_BIN /
// $INFERGATE_EMULATOR_BIN, else <repo>/build/proxy/infergate and
// <repo>/build/emulator/infergate-emulator.
//
// Each process prints exactly one `listening on HOST:PORT` line on stdout once bound; that line
// (not a fixed sleep) tells us the port. The proxy is ready when its GET /v1/models lists the
// model (it probes the backend at start); that is polled against a deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');
export const PROXY_BIN = process.env.INFERGATE_BIN || resolve(REPO, 'build/proxy/infergate');
export const EMULATOR_BIN =
  process.env.INFERGATE_EMULATOR_BIN || resolve(REPO, 'build/emulator/infergate-emulator');
export const START_TIMEOUT_MS = 10_000;

const children = [];

export function startProcess(name, argv) {
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const lines = createInterface({ input: proc.stdout });
  return new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: no "listening on" line within ` +
      `${START_TIMEOUT_MS} ms; stderr:\n${stderr}`)), START_TIMEOUT_MS);
    proc.on('error', (e) => { clearTimeout(timer); reject(new Error(`${name}: ${e.message}`)); });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before listening; stderr:\n${stderr}`));
    });
    lines.once('line', (line) => {
      clearTimeout(timer);
      const m = /^listening on (.+):(\d+)$/.exec(line.trim());
      if (!m) {
        reject(new Error(`${name}: unexpected first line ${JSON.stringify(line)}`));
        return;
      }
      resolvePort({ proc, base: `http://127.0.0.1:${m[2]}`, stderr: () => stderr });
    });
  });
}

export async function stopProcess(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

// Never leave an emulator or proxy behind, however this process ends (short of SIGKILL).
function killChildren() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
process.on('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => { killChildren(); process.exit(1); });
}

// The emulator in `dialect` serving `model`, with the pacing every check uses (a stream is
// really paced: 5 ms to the first token, 1 ms between events) plus `args`.
export function startEmulator({ dialect, model, args = [] }) {
  return startProcess('emulator', [EMULATOR_BIN, '--listen', '127.0.0.1:0', '--dialect', dialect,
    '--model', model, '--quiet', '--ttft-ms', '5', '--itl-ms', '1', ...args]);
}

// infergate in front of `upstream` (dialect and model discovered by its probe), ready once its
// GET /v1/models lists `model`.
export async function startProxy({ upstream, model, args = [] }) {
  const proxy = await startProcess('proxy', [PROXY_BIN, '--listen', '127.0.0.1:0',
    '--upstream', upstream, ...args]);
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last;
  for (;;) {
    try {
      const res = await fetch(`${proxy.base}/v1/models`);
      const text = await res.text();
      last = `${res.status} ${text}`;
      if (res.status === 200 && JSON.parse(text).data?.some((m) => m.id === model)) break;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > deadline) {
      await stopProcess(proxy.proc);
      throw new Error(`proxy not ready: ${last}\n${proxy.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return proxy;
}

// An emulator and a proxy in front of it; `stop()` ends both (proxy first).
export async function startStack({ dialect, model, emulatorArgs = [], proxyArgs = [] }) {
  const emulator = await startEmulator({ dialect, model, args: emulatorArgs });
  let proxy;
  try {
    proxy = await startProxy({ upstream: emulator.base, model, args: proxyArgs });
  } catch (e) {
    await stopProcess(emulator.proc);
    throw e;
  }
  return {
    emulator,
    proxy,
    async stop() {
      await stopProcess(proxy.proc);
      await stopProcess(emulator.proc);
    },
  };
}

// POST a JSON body; the answer parsed as JSON (`body`), with its status and headers.
export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`POST ${url} ${JSON.stringify(body)}: ${res.status}, not JSON: ` +
      JSON.stringify(text));
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

// POST and read the raw body text (for streams and non-JSON answers).
export async function postRaw(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

// The backend's own stream, asked directly with a fault header, up to its in-band error: the text
// it streamed before the error and the error's message (the reference a client's view of the same
// fault through the proxy is compared with). `text(ev, soFar)` is the text after event `ev` (a
// delta adds to it; SGLang's cumulative text replaces it); `message(ev)` reads the error event.
// SSE `data:` lines and NDJSON records alike.
export async function nativeTextBeforeError(url, body, headers,
  { text, message = (ev) => ev.error.message }) {
  const native = await postRaw(url, body, headers);
  assert.equal(native.status, 200, native.text);
  let soFar = '';
  let error;
  for (const line of native.text.split('\n')) {
    const data = line.replace(/^data: ?/, '').trim();
    if (data === '' || data === '[DONE]') continue;
    const ev = JSON.parse(data);
    if (ev.error) {
      error = message(ev);
      break;
    }
    soFar = text(ev, soFar);
  }
  assert.equal(typeof error, 'string', native.text);
  assert.ok(soFar.length > 0, 'the backend streams some text before its error');
  return { text: soFar, message: error };
}

// The OpenAI SDK's view of a proxy 400 (`raw`: the same request posted with postJson) is that
// body exactly: a BadRequestError with its message, type and param. For assert.rejects.
export function sameBadRequest(raw, BadRequestError) {
  return (err) => {
    assert.ok(err instanceof BadRequestError, `got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.error.message, raw.body.error.message);
    assert.equal(err.message, `400 ${raw.body.error.message}`);
    assert.equal(err.type, raw.body.error.type);
    assert.equal(err.param, raw.body.error.param);
    return true;
  };
}

// Every item of an async iterable (an SDK stream), in order.
export async function collect(stream) {
  const items = [];
  for await (const item of stream) items.push(item);
  return items;
}
