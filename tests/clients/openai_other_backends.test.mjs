// The official OpenAI Node SDK (openai 6.49.0, pinned exactly in package.json) against infergate
// in front of emulators of three more backends: Ollama (`--dialect ollama`), Hugging Face TGI
// (`--dialect tgi`) and llama.cpp's llama-server (`--dialect llamacpp`). Run `npm ci` in
// tests/clients once, then `node --test tests/clients/openai_other_backends.test.mjs`.
//
// What the SDK puts on the wire (see openai_sdk.test.mjs and node_modules/openai/src):
// `POST {baseURL}/completions` and `/chat/completions` with `Authorization: Bearer <apiKey>`,
// JSON bodies as given; streams are SSE `data:` events ending with `data: [DONE]`; a non-2xx
// answer throws the status's class (BadRequestError for 400) with `error` = body.error.
//
// Expected values never come from the proxy: each one is asked of the emulator directly in the
// backend's own dialect — Ollama's POST /api/generate with `raw: true` (a plain completion) and
// POST /api/chat; TGI's POST /generate with `details: true` (prompt count from the
// `x-prompt-tokens` header) and its OpenAI-layer /v1/chat/completions; llama.cpp's POST
// /completion and its /v1/chat/completions — and put in OpenAI terms: a matched stop string is
// not part of the text (TGI keeps it in generated_text), EOS and a stop string are finish reason
// `stop`, the budget is `length`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { APIError, BadRequestError, RateLimitError } from 'openai';
import {
  collect, nativeTextBeforeError, postJson, sameBadRequest, startStack,
} from './harness.mjs';

const EOS_AFTER = 20; // the emulator's model emits EOS after this many tokens

function stripSuffix(text, stop) {
  assert.ok(text.endsWith(stop), `${JSON.stringify(text)} does not end with ${stop}`);
  return text.slice(0, text.length - stop.length);
}

// Per backend dialect: the served model name, and how to ask the backend itself for a raw
// completion and for a chat: each returns { text, finish: 'length'|'stop', prompt, completion }.
const BACKENDS = {
  ollama: {
    model: 'qwen2.5:0.5b',
    // The backend's own error for a request the emulator fails with `status:NNN`.
    fault: { path: '/api/generate', body: { prompt: 'hi', stream: false },
      message: (b) => b.error },
    // The backend's own raw completion stream (for a mid-stream fault): route, body, and the
    // text a stream event adds.
    stream: { path: '/api/generate', delta: (ev) => ev.response,
      body: (prompt, n) => ({ prompt, raw: true, stream: true, options: { num_predict: n } }) },
    async completion(base, model, { prompt, max_tokens, stop }) {
      const options = { temperature: 0 };
      if (max_tokens !== undefined) options.num_predict = max_tokens;
      if (stop) options.stop = stop;
      const { status, body } = await postJson(`${base}/api/generate`,
        { model, prompt, raw: true, stream: false, options });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.done, true);
      return { text: body.response, finish: ollamaFinish(body.done_reason),
        prompt: body.prompt_eval_count, completion: body.eval_count };
    },
    async chat(base, model, { messages, max_tokens, stop }) {
      const options = { temperature: 0 };
      if (max_tokens !== undefined) options.num_predict = max_tokens;
      if (stop) options.stop = stop;
      const { status, body } = await postJson(`${base}/api/chat`,
        { model, messages, stream: false, options });
      assert.equal(status, 200, JSON.stringify(body));
      return { text: body.message.content, finish: ollamaFinish(body.done_reason),
        prompt: body.prompt_eval_count, completion: body.eval_count };
    },
  },
  tgi: {
    model: 'Qwen/Qwen2.5-0.5B-Instruct',
    fault: { path: '/generate', body: { inputs: 'hi' }, message: (b) => b.error },
    stream: { path: '/generate_stream', delta: (ev) => (ev.token.special ? '' : ev.token.text),
      body: (inputs, n) => ({ inputs, parameters: { max_new_tokens: n } }) },
    async completion(base, model, { prompt, max_tokens, stop }) {
      const parameters = { details: true, do_sample: false };
      if (max_tokens !== undefined) parameters.max_new_tokens = max_tokens;
      if (stop) parameters.stop = stop;
      const { status, body, headers } = await postJson(`${base}/generate`,
        { inputs: prompt, parameters });
      assert.equal(status, 200, JSON.stringify(body));
      const f = body.details.finish_reason;
      assert.ok(['length', 'eos_token', 'stop_sequence'].includes(f), f);
      let text = body.generated_text;
      if (f === 'stop_sequence') text = stripSuffix(text, stop.find((s) => text.endsWith(s)));
      const promptTokens = Number(headers.get('x-prompt-tokens'));
      assert.ok(Number.isInteger(promptTokens) && promptTokens > 0,
        `x-prompt-tokens: ${headers.get('x-prompt-tokens')}`);
      return { text, finish: f === 'length' ? 'length' : 'stop', prompt: promptTokens,
        completion: body.details.generated_tokens };
    },
    chat: openaiLayerChat,
  },
  llamacpp: {
    model: 'qwen2.5-0.5b-instruct-q8_0.gguf',
    fault: { path: '/completion', body: { prompt: 'hi' }, message: (b) => b.error.message },
    stream: { path: '/completion', delta: (ev) => ev.content,
      body: (prompt, n) => ({ prompt, n_predict: n, stream: true }) },
    async completion(base, model, { prompt, max_tokens, stop }) {
      const req = { prompt, temperature: 0 };
      if (max_tokens !== undefined) req.n_predict = max_tokens;
      if (stop) req.stop = stop;
      const { status, body } = await postJson(`${base}/completion`, req);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.stop, true);
      assert.ok(['limit', 'eos', 'word'].includes(body.stop_type), body.stop_type);
      return { text: body.content, finish: body.stop_type === 'limit' ? 'length' : 'stop',
        prompt: body.tokens_evaluated, completion: body.tokens_predicted };
    },
    chat: openaiLayerChat,
  },
};

function ollamaFinish(doneReason) {
  assert.ok(doneReason === 'length' || doneReason === 'stop', `done_reason ${doneReason}`);
  return doneReason;
}

// TGI and llama.cpp serve chat on their own OpenAI layer; the proxy sends chat there.
async function openaiLayerChat(base, model, { messages, max_tokens, stop }) {
  const req = { model, messages, temperature: 0 };
  if (max_tokens !== undefined) req.max_tokens = max_tokens;
  if (stop) req.stop = stop;
  const { status, body } = await postJson(`${base}/v1/chat/completions`, req);
  assert.equal(status, 200, JSON.stringify(body));
  const f = body.choices[0].finish_reason;
  let text = body.choices[0].message.content;
  // TGI's layer leaks its native finish names (stop_sequence; eos_token before 2.3) and, like
  // TGI native, keeps the matched stop string in the text (api-dialects §5.7, §10.6): in OpenAI
  // terms that is finish_reason stop and a text without the stop string.
  if (f === 'stop_sequence') text = stripSuffix(text, stop.find((s) => text.endsWith(s)));
  return { text, finish: f === 'length' ? 'length' : 'stop',
    prompt: body.usage.prompt_tokens, completion: body.usage.completion_tokens };
}

function suite(dialect) {
  const { model: MODEL, completion, chat, fault, stream: nativeStream } = BACKENDS[dialect];
  let stack;
  let client;
  const backendCompletion = (req) => completion(stack.emulator.base, MODEL, req);
  const backendChat = (req) => chat(stack.emulator.base, MODEL, req);

  describe(`openai node SDK through infergate (${dialect} backend)`, () => {
    before(async () => {
      stack = await startStack({ dialect, model: MODEL,
        emulatorArgs: ['--eos-after', String(EOS_AFTER)] });
      client = new OpenAI({ baseURL: `${stack.proxy.base}/v1`, apiKey: 'x', maxRetries: 0,
        timeout: 20_000 });
    });

    after(async () => {
      if (stack) await stack.stop();
    });

    test('completions.create, non-streaming, stops on max_tokens', async () => {
      const prompt = 'The capital of France is';
      const want = await backendCompletion({ prompt, max_tokens: 12 });
      assert.equal(want.finish, 'length');
      const res = await client.completions.create({ model: MODEL, prompt, max_tokens: 12,
        temperature: 0 });
      assert.equal(res.object, 'text_completion');
      assert.ok(res.id, 'a non-empty id (the proxy makes one where the backend has none)');
      assert.equal(res.model, MODEL);
      assert.equal(res.choices.length, 1);
      assert.equal(res.choices[0].index, 0);
      assert.equal(res.choices[0].text, want.text);
      assert.ok(res.choices[0].text.length > 0);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage.completion_tokens, 12);
      assert.equal(res.usage.completion_tokens, want.completion);
      assert.equal(res.usage.prompt_tokens, want.prompt);
      assert.equal(res.usage.total_tokens, want.prompt + want.completion);
    });

    test('completions.create, non-streaming, ends on EOS (finish_reason stop)', async () => {
      const prompt = 'Tell me everything';
      const want = await backendCompletion({ prompt, max_tokens: 40 });
      assert.equal(want.finish, 'stop', 'the backend ends this one on EOS');
      assert.ok(want.completion < 40);
      const res = await client.completions.create({ model: MODEL, prompt, max_tokens: 40,
        temperature: 0 });
      assert.equal(res.choices[0].text, want.text);
      assert.equal(res.choices[0].finish_reason, 'stop');
      assert.equal(res.usage.completion_tokens, want.completion);
      assert.equal(res.usage.prompt_tokens, want.prompt);
    });

    test('completions.create, streaming', async () => {
      const prompt = 'Once upon a time in a small village';
      const want = await backendCompletion({ prompt, max_tokens: 10 });
      const chunks = await collect(await client.completions.create({ model: MODEL, prompt,
        max_tokens: 10, temperature: 0, stream: true }));
      assert.ok(chunks.length > 1, `only ${chunks.length} chunks: not streamed`);
      for (const c of chunks) {
        assert.equal(c.object, 'text_completion');
        assert.equal(c.choices.length, 1, `chunk without exactly one choice: ${JSON.stringify(c)}`);
        assert.equal(c.usage ?? null, null, 'usage on a chunk without include_usage');
        assert.ok(c.id, 'a non-empty id');
      }
      assert.equal(chunks.map((c) => c.choices[0].text).join(''), want.text);
      const finishes = chunks.map((c) => c.choices[0].finish_reason).filter((f) => f != null);
      assert.deepEqual(finishes, ['length']);
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    });

    test('completions.create, streaming with a stop string and include_usage', async () => {
      const prompt = 'Write down the words that come to mind';
      const full = await backendCompletion({ prompt, max_tokens: 16 });
      const stop = ' ' + full.text.trim().split(' ')[6];
      const want = await backendCompletion({ prompt, max_tokens: 16, stop: [stop] });
      assert.equal(want.finish, 'stop');
      assert.ok(want.completion < 16);
      const chunks = await collect(await client.completions.create({ model: MODEL, prompt,
        max_tokens: 16, temperature: 0, stop: [stop], stream: true,
        stream_options: { include_usage: true } }));
      const last = chunks.at(-1);
      assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
      assert.equal(last.usage.completion_tokens, want.completion);
      assert.equal(last.usage.prompt_tokens, want.prompt);
      assert.equal(last.usage.total_tokens, want.prompt + want.completion);
      const body = chunks.slice(0, -1);
      assert.ok(body.length > 1, `only ${body.length} content chunks: not streamed`);
      for (const c of body) {
        assert.equal(c.choices.length, 1);
        assert.equal(c.usage ?? null, null, 'usage only on the final chunk');
      }
      assert.equal(body.map((c) => c.choices[0].text).join(''), want.text);
      assert.equal(body.at(-1).choices[0].finish_reason, 'stop');
    });

    test('chat.completions.create, non-streaming', async () => {
      const messages = [
        { role: 'system', content: 'You are a terse assistant.' },
        { role: 'user', content: 'List three colours.' },
      ];
      const want = await backendChat({ messages, max_tokens: 9 });
      const res = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 9,
        temperature: 0 });
      assert.equal(res.object, 'chat.completion');
      assert.ok(res.id, 'a non-empty id (TGI sends "", api-dialects §10.15)');
      assert.equal(res.model, MODEL);
      assert.equal(res.choices.length, 1);
      assert.equal(res.choices[0].message.role, 'assistant');
      assert.equal(res.choices[0].message.content, want.text);
      assert.ok(res.choices[0].message.content.length > 0);
      assert.equal(res.choices[0].finish_reason, 'length');
      assert.equal(res.usage.completion_tokens, 9);
      assert.equal(res.usage.completion_tokens, want.completion);
      assert.equal(res.usage.prompt_tokens, want.prompt);
    });

    test('chat.completions.create, streaming without stream_options', async () => {
      const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
      const want = await backendChat({ messages, max_tokens: 8 });
      const chunks = await collect(await client.chat.completions.create({ model: MODEL,
        messages, max_tokens: 8, temperature: 0, stream: true }));
      assert.ok(chunks.length > 1, `only ${chunks.length} chunks: not streamed`);
      assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'every chunk carries the same id');
      assert.ok(chunks[0].id, 'a non-empty id (TGI sends "", api-dialects §10.15)');
      for (const c of chunks) {
        assert.equal(c.object, 'chat.completion.chunk');
        assert.equal(c.choices.length, 1, `chunk with ${c.choices.length} choices: ` +
          JSON.stringify(c));
        assert.equal(c.usage ?? null, null, 'usage without include_usage');
      }
      assert.equal(chunks[0].choices[0].delta.role, 'assistant');
      const text = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
      assert.equal(text, want.text);
      const finishes = chunks.map((c) => c.choices[0].finish_reason).filter((f) => f != null);
      assert.deepEqual(finishes, ['length']);
    });

    test('chat.completions.create, streaming with include_usage, to EOS and to a stop string',
      async () => {
        const messages = [{ role: 'user', content: 'Describe a mountain at dawn.' }];
        const wantEos = await backendChat({ messages, max_tokens: 40 });
        assert.equal(wantEos.finish, 'stop', 'the backend ends this one on EOS');
        const full = await backendChat({ messages, max_tokens: 16 });
        const stop = ' ' + full.text.trim().split(' ')[5];
        const wantStop = await backendChat({ messages, max_tokens: 16, stop: [stop] });
        assert.equal(wantStop.finish, 'stop');
        assert.ok(wantStop.completion < 16);
        for (const [want, extra] of [[wantEos, { max_tokens: 40 }],
          [wantStop, { max_tokens: 16, stop: [stop] }]]) {
          const chunks = await collect(await client.chat.completions.create({ model: MODEL,
            messages, temperature: 0, stream: true, stream_options: { include_usage: true },
            ...extra }));
          const last = chunks.at(-1);
          assert.deepEqual(last.choices, []);
          assert.equal(last.usage.completion_tokens, want.completion);
          assert.equal(last.usage.prompt_tokens, want.prompt);
          assert.equal(last.usage.total_tokens, want.prompt + want.completion);
          const body = chunks.slice(0, -1);
          assert.ok(body.length > 1);
          for (const c of body) {
            assert.equal(c.choices.length, 1);
            assert.equal(c.usage ?? null, null, 'usage only on the final chunk');
          }
          assert.equal(body.map((c) => c.choices[0].delta.content ?? '').join(''), want.text);
          const finishes = body.map((c) => c.choices[0].finish_reason).filter((f) => f != null);
          assert.deepEqual(finishes, ['stop']);
        }
      });

    test('a backend that is overloaded (429) raises RateLimitError with its message',
      async () => {
        // The emulator fails any generation that carries X-Emulator-Fault (the proxy forwards
        // the header); its own error body, in its own dialect, gives the message to expect.
        const headers = { 'X-Emulator-Fault': 'status:429' };
        const native = await postJson(`${stack.emulator.base}${fault.path}`,
          { model: MODEL, ...fault.body }, headers);
        assert.equal(native.status, 429, JSON.stringify(native.body));
        const message = fault.message(native.body);
        assert.equal(typeof message, 'string', JSON.stringify(native.body));
        for (const call of [
          () => client.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 4 },
            { headers }),
          () => client.chat.completions.create({ model: MODEL, max_tokens: 4, stream: true,
            messages: [{ role: 'user', content: 'hi' }] }, { headers }),
        ]) {
          await assert.rejects(call(), (err) => {
            assert.ok(err instanceof RateLimitError, `got ${err?.constructor?.name}: ${err}`);
            assert.equal(err.status, 429);
            assert.equal(err.error.message, message);
            return true;
          });
        }
      });

    test('a backend error in mid-stream raises APIError with its message', async () => {
      // The emulator breaks a stream after two events with its dialect's in-band error when
      // asked by X-Emulator-Fault. Its own native stream gives the text and the message.
      const headers = { 'X-Emulator-Fault': 'error_event' };
      const prompt = 'Name the things you see';
      const { text: nativeText, message } = await nativeTextBeforeError(
        `${stack.emulator.base}${nativeStream.path}`,
        { model: MODEL, ...nativeStream.body(prompt, 10) }, headers,
        { text: (ev, soFar) => soFar + nativeStream.delta(ev), message: fault.message });
      const chunks = [];
      await assert.rejects((async () => {
        for await (const c of await client.completions.create({ model: MODEL, prompt,
          max_tokens: 10, stream: true }, { headers })) chunks.push(c);
      })(), (err) => {
        assert.ok(err instanceof APIError, `got ${err?.constructor?.name}: ${err}`);
        assert.equal(err.error.message, message);
        assert.equal(err.message, message);
        return true;
      });
      assert.equal(chunks.map((c) => c.choices[0].text).join(''), nativeText);
      assert.ok(chunks.every((c) => c.choices[0].finish_reason == null), 'no finish reason');
    });

    for (const route of ['chat', 'completions']) {
      test(`bad request (n: 0) on ${route} raises BadRequestError with the proxy's message`,
        async () => {
          const body = route === 'chat'
            ? { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, n: 0 }
            : { model: MODEL, prompt: 'hi', max_tokens: 4, n: 0 };
          const url = `${stack.proxy.base}/v1/${route === 'chat' ? 'chat/' : ''}completions`;
          const raw = await postJson(url, body);
          assert.equal(raw.status, 400, JSON.stringify(raw.body));
          assert.equal(typeof raw.body.error?.message, 'string', JSON.stringify(raw.body));
          const call = route === 'chat'
            ? client.chat.completions.create(body)
            : client.completions.create(body);
          await assert.rejects(call, sameBadRequest(raw, BadRequestError));
        });
    }
  });
}

suite('ollama');
suite('tgi');
suite('llamacpp');
