// Embeddings through infergate with the real clients (issue 17): the OpenAI Node SDK's
// `embeddings.create` and the `ollama` client's `embed` / `embeddings`, pinned in package.json,
// against emulators with embedding models: vLLM-flavoured and SGLang OpenAI layers, Ollama and
// text-embeddings-inference. Run `npm ci` in tests/clients once, then
// `node --test tests/clients/embeddings.test.mjs`.
//
// What the clients put on the wire (node_modules/openai/resources/embeddings.js,
// node_modules/ollama/dist/browser.mjs):
// - openai 6.x `embeddings.create(body)`: POST /v1/embeddings with the body as given, plus
//   `encoding_format: "base64"` when the caller named none; the answer's base64 strings are then
//   decoded by the SDK (toFloat32Array: little-endian float32) into number arrays. A caller that
//   names `encoding_format` gets the answer as it is.
// - ollama 0.6.x `embed(req)`: POST /api/embed with the request as the body, the JSON answer
//   returned as it is; `embeddings(req)`: POST /api/embeddings likewise.
//
// Expected vectors never come from the proxy: each is asked of the emulator directly in its own
// API (as floats), so a lost, reordered, re-rounded or mis-encoded value fails the check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { BadRequestError } from 'openai';
import { Ollama } from 'ollama';
import { postJson, startStack } from './harness.mjs';

const MODEL = 'BAAI/bge-small-en-v1.5';
const TEXTS = ['The sky is blue because of Rayleigh scattering', 'Grass is green', 'héllo ☃'];

// A float as the SDK's base64 decoding gives it: the nearest float32.
const f32 = (values) => Array.from(new Float32Array(values));

// The backend's own vectors for `input`, asked in its API: { vectors, tokens }.
async function direct(stack, dialect, input) {
  const base = stack.emulator.base;
  if (dialect === 'ollama') {
    const { status, body } = await postJson(`${base}/api/embed`, { model: OLLAMA_MODEL, input });
    assert.equal(status, 200, JSON.stringify(body));
    return { vectors: body.embeddings, tokens: body.prompt_eval_count };
  }
  if (dialect === 'tei') {
    const res = await fetch(`${base}/embed`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ inputs: input }),
    });
    assert.equal(res.status, 200);
    return { vectors: await res.json(), tokens: Number(res.headers.get('x-compute-tokens')) };
  }
  const { status, body } = await postJson(`${base}/v1/embeddings`,
    { model: MODEL, input, encoding_format: 'float' });
  assert.equal(status, 200, JSON.stringify(body));
  const data = [...body.data].sort((a, b) => a.index - b.index);
  return { vectors: data.map((d) => d.embedding), tokens: body.usage.prompt_tokens };
}

// The emulator in `dialect` with an embedding model. Ollama names its models with a tag (an
// untagged one is listed as "<name>:latest").
const OLLAMA_MODEL = 'nomic-embed-text:v1.5';
const BACKENDS = [
  { name: 'vLLM', dialect: 'openai', model: MODEL, args: ['--embeddings'] },
  { name: 'SGLang', dialect: 'sglang', model: MODEL, args: ['--embeddings'] },
  { name: 'Ollama', dialect: 'ollama', model: OLLAMA_MODEL, args: ['--embeddings'] },
  { name: 'TEI', dialect: 'tei', model: MODEL, args: [] },
];

for (const backend of BACKENDS) {
  describe(`embeddings through infergate in front of ${backend.name}`, () => {
    let stack;
    let openai;
    let ollama;
    const { model } = backend;

    before(async () => {
      stack = await startStack({ dialect: backend.dialect, model,
        emulatorArgs: backend.args });
      openai = new OpenAI({ baseURL: `${stack.proxy.base}/v1`, apiKey: 'unused', maxRetries: 0 });
      ollama = new Ollama({ host: stack.proxy.base });
    });

    after(async () => {
      if (stack) await stack.stop();
    });

    test('openai embeddings.create, default encoding (base64, decoded by the SDK)', async () => {
      const ref = await direct(stack, backend.dialect, TEXTS);
      const res = await openai.embeddings.create({ model, input: TEXTS });
      assert.equal(res.object, 'list');
      assert.equal(res.model, model);
      assert.deepEqual(res.data.map((d) => d.index), [0, 1, 2]);
      // The SDK decoded base64 into float32 values: the backend's, to the last bit.
      assert.deepEqual(res.data.map((d) => d.embedding), ref.vectors.map(f32));
      assert.equal(res.usage.prompt_tokens, ref.tokens);
      assert.equal(res.usage.total_tokens, ref.tokens);
    });

    test('openai embeddings.create, encoding_format float: the same numbers', async () => {
      const ref = await direct(stack, backend.dialect, TEXTS);
      const res = await openai.embeddings.create({ model, input: TEXTS,
        encoding_format: 'float' });
      assert.deepEqual(res.data.map((d) => d.embedding), ref.vectors);
      const one = await openai.embeddings.create({ model, input: TEXTS[1],
        encoding_format: 'float' });
      const ref1 = await direct(stack, backend.dialect, TEXTS[1]);
      assert.equal(one.data.length, 1);
      assert.deepEqual(one.data[0].embedding, ref1.vectors[0]);
    });

    test('ollama embed: the same vectors and count', async () => {
      const ref = await direct(stack, backend.dialect, TEXTS);
      const res = await ollama.embed({ model, input: TEXTS });
      assert.deepEqual(res.embeddings, ref.vectors);
      assert.equal(res.prompt_eval_count, ref.tokens);
      assert.equal(typeof res.total_duration, 'number');
      const single = await ollama.embed({ model, input: TEXTS[0] });
      assert.deepEqual(single.embeddings, (await direct(stack, backend.dialect, TEXTS[0])).vectors);
    });

    test('a setting the backend cannot take is a 400 naming it', async (t) => {
      // What each backend lacks: SGLang reads no `normalize` (it would drop it without a word),
      // TEI has no vLLM's truncate_prompt_tokens, Ollama takes no token ids; vLLM takes all.
      const refused = {
        SGLang: [{ input: 'x', normalize: false }, 'normalize'],
        TEI: [{ input: 'x', truncate_prompt_tokens: 3 }, 'truncate_prompt_tokens'],
        Ollama: [{ input: [[1, 2, 3]] }, 'input'],
      }[backend.name];
      if (!refused) {
        t.skip('vLLM takes every setting the SDK sends');
        return;
      }
      const [body, param] = refused;
      await assert.rejects(openai.embeddings.create({ model, ...body }), (e) => {
        assert.ok(e instanceof BadRequestError, String(e));
        assert.equal(e.param, param);
        assert.match(e.message, new RegExp(`'${param}'`));
        return true;
      });
    });
  });
}

describe('ollama embeddings (the older route) in front of Ollama: its own answer', () => {
  let stack;
  let ollama;
  before(async () => {
    stack = await startStack({ dialect: 'ollama', model: OLLAMA_MODEL,
      emulatorArgs: ['--embeddings'] });
    ollama = new Ollama({ host: stack.proxy.base });
  });
  after(async () => {
    if (stack) await stack.stop();
  });

  test('the same vector as the backend gives directly', async () => {
    const { status, body } = await postJson(`${stack.emulator.base}/api/embeddings`,
      { model: OLLAMA_MODEL, prompt: TEXTS[0] });
    assert.equal(status, 200, JSON.stringify(body));
    const res = await ollama.embeddings({ model: OLLAMA_MODEL, prompt: TEXTS[0] });
    assert.deepEqual(res, body);
  });
});
