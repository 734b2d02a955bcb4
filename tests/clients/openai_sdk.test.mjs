// The official OpenAI Node SDK (openai 6.x, pinned exactly in package.json) against infergate in
// front of an SGLang-dialect emulator (the main target: the proxy turns /v1/completions into
// /generate there) and, as a second suite, a vLLM-flavoured one. Run `npm ci` in tests/clients
// once, then `node --test tests/clients/`. Binaries: $INFERGATE_BIN / $INFERGATE_EMULATOR_BIN,
// else <repo>/build/proxy/infergate and <repo>/build/emulator/infergate-emulator.
//
// Expected values never come from the proxy: each one is asked of the emulator directly (the
// SGLang backend's native /generate, or the vLLM one's /v1/completions, for raw completions; the
// backend's own /v1/chat/completions for chat), so the checks fail if the proxy loses,
// duplicates, reorders or miscounts anything.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { collect, postJson, sameBadRequest, startStack } from './harness.mjs';

const MODEL = 'sglang-emu/Qwen2.5-0.5B-Instruct';

// One suite per backend dialect. The brief's target is the SGLang backend, where the proxy
// translates /v1/completions into /generate; the vLLM-flavoured one guards the other direction.
function suite(dialect) {
  let stack;
  let emulator;
  let proxy;
  let client;

  // What the backend itself says for a raw-text completion, asked directly in its own dialect:
  // { texts: [per choice], finishes: ['length'|'stop'], completion_tokens (sum), prompt_tokens }.
  async function backendCompletion({ prompt, max_tokens, temperature, stop, n }) {
    if (dialect === 'sglang') {
      const sp = { max_new_tokens: max_tokens, temperature };
      if (stop) sp.stop = stop;
      if (n) sp.n = n;
      const { status, body } = await postJson(`${emulator.base}/generate`,
        { text: prompt, sampling_params: sp });
      assert.equal(status, 200, JSON.stringify(body));
      const items = Array.isArray(body) ? body : [body];
      return {
        texts: items.map((i) => i.text),
        finishes: items.map((i) => i.meta_info.finish_reason.type),
        completion_tokens: items.reduce((s, i) => s + i.meta_info.completion_tokens, 0),
        prompt_tokens: items[0].meta_info.prompt_tokens,
      };
    }
    const req = { model: MODEL, prompt, max_tokens, temperature };
    if (stop) req.stop = stop;
    if (n) req.n = n;
    const { status, body } = await postJson(`${emulator.base}/v1/completions`, req);
    assert.equal(status, 200, JSON.stringify(body));
    const choices = [...body.choices].sort((a, b) => a.index - b.index);
    return {
      texts: choices.map((c) => c.text),
      finishes: choices.map((c) => c.finish_reason),
      completion_tokens: body.usage.completion_tokens,
      prompt_tokens: body.usage.prompt_tokens,
    };
  }

  // Chat goes through a chat template, so the reference is the backend's own chat route (both
  // emulator dialects serve /v1/chat/completions) for the same request.
  async function backendChat(body) {
    const res = await postJson(`${emulator.base}/v1/chat/completions`, { model: MODEL, ...body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  describe(`openai node SDK through infergate (${dialect} backend)`, () => {
    before(async () => {
      // The proxy probes the backend at start: ready once /v1/models lists the served model.
      stack = await startStack({ dialect, model: MODEL });
      ({ emulator, proxy } = stack);
      client = new OpenAI({ baseURL: `${proxy.base}/v1`, apiKey: 'x', maxRetries: 0,
        timeout: 20_000 });
    });

    after(async () => {
      if (stack) await stack.stop();
    });

    test('models.list includes the served model', async () => {
      const ids = [];
      for await (const m of client.models.list()) {
        assert.equal(m.object, 'model');
        ids.push(m.id);
      }
      assert.ok(ids.includes(MODEL), `models: ${JSON.stringify(ids)}`);
    });

    test('models.retrieve of the served model (its id contains "/")', async () => {
      // The SDK percent-encodes the path parameter: GET /v1/models/sglang-emu%2FQwen2.5-...
      // A Hugging Face style id always has a '/', so the route must decode it.
      const m = await client.models.retrieve(MODEL);
      assert.equal(m.id, MODEL);
      assert.equal(m.object, 'model');
      await assert.rejects(client.models.retrieve('no-such-model'), (err) => {
        assert.ok(err instanceof NotFoundError, `got ${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 404);
        return true;
      });
    });

    test('completions.create, non-streaming', async () => {
      const prompt = 'The capital of France is';
      const want = await backendCompletion({ prompt, max_tokens: 12, temperature: 0 });
      const res = await client.completions.create({
        model: MODEL, prompt, max_tokens: 12, temperature: 0,
      });
      assert.equal(res.object, 'text_completion');
      assert.equal(res.model, MODEL);
      assert.equal(res.choices.length, 1);
      assert.equal(res.choices[0].index, 0);
      assert.equal(res.choices[0].text, want.texts[0]);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage.completion_tokens, want.completion_tokens);
      assert.equal(res.usage.completion_tokens, 12);
      assert.equal(res.usage.prompt_tokens, want.prompt_tokens);
      assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + res.usage.completion_tokens);
    });

    test('completions.create, streaming', async () => {
      const prompt = 'Once upon a time in a small village';
      const want = await backendCompletion({ prompt, max_tokens: 10, temperature: 0 });
      const chunks = await collect(await client.completions.create({
        model: MODEL, prompt, max_tokens: 10, temperature: 0, stream: true,
      }));
      assert.ok(chunks.length >= 2, `only ${chunks.length} chunks`);
      for (const c of chunks) {
        assert.equal(c.object, 'text_completion');
        assert.equal(c.choices.length, 1, `chunk without exactly one choice: ${JSON.stringify(c)}`);
        assert.equal(c.usage ?? null, null, 'usage on a chunk without include_usage');
      }
      assert.equal(chunks.map((c) => c.choices[0].text).join(''), want.texts[0]);
      const finishes = chunks.map((c) => c.choices[0].finish_reason).filter((f) => f != null);
      assert.deepEqual(finishes, ['length']);
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    });

    test('completions.create, streaming with a stop string and include_usage', async () => {
      // The stop string makes the count something only the backend knows.
      const prompt = 'Write down the words that come to mind';
      const full = await backendCompletion({ prompt, max_tokens: 16, temperature: 0 });
      const stop = ' ' + full.texts[0].trim().split(' ')[6];
      const want = await backendCompletion({ prompt, max_tokens: 16, temperature: 0,
        stop: [stop] });
      assert.deepEqual(want.finishes, ['stop']);
      assert.ok(want.completion_tokens < 16);
      const chunks = await collect(await client.completions.create({
        model: MODEL, prompt, max_tokens: 16, temperature: 0, stop: [stop], stream: true,
        stream_options: { include_usage: true },
      }));
      const last = chunks.at(-1);
      assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
      assert.equal(last.usage.completion_tokens, want.completion_tokens);
      assert.equal(last.usage.prompt_tokens, want.prompt_tokens);
      assert.equal(last.usage.total_tokens,
        last.usage.prompt_tokens + last.usage.completion_tokens);
      const body = chunks.slice(0, -1);
      for (const c of body) {
        assert.equal(c.choices.length, 1);
        assert.equal(c.usage ?? null, null, 'usage only on the final chunk');
      }
      assert.equal(body.map((c) => c.choices[0].text).join(''), want.texts[0]);
      assert.equal(body.at(-1).choices[0].finish_reason, 'stop');
    });

    test('chat.completions.create, non-streaming', async () => {
      const messages = [
        { role: 'system', content: 'You are a terse assistant.' },
        { role: 'user', content: 'List three colours.' },
      ];
      const want = await backendChat({ messages, max_tokens: 9, temperature: 0 });
      const res = await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 9, temperature: 0,
      });
      assert.equal(res.object, 'chat.completion');
      assert.equal(res.model, MODEL);
      assert.equal(res.choices.length, 1);
      assert.equal(res.choices[0].message.role, 'assistant');
      assert.equal(res.choices[0].message.content, want.choices[0].message.content);
      assert.ok(res.choices[0].message.content.length > 0);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage.completion_tokens, want.usage.completion_tokens);
      assert.equal(res.usage.prompt_tokens, want.usage.prompt_tokens);
    });

    test('chat.completions.create, streaming without stream_options', async () => {
      const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
      const want = await backendChat({ messages, max_tokens: 8, temperature: 0 });
      const chunks = await collect(await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 8, temperature: 0, stream: true,
      }));
      assert.ok(chunks.length >= 2);
      assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'every chunk carries the same id');
      for (const c of chunks) {
        assert.equal(c.object, 'chat.completion.chunk');
        // Without include_usage no usage-only chunk (empty choices) may reach the client: code
        // like chunk.choices[0].delta would throw on it.
        assert.equal(c.choices.length, 1, `chunk with ${c.choices.length} choices: ` +
          JSON.stringify(c));
        assert.equal(c.usage ?? null, null, 'usage without include_usage');
      }
      assert.equal(chunks[0].choices[0].delta.role, 'assistant');
      const text = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
      assert.equal(text, want.choices[0].message.content);
      const finishes = chunks.map((c) => c.choices[0].finish_reason).filter((f) => f != null);
      assert.deepEqual(finishes, ['length']);
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    });

    test('chat.completions.create, streaming with include_usage', async () => {
      // A stop string makes the count differ from max_tokens.
      const messages = [{ role: 'user', content: 'Describe a mountain at dawn.' }];
      const full = await backendChat({ messages, max_tokens: 16, temperature: 0 });
      const stop = ' ' + full.choices[0].message.content.trim().split(' ')[5];
      const want = await backendChat({ messages, max_tokens: 16, temperature: 0, stop: [stop] });
      assert.equal(want.choices[0].finish_reason, 'stop');
      assert.ok(want.usage.completion_tokens < 16);
      const chunks = await collect(await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 16, temperature: 0, stop: [stop], stream: true,
        stream_options: { include_usage: true },
      }));
      const last = chunks.at(-1);
      assert.deepEqual(last.choices, []);
      assert.equal(last.usage.completion_tokens, want.usage.completion_tokens);
      assert.equal(last.usage.prompt_tokens, want.usage.prompt_tokens);
      assert.equal(last.usage.total_tokens, want.usage.total_tokens);
      const body = chunks.slice(0, -1);
      for (const c of body) {
        assert.equal(c.choices.length, 1);
        assert.equal(c.usage ?? null, null, 'usage only on the final chunk');
      }
      assert.equal(body.map((c) => c.choices[0].delta.content ?? '').join(''),
        want.choices[0].message.content);
      assert.equal(body.at(-1).choices[0].finish_reason, 'stop');
    });

    test('n=2: chat non-streaming, completions streaming', async () => {
      const messages = [{ role: 'user', content: 'Name a fruit.' }];
      const want = await backendChat({ messages, max_tokens: 6, temperature: 0.7, n: 2 });
      const res = await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 6, temperature: 0.7, n: 2,
      });
      assert.deepEqual(res.choices.map((c) => c.index), [0, 1]);
      assert.deepEqual(res.choices.map((c) => c.message.content),
        want.choices.map((c) => c.message.content));
      assert.notEqual(res.choices[0].message.content, res.choices[1].message.content);
      assert.equal(res.usage.completion_tokens, want.usage.completion_tokens);
      assert.equal(res.usage.completion_tokens, 12);

      const prompt = 'A list of animals:';
      const items = await backendCompletion({ prompt, max_tokens: 7, temperature: 0.7, n: 2 });
      assert.equal(items.texts.length, 2);
      const chunks = await collect(await client.completions.create({
        model: MODEL, prompt, max_tokens: 7, temperature: 0.7, n: 2, stream: true,
        stream_options: { include_usage: true },
      }));
      const texts = ['', ''];
      const finish = [null, null];
      for (const c of chunks.slice(0, -1)) {
        assert.equal(c.choices.length, 1);
        const { index, text, finish_reason: f } = c.choices[0];
        texts[index] += text;
        if (f != null) finish[index] = f;
      }
      assert.deepEqual(texts, items.texts);
      assert.deepEqual(finish, ['length', 'length']);
      assert.equal(chunks.at(-1).usage.completion_tokens, items.completion_tokens);
      // The prompt is counted once, not once per choice.
      assert.equal(chunks.at(-1).usage.prompt_tokens, items.prompt_tokens);
    });

    for (const [what, extra] of [['n: 0', { n: 0 }], ['temperature: 5', { temperature: 5 }]]) {
      for (const route of ['chat', 'completions']) {
        test(`bad request (${what}) on ${route} raises BadRequestError with the proxy's message`,
          async () => {
            const body = route === 'chat'
              ? { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
                ...extra }
              : { model: MODEL, prompt: 'hi', max_tokens: 4, ...extra };
            const url = `${proxy.base}/v1/${route === 'chat' ? 'chat/' : ''}completions`;
            const raw = await postJson(url, body);
            assert.equal(raw.status, 400, JSON.stringify(raw.body));
            assert.equal(typeof raw.body.error?.message, 'string', JSON.stringify(raw.body));
            const call = route === 'chat'
              ? client.chat.completions.create(body)
              : client.completions.create(body);
            await assert.rejects(call, sameBadRequest(raw, BadRequestError));
          });
      }
    }
  });
}

suite('sglang');
suite('openai');
