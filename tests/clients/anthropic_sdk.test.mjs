// The official Anthropic TypeScript SDK (`@anthropic-ai/sdk`, pinned exactly in package.json)
// against infergate in front of a vLLM-flavoured (`--dialect openai`) emulator: code written for
// the Messages API keeps working in front of an OpenAI-compatible server. Run `npm ci` in
// tests/clients once, then `node --test tests/clients/anthropic_sdk.test.mjs`.
//
// What @anthropic-ai/sdk 1.16.0 puts on the wire (read from node_modules/@anthropic-ai/sdk/src:
// client.ts buildHeaders/authHeaders/apiKeyAuth, resources/messages/messages.ts create/stream,
// core/streaming.ts, lib/MessageStream.ts, core/error.ts):
// - `messages.create(params)` → `POST {baseURL}/v1/messages`, JSON body = params (`stream: true`
//   for a stream). Headers: `anthropic-version: 2026-10-21` (this SDK version's value, not
//   2023-06-01), `Authorization: Bearer <apiKey>` (this version sends the API key as a bearer
//   token, no `x-api-key`), `Accept: application/json`, `Content-Type: application/json`,
//   `User-Agent: Anthropic/JS 1.16.0`, `X-Stainless-*` (retry count, timeout, platform);
//   `messages.stream()` adds `X-Stainless-Helper-Method: stream`. `maxRetries: 0` turns retries
//   off.
// - Non-streaming: the JSON body is returned (`id, type, role, model, content[{type:'text',text}],
//   stop_reason, stop_sequence, usage{input_tokens, output_tokens}`).
// - Streaming: SSE; an event WITHOUT an `event:` line is skipped; `event: ping` is skipped;
//   `event: error` throws `APIError` from its JSON; every other event's `data` is JSON.parse'd and
//   yielded (message_start, content_block_start, content_block_delta (text_delta),
//   content_block_stop, message_delta {delta.stop_reason, delta.stop_sequence,
//   usage.output_tokens}, message_stop). `[DONE]` is not expected.
// - `messages.stream()` accumulates those events into a Message (it needs message_start first;
//   text_delta appends to content[index]; message_delta sets stop_reason and usage.output_tokens;
//   message_stop adds the message) and emits `text` per delta.
// - A non-2xx answer throws the status's class (400 BadRequestError, 404 NotFoundError, 429
//   RateLimitError, 529 OverloadedError, ...) with `status`, `error` (the JSON body), `type`
//   (body.error.type) and `apiMessage` (body.error.message).
//
// Expected values never come from the proxy: each is asked of the emulator directly with its own
// /v1/chat/completions (the top-level `system` is the first, system, message). Anthropic's stop
// reasons: end_turn (EOS), max_tokens, stop_sequence (with the matched string).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic, { APIError, BadRequestError } from '@anthropic-ai/sdk';
import { collect, nativeTextBeforeError, postJson, startStack } from './harness.mjs';

const MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
const EOS_AFTER = 20; // the emulator's model emits EOS after this many tokens

describe('@anthropic-ai/sdk through infergate (vLLM-style openai backend)', () => {
  let stack;
  let client;

  before(async () => {
    stack = await startStack({ dialect: 'openai', model: MODEL,
      emulatorArgs: ['--eos-after', String(EOS_AFTER)] });
    client = new Anthropic({ baseURL: stack.proxy.base, apiKey: 'x', maxRetries: 0,
      timeout: 20_000 });
  });

  after(async () => {
    if (stack) await stack.stop();
  });

  // The backend's own answer for the same conversation.
  async function backendChat({ system, messages, max_tokens, stop }) {
    const body = { model: MODEL, max_tokens,
      messages: system ? [{ role: 'system', content: system }, ...messages] : messages };
    if (stop) body.stop = stop;
    const { status, body: res } = await postJson(`${stack.emulator.base}/v1/chat/completions`,
      body);
    assert.equal(status, 200, JSON.stringify(res));
    return { text: res.choices[0].message.content, finish: res.choices[0].finish_reason,
      prompt: res.usage.prompt_tokens, completion: res.usage.completion_tokens };
  }

  function checkMessage(msg, want, stopReason, stopSequence = null) {
    assert.equal(msg.type, 'message');
    assert.equal(msg.role, 'assistant');
    assert.equal(msg.model, MODEL);
    assert.equal(typeof msg.id, 'string');
    assert.ok(msg.id.length > 0);
    assert.equal(msg.content.length, 1, JSON.stringify(msg.content));
    assert.equal(msg.content[0].type, 'text');
    assert.equal(msg.content[0].text, want.text);
    assert.equal(msg.stop_reason, stopReason);
    assert.equal(msg.stop_sequence, stopSequence);
    assert.equal(msg.usage.input_tokens, want.prompt);
    assert.equal(msg.usage.output_tokens, want.completion);
  }

  // The raw event sequence of one text answer, checked against the backend's answer.
  function checkEvents(events, want, stopReason, stopSequence = null) {
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'message_start', types.join(','));
    assert.equal(types.at(-1), 'message_stop', types.join(','));
    assert.equal(types.at(-2), 'message_delta', types.join(','));
    assert.equal(types.at(-3), 'content_block_stop', types.join(','));
    assert.equal(types[1], 'content_block_start', types.join(','));
    const start = events[0].message;
    assert.equal(start.role, 'assistant');
    assert.equal(start.model, MODEL);
    assert.deepEqual(start.content, []);
    assert.equal(start.stop_reason, null);
    assert.equal(start.usage.input_tokens, want.prompt);
    assert.deepEqual(events[1].content_block, { type: 'text', text: '' });
    const deltas = events.filter((e) => e.type === 'content_block_delta');
    assert.ok(deltas.length > 1, `only ${deltas.length} text deltas: not streamed`);
    for (const d of deltas) {
      assert.equal(d.index, 0);
      assert.equal(d.delta.type, 'text_delta');
    }
    assert.equal(deltas.map((d) => d.delta.text).join(''), want.text);
    for (const t of types.slice(2, -3)) {
      assert.equal(t, 'content_block_delta', `between the block's start and stop: ${types}`);
    }
    const md = events.at(-2);
    assert.equal(md.delta.stop_reason, stopReason);
    assert.equal(md.delta.stop_sequence, stopSequence);
    assert.equal(md.usage.output_tokens, want.completion);
  }

  test('messages.create, non-streaming, stops on max_tokens', async () => {
    const messages = [{ role: 'user', content: 'List three colours.' }];
    const want = await backendChat({ messages, max_tokens: 12 });
    assert.equal(want.finish, 'length');
    const msg = await client.messages.create({ model: MODEL, max_tokens: 12, messages });
    checkMessage(msg, want, 'max_tokens');
    assert.equal(msg.usage.output_tokens, 12);
  });

  test('messages.create with system and a stop sequence (stop_reason stop_sequence)',
    async () => {
      const system = 'You are a terse assistant.';
      const messages = [{ role: 'user', content: 'Describe a mountain at dawn.' }];
      const full = await backendChat({ system, messages, max_tokens: 16 });
      const stop = ' ' + full.text.trim().split(' ')[5];
      const want = await backendChat({ system, messages, max_tokens: 16, stop: [stop] });
      assert.equal(want.finish, 'stop');
      assert.ok(want.completion < 16);
      const msg = await client.messages.create({ model: MODEL, max_tokens: 16, system,
        messages, stop_sequences: [stop] });
      checkMessage(msg, want, 'stop_sequence', stop);
    });

  test('messages.create that ends on EOS (stop_reason end_turn), content blocks in',
    async () => {
      const messages = [
        { role: 'user', content: [{ type: 'text', text: 'Hello there.' }] },
        { role: 'assistant', content: 'Hi! How can I help?' },
        { role: 'user', content: 'Tell me a story.' },
      ];
      const want = await backendChat({ max_tokens: 40, messages: [
        { role: 'user', content: 'Hello there.' },
        { role: 'assistant', content: 'Hi! How can I help?' },
        { role: 'user', content: 'Tell me a story.' },
      ] });
      assert.equal(want.finish, 'stop', 'the backend ends this one on EOS');
      assert.ok(want.completion < 40);
      const msg = await client.messages.create({ model: MODEL, max_tokens: 40, messages });
      checkMessage(msg, want, 'end_turn');
    });

  test('messages.create, stream: true (raw events), max_tokens', async () => {
    const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
    const want = await backendChat({ messages, max_tokens: 10 });
    const events = await collect(await client.messages.create({ model: MODEL, max_tokens: 10,
      messages, stream: true }));
    checkEvents(events, want, 'max_tokens');
  });

  test('messages.create, stream: true, stop sequence and EOS', async () => {
    const system = 'Answer in one sentence.';
    const messages = [{ role: 'user', content: 'What is rain?' }];
    const full = await backendChat({ system, messages, max_tokens: 16 });
    const stop = ' ' + full.text.trim().split(' ')[6];
    const want = await backendChat({ system, messages, max_tokens: 16, stop: [stop] });
    assert.equal(want.finish, 'stop');
    let events = await collect(await client.messages.create({ model: MODEL, max_tokens: 16,
      system, messages, stop_sequences: [stop], stream: true }));
    checkEvents(events, want, 'stop_sequence', stop);

    const wantEos = await backendChat({ system, messages, max_tokens: 64 });
    assert.equal(wantEos.finish, 'stop');
    events = await collect(await client.messages.create({ model: MODEL, max_tokens: 64,
      system, messages, stream: true }));
    checkEvents(events, wantEos, 'end_turn');
  });

  test('messages.stream helper: text events, finalMessage, finalText', async () => {
    const messages = [{ role: 'user', content: 'Name a fruit.' }];
    const want = await backendChat({ messages, max_tokens: 9 });
    const stream = client.messages.stream({ model: MODEL, max_tokens: 9, messages });
    const texts = [];
    stream.on('text', (delta) => texts.push(delta));
    const msg = await stream.finalMessage();
    assert.ok(texts.length > 1, `only ${texts.length} text events: not streamed`);
    assert.equal(texts.join(''), want.text);
    checkMessage(msg, want, 'max_tokens');
    assert.equal(await stream.finalText(), want.text);
  });

  test('a backend error in mid-stream is an `event: error` the SDK raises as APIError',
    async () => {
      // The emulator breaks a stream after two events with vLLM's in-band error event when
      // asked by X-Emulator-Fault (the proxy forwards the header). The backend's own stream
      // gives the text before the error and the message.
      const headers = { 'X-Emulator-Fault': 'error_event' };
      const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
      const { text: nativeText, message } = await nativeTextBeforeError(
        `${stack.emulator.base}/v1/chat/completions`,
        { model: MODEL, messages, max_tokens: 10, stream: true }, headers,
        { text: (ev, soFar) => soFar + (ev.choices[0].delta.content ?? '') });
      const check = (err) => {
        assert.ok(err instanceof APIError, `got ${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, undefined, 'an in-stream error has no HTTP status');
        assert.equal(err.type, 'api_error');
        assert.equal(err.apiMessage, message);
        return true;
      };
      const events = [];
      await assert.rejects((async () => {
        for await (const e of await client.messages.create({ model: MODEL, max_tokens: 10,
          messages, stream: true }, { headers })) events.push(e);
      })(), check);
      assert.equal(events[0].type, 'message_start');
      assert.ok(!events.some((e) => e.type === 'message_stop'), 'no message_stop');
      assert.equal(events.filter((e) => e.type === 'content_block_delta')
        .map((e) => e.delta.text).join(''), nativeText);

      const stream = client.messages.stream({ model: MODEL, max_tokens: 10, messages },
        { headers });
      const texts = [];
      stream.on('text', (t) => texts.push(t));
      await assert.rejects(stream.finalMessage(), check);
      assert.equal(texts.join(''), nativeText);
    });

  test('a bad request raises BadRequestError with the proxy\'s error body', async () => {
    // The Messages API takes temperature in [0, 1].
    const body = { model: MODEL, max_tokens: 4, temperature: 1.5,
      messages: [{ role: 'user', content: 'hi' }] };
    const raw = await postJson(`${stack.proxy.base}/v1/messages`, body,
      { 'anthropic-version': '2023-06-01', 'x-api-key': 'x' });
    assert.equal(raw.status, 400, JSON.stringify(raw.body));
    assert.equal(raw.body.type, 'error');
    assert.equal(raw.body.error.type, 'invalid_request_error');
    assert.equal(typeof raw.body.error.message, 'string');
    for (const stream of [false, true]) {
      await assert.rejects(client.messages.create({ ...body, stream }), (err) => {
        assert.ok(err instanceof BadRequestError, `got ${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.type, 'invalid_request_error');
        assert.equal(err.apiMessage, raw.body.error.message);
        // The whole body but its request_id, which differs per request.
        assert.equal(err.error.type, 'error');
        assert.deepEqual(err.error.error, raw.body.error);
        return true;
      });
    }
  });
});
