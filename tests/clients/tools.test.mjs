// Tools through infergate with real clients, each against a backend of another dialect
// (issue 13): the OpenAI Node SDK's runTools loop (whole and streamed, deltas assembled by the
// SDK) in front of Ollama and Anthropic, the Anthropic SDK's tool use (create, and stream with
// input_json_delta assembled by its MessageStream) in front of a vLLM-style server, and the
// `ollama` client's tools in front of vLLM and Anthropic.
//
// The backends are the emulator in its tool mode (emulator/chat_extras.hpp): given tools, it
// calls the first one with arguments made from the schema (a string property is its name
// reversed: city → "ytic"); given a tool result as the last message, it answers
// "tool said: <result>". Each dialect writes that in its own server's shape, so these checks
// see the same calls whatever the backend, or fail.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { startStack } from './harness.mjs';

// Ollama names a model with its tag; the others as they are.
const MODEL = 'tool-model:latest';
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const EXPECTED_ARGS = { city: 'ytic' };

// One stack per backend dialect, started on first use and stopped at the end.
const stacks = new Map();
async function stack(dialect) {
  if (!stacks.has(dialect)) {
    stacks.set(dialect, await startStack({ dialect, model: MODEL }));
  }
  return stacks.get(dialect);
}
after(async () => {
  for (const s of stacks.values()) await s.stop();
});

for (const backend of ['ollama', 'anthropic']) {
  describe(`openai SDK runTools through infergate (${backend} backend)`, () => {
    let client;
    before(async () => {
      const s = await stack(backend);
      client = new OpenAI({ baseURL: `${s.proxy.base}/v1`, apiKey: 'x', maxRetries: 0 });
    });

    for (const stream of [false, true]) {
      test(`the loop calls the tool and reads the answer (stream: ${stream})`, async () => {
        const seen = [];
        const runner = client.chat.completions.runTools({
          model: MODEL,
          max_tokens: 50,
          stream,
          messages: [{ role: 'user', content: 'Weather in Paris?' }],
          tools: [{
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather now',
              parameters: SCHEMA,
              parse: JSON.parse,
              function: (args) => { seen.push(args); return '18 degrees'; },
            },
          }],
        });
        const content = await runner.finalContent();
        assert.deepEqual(seen, [EXPECTED_ARGS]);
        assert.equal(content, 'tool said: 18 degrees');
        const messages = runner.messages;
        const call = messages.find((m) => m.role === 'assistant' && m.tool_calls?.length);
        assert.ok(call, JSON.stringify(messages));
        assert.equal(call.tool_calls[0].function.name, 'get_weather');
        assert.ok(call.tool_calls[0].id.length > 0);
      });
    }

    test('a streamed turn with parallel calls is assembled by the SDK', async () => {
      const s = client.chat.completions.stream({
        model: MODEL,
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Weather and time?' }],
        tools: [
          { type: 'function', function: { name: 'get_weather', parameters: SCHEMA } },
          { type: 'function', function: { name: 'get_time',
            parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
        ],
      }, { headers: { 'X-Emulator-Tool-Calls': '2' } });
      const done = await s.finalChatCompletion();
      const choice = done.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.deepEqual(choice.message.tool_calls.map((c) => [c.function.name,
        JSON.parse(c.function.arguments)]), [['get_weather', EXPECTED_ARGS],
        ['get_time', { zone: 'enoz' }]]);
      assert.equal(new Set(choice.message.tool_calls.map((c) => c.id)).size, 2);
    });
  });
}

describe('@anthropic-ai/sdk tool use through infergate (vLLM-style backend)', () => {
  let client;
  const tools = [{ name: 'get_weather', description: 'Weather now', input_schema: SCHEMA }];
  before(async () => {
    const s = await stack('openai');
    client = new Anthropic({ baseURL: s.proxy.base, apiKey: 'x', maxRetries: 0 });
  });

  test('create: a tool_use block, then the tool_result answered', async () => {
    const first = await client.messages.create({
      model: MODEL, max_tokens: 50, tools,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(first.content));
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, EXPECTED_ARGS);
    const second = await client.messages.create({
      model: MODEL, max_tokens: 50, tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id,
          content: '18 degrees' }] },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
    assert.deepEqual(second.content, [{ type: 'text', text: 'tool said: 18 degrees' }]);
  });

  test('stream: MessageStream assembles input_json_delta into the input', async () => {
    const events = [];
    const s = client.messages.stream({
      model: MODEL, max_tokens: 50, tools, tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    s.on('streamEvent', (e) => events.push(e.type === 'content_block_delta'
      ? `${e.type}:${e.delta.type}` : e.type));
    const message = await s.finalMessage();
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.content.map((b) => b.type), ['tool_use']);
    assert.deepEqual(message.content[0].input, EXPECTED_ARGS);
    assert.ok(events.includes('content_block_delta:input_json_delta'), events.join(' '));
  });

  test('a server tool is refused, named, not dropped', async () => {
    await assert.rejects(client.messages.create({
      model: MODEL, max_tokens: 50,
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      messages: [{ role: 'user', content: 'News?' }],
    }), (e) => e.status === 400 && /'tools\[0\]' \(type "web_search_20250305"\) is a server tool/
      .test(e.error?.error?.message ?? ''));
  });
});

for (const backend of ['openai', 'anthropic']) {
  describe(`ollama client tools through infergate (${backend} backend)`, () => {
    let client;
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: SCHEMA } }];
    before(async () => {
      const s = await stack(backend);
      client = new Ollama({ host: s.proxy.base });
    });

    test('chat: the call comes back with an object of arguments, then the answer', async () => {
      const first = await client.chat({ model: MODEL, tools, stream: false,
        options: { num_predict: 50 }, messages: [{ role: 'user', content: 'Weather?' }] });
      assert.equal(first.done_reason, 'stop');
      const calls = first.message.tool_calls;
      assert.equal(calls.length, 1);
      assert.equal(calls[0].function.name, 'get_weather');
      assert.deepEqual(calls[0].function.arguments, EXPECTED_ARGS);
      const second = await client.chat({ model: MODEL, tools, stream: false,
        options: { num_predict: 50 },
        messages: [{ role: 'user', content: 'Weather?' }, first.message,
          { role: 'tool', tool_name: 'get_weather', content: '18 degrees' }] });
      assert.equal(second.message.content, 'tool said: 18 degrees');
    });

    test('chat stream: each call whole on a line of its own', async () => {
      const parts = await client.chat({ model: MODEL, tools, stream: true,
        options: { num_predict: 50 }, messages: [{ role: 'user', content: 'Weather?' }] });
      const calls = [];
      let last;
      for await (const part of parts) {
        calls.push(...(part.message.tool_calls ?? []));
        last = part;
      }
      assert.equal(last.done, true);
      assert.deepEqual(calls.map((c) => [c.function.name, c.function.arguments]),
        [['get_weather', EXPECTED_ARGS]]);
    });
  });
}

// Reasoning: the emulator reasons first when asked by header (X-Emulator-Reasoning), in its
// dialect's place; each client gets it in its own (the OpenAI SDK passes reasoning_content
// deltas through as vLLM writes them).
const REASONING = 'Let me think it over.';
const REASON = { 'X-Emulator-Reasoning': REASONING };

describe('reasoning through infergate, each client against another dialect', () => {
  test('openai SDK stream: reasoning_content deltas before the text (Ollama backend)', async () => {
    const s = await stack('ollama');
    const client = new OpenAI({ baseURL: `${s.proxy.base}/v1`, apiKey: 'x', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: MODEL, max_tokens: 5, stream: true,
      messages: [{ role: 'user', content: 'Hi' }] }, { headers: REASON });
    let reasoning = '';
    let text = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta ?? {};
      if (delta.reasoning_content) {
        assert.equal(text, '', 'reasoning after text');
        reasoning += delta.reasoning_content;
      }
      text += delta.content ?? '';
    }
    assert.equal(reasoning, REASONING);
    assert.ok(text.length > 0);
  });

  test('anthropic SDK: a thinking block before the text (vLLM backend)', async () => {
    const s = await stack('openai');
    const client = new Anthropic({ baseURL: s.proxy.base, apiKey: 'x', maxRetries: 0 });
    for (const streamed of [false, true]) {
      const params = { model: MODEL, max_tokens: 5,
        messages: [{ role: 'user', content: 'Hi' }] };
      const message = streamed
        ? await client.messages.stream(params, { headers: REASON }).finalMessage()
        : await client.messages.create(params, { headers: REASON });
      assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text'], `${streamed}`);
      assert.equal(message.content[0].thinking, REASONING);
      assert.ok(message.content[1].text.length > 0);
    }
  });

  // The thinking switch reaches Ollama as `think` (read as Ollama's own compatibility layers
  // read it); the emulator's Ollama then reasons ("Thinking about it.") without any header.
  test('anthropic SDK: thinking enabled switches an Ollama backend\'s think on', async () => {
    const s = await stack('ollama');
    const client = new Anthropic({ baseURL: s.proxy.base, apiKey: 'x', maxRetries: 0 });
    const params = { model: MODEL, max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'Hi' }] };
    for (const streamed of [false, true]) {
      const message = streamed ? await client.messages.stream(params).finalMessage()
        : await client.messages.create(params);
      assert.equal(message.content[0].type, 'thinking', `${streamed}`);
      assert.equal(message.content[0].thinking, 'Thinking about it.');
    }
    const off = await client.messages.create({ ...params, thinking: { type: 'disabled' } });
    assert.deepEqual(off.content.map((b) => b.type), ['text']);
  });

  test('openai SDK: reasoning_effort switches an Ollama backend\'s think', async () => {
    const s = await stack('ollama');
    const client = new OpenAI({ baseURL: `${s.proxy.base}/v1`, apiKey: 'x', maxRetries: 0 });
    const on = await client.chat.completions.create({ model: MODEL, max_tokens: 5,
      reasoning_effort: 'minimal', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(on.choices[0].message.reasoning_content, 'Thinking about it.');
    const off = await client.chat.completions.create({ model: MODEL, max_tokens: 5,
      reasoning_effort: 'none', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(off.choices[0].message.reasoning_content, undefined);
    await assert.rejects(client.chat.completions.create({ model: MODEL, max_tokens: 5,
      reasoning_effort: 'extreme', messages: [{ role: 'user', content: 'Hi' }] }),
    (e) => e.status === 400 && /reasoning_effort/.test(e.message));
  });

  test('ollama client: thinking, whole and streamed (Anthropic backend)', async () => {
    const s = await stack('anthropic');
    const client = new Ollama({ host: s.proxy.base, headers: REASON });
    const whole = await client.chat({ model: MODEL, stream: false, options: { num_predict: 5 },
      messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(whole.message.thinking, REASONING);
    const parts = await client.chat({ model: MODEL, stream: true, options: { num_predict: 5 },
      messages: [{ role: 'user', content: 'Hi' }] });
    let thinking = '';
    for await (const part of parts) thinking += part.message.thinking ?? '';
    assert.equal(thinking, REASONING);
  });
});

// Images: the emulator answers "images: <count>, bytes: <decoded bytes>" for the images that
// reached it, so each client's image must arrive whole in the backend's own shape.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG, 'base64').length;

describe('images through infergate, each client against another dialect', () => {
  for (const backend of ['ollama', 'anthropic']) {
    test(`openai SDK: an image_url data URL reaches ${backend}`, async () => {
      const s = await stack(backend);
      const client = new OpenAI({ baseURL: `${s.proxy.base}/v1`, apiKey: 'x', maxRetries: 0 });
      const done = await client.chat.completions.create({ model: MODEL, max_tokens: 20,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }] });
      assert.equal(done.choices[0].message.content, `images: 1, bytes: ${PNG_BYTES}`);
    });
  }

  test('anthropic SDK: an image block reaches a vLLM backend', async () => {
    const s = await stack('openai');
    const client = new Anthropic({ baseURL: s.proxy.base, apiKey: 'x', maxRetries: 0 });
    const message = await client.messages.create({ model: MODEL, max_tokens: 20,
      messages: [{ role: 'user', content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'text', text: 'Same?' }] }] });
    assert.equal(message.content[0].text, `images: 2, bytes: ${2 * PNG_BYTES}`);
  });

  test('ollama client: images (bytes) reach vLLM and Anthropic backends', async () => {
    for (const backend of ['openai', 'anthropic']) {
      const s = await stack(backend);
      const client = new Ollama({ host: s.proxy.base });
      const done = await client.chat({ model: MODEL, stream: false,
        options: { num_predict: 20 },
        messages: [{ role: 'user', content: 'What is this?',
          images: [Uint8Array.from(Buffer.from(PNG, 'base64'))] }] });
      assert.equal(done.message.content, `images: 1, bytes: ${PNG_BYTES}`, backend);
    }
  });
});
