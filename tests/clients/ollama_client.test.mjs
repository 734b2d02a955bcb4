// The official Ollama JavaScript client (`ollama`, pinned exactly in package.json) against
// infergate in front of a vLLM-flavoured (`--dialect openai`) emulator. Run `npm ci` in
// tests/clients once, then `node --test tests/clients/ollama_client.test.mjs`.
//
// What ollama-js 0.6.4 puts on the wire (read from node_modules/ollama/src/browser.ts, utils.ts):
// - `new Ollama({host})`: every request goes to `${host}/api/...` with headers `Content-Type:
//   application/json`, `Accept: application/json`, `User-Agent: ollama-js/0.6.4 (...)`.
// - `list()` → `GET /api/tags`, returns the parsed JSON (`{models: [{name, model, ...}]}`).
// - `generate(req)` → `POST /api/generate`, `chat(req)` → `POST /api/chat`, the request object
//   as the JSON body with `stream` forced to `false` when the caller left it out (the client's
//   default, unlike the server's). Non-streaming: the whole JSON body is returned as it is
//   (`response` / `message.content`, `done`, `done_reason`, `prompt_eval_count`, `eval_count`).
// - Streaming (`stream: true`): the body is read as NDJSON (split on `\n`, each line JSON.parse'd;
//   a line that does not parse is only warned about); every object is yielded; a line with an
//   `error` key throws `Error(error)`; iteration stops after the first object with `done: true`,
//   and a stream that ends without one throws "Did not receive done or success response in stream."
// - A non-2xx answer throws `ResponseError` (name 'ResponseError', fields `error` and
//   `status_code`): `error` is the JSON body's `error` string when the Content-Type is JSON, else
//   the body text.
//
// Expected values never come from the proxy: each is asked of the emulator directly in its own
// (OpenAI) dialect. A non-raw /api/generate is a one-turn chat (Ollama applies the chat
// template), so its reference is the backend's /v1/chat/completions; `raw: true` is a plain
// completion (/v1/completions); /api/chat is /v1/chat/completions.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { nativeTextBeforeError, postJson, startStack } from './harness.mjs';

const MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
const EOS_AFTER = 20; // the emulator's model emits EOS after this many tokens

describe('ollama-js through infergate (vLLM-style openai backend)', () => {
  let stack;
  let ollama;

  before(async () => {
    stack = await startStack({ dialect: 'openai', model: MODEL,
      emulatorArgs: ['--eos-after', String(EOS_AFTER)] });
    ollama = new Ollama({ host: stack.proxy.base });
  });

  after(async () => {
    if (stack) await stack.stop();
  });

  // The backend's own answer for a chat: { text, finish ('length'|'stop'), prompt, completion }.
  async function backendChat(messages, { max_tokens, stop } = {}) {
    const body = { model: MODEL, messages, temperature: 0 };
    if (max_tokens !== undefined) body.max_tokens = max_tokens;
    if (stop) body.stop = stop;
    const { status, body: res } = await postJson(`${stack.emulator.base}/v1/chat/completions`,
      body);
    assert.equal(status, 200, JSON.stringify(res));
    return { text: res.choices[0].message.content, finish: res.choices[0].finish_reason,
      prompt: res.usage.prompt_tokens, completion: res.usage.completion_tokens };
  }

  async function backendCompletion(prompt, { max_tokens, stop } = {}) {
    const body = { model: MODEL, prompt, temperature: 0 };
    if (max_tokens !== undefined) body.max_tokens = max_tokens;
    if (stop) body.stop = stop;
    const { status, body: res } = await postJson(`${stack.emulator.base}/v1/completions`, body);
    assert.equal(status, 200, JSON.stringify(res));
    return { text: res.choices[0].text, finish: res.choices[0].finish_reason,
      prompt: res.usage.prompt_tokens, completion: res.usage.completion_tokens };
  }

  // Ollama's final object: done, a done_reason, the backend's counts, integer-ns durations.
  function assertFinal(obj, want, doneReason) {
    assert.equal(obj.done, true);
    assert.equal(obj.done_reason, doneReason);
    assert.equal(obj.model, MODEL, 'an Ollama client gets back the model name it asked for');
    assert.equal(obj.eval_count, want.completion);
    assert.equal(obj.prompt_eval_count, want.prompt);
    assert.ok(!Number.isNaN(Date.parse(obj.created_at)), `created_at ${obj.created_at}`);
    for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) {
      if (k in obj) assert.ok(Number.isInteger(obj[k]) && obj[k] >= 0, `${k}: ${obj[k]}`);
    }
  }

  // Stream objects: more than one, every one but the last `done: false`, text per object.
  function assertStreamShape(parts) {
    assert.ok(parts.length > 1, `only ${parts.length} NDJSON objects: not streamed`);
    for (const p of parts.slice(0, -1)) {
      assert.equal(p.done, false, JSON.stringify(p));
      assert.equal(p.model, MODEL);
    }
    assert.equal(parts.at(-1).done, true);
  }

  async function collectStream(it) {
    const parts = [];
    for await (const p of it) parts.push(p);
    return parts;
  }

  test('list() (GET /api/tags) lists the served model', async () => {
    const res = await ollama.list();
    assert.ok(Array.isArray(res.models), JSON.stringify(res));
    const m = res.models.find((x) => x.name === MODEL);
    assert.ok(m, `models: ${JSON.stringify(res.models.map((x) => x.name))}`);
    assert.equal(m.model, MODEL);
  });

  test('generate, non-streaming, stops on num_predict (done_reason length)', async () => {
    const prompt = 'Why is the sky blue?';
    const want = await backendChat([{ role: 'user', content: prompt }], { max_tokens: 12 });
    assert.equal(want.completion, 12);
    const res = await ollama.generate({ model: MODEL, prompt,
      options: { num_predict: 12, temperature: 0 } });
    assert.equal(res.response, want.text);
    assert.ok(res.response.length > 0);
    assertFinal(res, want, 'length');
  });

  test('generate with a system prompt, streaming, ends on EOS (done_reason stop)', async () => {
    const prompt = 'Tell me a short story.';
    const system = 'You are a storyteller.';
    const want = await backendChat([{ role: 'system', content: system },
      { role: 'user', content: prompt }], { max_tokens: 40 });
    assert.equal(want.finish, 'stop', 'the backend ends this one on EOS');
    assert.ok(want.completion < 40);
    const parts = await collectStream(await ollama.generate({ model: MODEL, prompt, system,
      stream: true, options: { num_predict: 40, temperature: 0 } }));
    assertStreamShape(parts);
    assert.equal(parts.map((p) => p.response ?? '').join(''), want.text);
    assertFinal(parts.at(-1), want, 'stop');
  });

  test('generate raw: true is a plain completion; stop string ends it (done_reason stop)',
    async () => {
      const prompt = 'The capital of France is';
      const full = await backendCompletion(prompt, { max_tokens: 16 });
      const stop = ' ' + full.text.trim().split(' ')[5];
      const want = await backendCompletion(prompt, { max_tokens: 16, stop: [stop] });
      assert.equal(want.finish, 'stop');
      assert.ok(want.completion < 16);
      const res = await ollama.generate({ model: MODEL, prompt, raw: true,
        options: { num_predict: 16, temperature: 0, stop: [stop] } });
      assert.equal(res.response, want.text);
      assert.ok(!res.response.includes(stop), 'the stop string is not part of the answer');
      assertFinal(res, want, 'stop');

      const parts = await collectStream(await ollama.generate({ model: MODEL, prompt, raw: true,
        stream: true, options: { num_predict: 16, temperature: 0, stop: [stop] } }));
      assertStreamShape(parts);
      assert.equal(parts.map((p) => p.response ?? '').join(''), want.text);
      assertFinal(parts.at(-1), want, 'stop');
    });

  test('chat, non-streaming (done_reason length)', async () => {
    const messages = [
      { role: 'system', content: 'You are a terse assistant.' },
      { role: 'user', content: 'List three colours.' },
    ];
    const want = await backendChat(messages, { max_tokens: 9 });
    const res = await ollama.chat({ model: MODEL, messages,
      options: { num_predict: 9, temperature: 0 } });
    assert.equal(res.message.role, 'assistant');
    assert.equal(res.message.content, want.text);
    assert.ok(res.message.content.length > 0);
    assert.equal(res.eval_count, 9);
    assertFinal(res, want, 'length');
  });

  test('chat, streaming, multi-turn (done_reason length)', async () => {
    const messages = [
      { role: 'user', content: 'Hello there.' },
      { role: 'assistant', content: 'Hi! How can I help?' },
      { role: 'user', content: 'Describe the sea.' },
    ];
    const want = await backendChat(messages, { max_tokens: 10 });
    const parts = await collectStream(await ollama.chat({ model: MODEL, messages, stream: true,
      options: { num_predict: 10, temperature: 0 } }));
    assertStreamShape(parts);
    for (const p of parts) assert.equal(p.message.role, 'assistant', JSON.stringify(p));
    assert.equal(parts.map((p) => p.message.content).join(''), want.text);
    assertFinal(parts.at(-1), want, 'length');
  });

  test('chat, streaming, without num_predict: the answer runs to EOS (done_reason stop)',
    async () => {
      const messages = [{ role: 'user', content: 'Say something.' }];
      const want = await backendChat(messages);
      assert.equal(want.finish, 'stop');
      const parts = await collectStream(await ollama.chat({ model: MODEL, messages,
        stream: true, options: { temperature: 0 } }));
      assertStreamShape(parts);
      assert.equal(parts.map((p) => p.message.content).join(''), want.text);
      assertFinal(parts.at(-1), want, 'stop');
    });

  test('a backend error in mid-stream ends the iteration with the backend\'s message',
    async () => {
      // The emulator breaks a stream after two events with its in-band error event when asked
      // by X-Emulator-Fault (the proxy forwards the header; ollama-js sends `headers` from its
      // config). The backend's own stream, asked directly, gives the text before the error and
      // the message.
      const headers = { 'X-Emulator-Fault': 'error_event' };
      const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
      const { text: nativeText, message } = await nativeTextBeforeError(
        `${stack.emulator.base}/v1/chat/completions`,
        { model: MODEL, messages, max_tokens: 10, stream: true }, headers,
        { text: (ev, soFar) => soFar + (ev.choices[0].delta.content ?? '') });
      const faulty = new Ollama({ host: stack.proxy.base, headers });
      const parts = [];
      await assert.rejects((async () => {
        for await (const p of await faulty.chat({ model: MODEL, messages, stream: true,
          options: { num_predict: 10 } })) parts.push(p);
      })(), (err) => {
        assert.equal(err.message, message);
        return true;
      });
      assert.equal(parts.map((p) => p.message.content).join(''), nativeText);
      assert.ok(parts.every((p) => p.done === false), 'no final object before the error');
    });

  test('a bad request raises ResponseError with the status and the proxy\'s message',
    async () => {
      // An empty prompt asks Ollama to load a model, which a gateway does not do: a 400.
      const body = { model: MODEL, prompt: '', stream: false };
      const raw = await postJson(`${stack.proxy.base}/api/generate`, body);
      assert.equal(raw.status, 400, JSON.stringify(raw.body));
      assert.equal(typeof raw.body.error, 'string', JSON.stringify(raw.body));
      assert.ok(raw.headers.get('content-type').startsWith('application/json'));
      for (const stream of [false, true]) {
        await assert.rejects(ollama.generate({ model: MODEL, prompt: '', stream }), (err) => {
          assert.equal(err.name, 'ResponseError', `got ${err?.name}: ${err}`);
          assert.equal(err.status_code, 400);
          assert.equal(err.error, raw.body.error);
          assert.equal(err.message, raw.body.error);
          return true;
        });
      }
      // The same for chat without messages.
      const rawChat = await postJson(`${stack.proxy.base}/api/chat`,
        { model: MODEL, messages: [], stream: false });
      assert.equal(rawChat.status, 400, JSON.stringify(rawChat.body));
      await assert.rejects(ollama.chat({ model: MODEL, messages: [] }), (err) => {
        assert.equal(err.name, 'ResponseError');
        assert.equal(err.status_code, 400);
        assert.equal(err.error, rawChat.body.error);
        return true;
      });
    });
});
