// Hugging Face's JavaScript inference client (`@huggingface/inference` 2.x, pinned exactly in
// package.json) against infergate in front of an SGLang-dialect emulator: a script written for a
// TGI Inference Endpoint keeps working in front of SGLang. Run `npm ci` in tests/clients once,
// then `node --test tests/clients/hf_inference.test.mjs`.
//
// What @huggingface/inference 2.8.1 puts on the wire (read from node_modules/@huggingface/
// inference/src: HfInference.ts, lib/makeRequestOptions.ts, tasks/custom/request.ts,
// tasks/custom/streamingRequest.ts, tasks/nlp/textGeneration*.ts):
// - `new HfInference(token).endpoint(url)`: every task POSTs to `url` itself — for an endpoint
//   `http://host:port` that is `POST /`, TGI's compat route — with `Content-Type:
//   application/json` (and `Authorization: Bearer <token>` only when a token is given).
// - The body is the call's arguments minus `accessToken`/`endpointUrl`: `{model, inputs,
//   parameters}`. `model` is always there: without one the client first fetches
//   huggingface.co/api/tasks to pick a default model id and puts that in the body. These checks
//   pass `model` themselves so they never touch the network.
// - `textGeneration`: non-2xx → `Error(JSON.stringify(body.error))` when the answer is JSON, else
//   `Error('An error occurred while fetching the blob')`; 503 is retried once with
//   `X-Wait-For-Model: true`. A 2xx JSON answer may be an object or a list (`POST /` answers
//   `[{generated_text, details?}]`); the first item is returned; it must have a string
//   `generated_text`, else `InferenceOutputError`.
// - `textGenerationStream`: the same body plus `"stream": true`. Non-2xx → `Error(body.error)`
//   (JSON) or `Error('Server response contains error: <status>')`. A 2xx must have a Content-Type
//   starting with `text/event-stream`, else it throws. The body is parsed as SSE (`data:` with or
//   without a space); `data: [DONE]` ends it; an event whose JSON has `error` throws
//   `Error(error)`; every other event is yielded: `{index, token: {id, text, logprob, special},
//   generated_text (null until the last), details (null, or on the last event {finish_reason,
//   generated_tokens, seed, input_length?} when `parameters.details`)}`.
//
// Expected values never come from the proxy: each is asked of the emulator directly with
// SGLang's native POST /generate. TGI keeps a matched stop sequence in `generated_text`, so the
// reference asks SGLang for `no_stop_trim: true`. TGI's finish reasons are length / eos_token /
// stop_sequence.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HfInference } from '@huggingface/inference';
import { nativeTextBeforeError, postJson, postRaw, startStack } from './harness.mjs';

const MODEL = 'sglang-emu/Qwen2.5-0.5B-Instruct';
const EOS_AFTER = 20; // the emulator's model emits EOS after this many tokens

describe('@huggingface/inference (TGI client) through infergate (SGLang backend)', () => {
  let stack;
  let endpoint;

  before(async () => {
    stack = await startStack({ dialect: 'sglang', model: MODEL,
      emulatorArgs: ['--eos-after', String(EOS_AFTER)] });
    endpoint = new HfInference().endpoint(stack.proxy.base);
  });

  after(async () => {
    if (stack) await stack.stop();
  });

  // SGLang's own answer, greedy, keeping a matched stop string as TGI does:
  // { text, finish: 'length'|'stop_sequence'|'eos_token', completion, prompt }.
  async function backend(inputs, { max_new_tokens, stop } = {}) {
    const sp = { temperature: 0, no_stop_trim: true };
    if (max_new_tokens !== undefined) sp.max_new_tokens = max_new_tokens;
    if (stop) sp.stop = stop;
    const { status, body } = await postJson(`${stack.emulator.base}/generate`,
      { text: inputs, sampling_params: sp });
    assert.equal(status, 200, JSON.stringify(body));
    const fr = body.meta_info.finish_reason;
    let finish;
    if (fr.type === 'length') finish = 'length';
    else if (fr.type === 'stop' && typeof fr.matched === 'string') finish = 'stop_sequence';
    else if (fr.type === 'stop') finish = 'eos_token';
    else assert.fail(`unexpected SGLang finish_reason ${JSON.stringify(fr)}`);
    return { text: body.text, finish, completion: body.meta_info.completion_tokens,
      prompt: body.meta_info.prompt_tokens };
  }

  async function collect(it) {
    const events = [];
    for await (const e of it) events.push(e);
    return events;
  }

  // A TGI stream: more than one event; every event but the last has generated_text and details
  // null; the non-special token texts concatenate to the whole text; the last event carries it.
  function checkStream(events, want, { details }) {
    assert.ok(events.length > 1, `only ${events.length} events: not streamed`);
    for (const e of events.slice(0, -1)) {
      assert.equal(e.generated_text, null, JSON.stringify(e));
      assert.equal(e.details, null, JSON.stringify(e));
      assert.equal(e.token.special, false, JSON.stringify(e));
      assert.equal(typeof e.token.text, 'string');
    }
    const last = events.at(-1);
    // TGI numbers its events by generated token, from 1 (the emulator sends one token per
    // event, so the numbering is 1..N and the last index is the number of generated tokens).
    assert.deepEqual(events.map((e) => e.index), events.map((_, i) => i + 1));
    const text = events.filter((e) => !e.token.special).map((e) => e.token.text).join('');
    assert.equal(text, want.text);
    assert.equal(last.generated_text, want.text);
    if (details) {
      assert.equal(last.details.finish_reason, want.finish);
      assert.equal(last.details.generated_tokens, want.completion);
      assert.equal(last.index, want.completion);
      assert.equal(last.details.input_length, want.prompt);
    } else {
      assert.equal(last.details, null);
    }
  }

  // textGeneration posts to the endpoint URL itself (TGI's compat route POST /), where TGI
  // defaults return_full_text to true for a text-generation model: the prompt comes first.
  test('textGeneration with details, stops on max_new_tokens (finish_reason length)',
    async () => {
      const inputs = 'The capital of France is';
      const want = await backend(inputs, { max_new_tokens: 12 });
      assert.equal(want.finish, 'length');
      const res = await endpoint.textGeneration({ model: MODEL, inputs,
        parameters: { max_new_tokens: 12, details: true } });
      assert.equal(res.generated_text, inputs + want.text);  // POST /: return_full_text
      assert.ok(res.generated_text.length > 0);
      assert.equal(res.details.finish_reason, 'length');
      assert.equal(res.details.generated_tokens, 12);
      assert.equal(res.details.generated_tokens, want.completion);
      // POST / answers a list, as TGI's compat route does (the client unwraps it).
      const raw = await postJson(`${stack.proxy.base}/`, { inputs,
        parameters: { max_new_tokens: 12, details: true } });
      assert.equal(raw.status, 200, JSON.stringify(raw.body));
      assert.ok(Array.isArray(raw.body), JSON.stringify(raw.body));
      assert.equal(raw.body[0].generated_text, inputs + want.text);
    });

  test('textGeneration without details has no details', async () => {
    const inputs = 'Once upon a time';
    const want = await backend(inputs, { max_new_tokens: 8 });
    const res = await endpoint.textGeneration({ model: MODEL, inputs,
      parameters: { max_new_tokens: 8 } });
    assert.equal(res.generated_text, inputs + want.text);  // POST /: return_full_text
    assert.equal(res.details, undefined, 'TGI sends details only when asked');
  });

  test('textGeneration with a stop sequence keeps it in the text (finish_reason stop_sequence)',
    async () => {
      const inputs = 'Write down the words that come to mind';
      const full = await backend(inputs, { max_new_tokens: 16 });
      const stop = ' ' + full.text.trim().split(' ')[6];
      const want = await backend(inputs, { max_new_tokens: 16, stop: [stop] });
      assert.equal(want.finish, 'stop_sequence');
      assert.ok(want.text.endsWith(stop), 'SGLang with no_stop_trim keeps the stop string');
      assert.ok(want.completion < 16);
      const res = await endpoint.textGeneration({ model: MODEL, inputs,
        parameters: { max_new_tokens: 16, stop: [stop], details: true } });
      assert.equal(res.generated_text, inputs + want.text);  // POST /: return_full_text
      assert.equal(res.details.finish_reason, 'stop_sequence');
      assert.equal(res.details.generated_tokens, want.completion);
    });

  test('textGeneration that ends on EOS (finish_reason eos_token)', async () => {
    const inputs = 'Tell me everything';
    const want = await backend(inputs, { max_new_tokens: 40 });
    assert.equal(want.finish, 'eos_token');
    assert.ok(want.completion < 40);
    const res = await endpoint.textGeneration({ model: MODEL, inputs,
      parameters: { max_new_tokens: 40, details: true } });
    assert.equal(res.generated_text, inputs + want.text);  // POST /: return_full_text
    assert.equal(res.details.finish_reason, 'eos_token');
    assert.equal(res.details.generated_tokens, want.completion);
  });

  test('textGenerationStream with details (finish_reason length)', async () => {
    const inputs = 'A list of animals:';
    const want = await backend(inputs, { max_new_tokens: 10 });
    const events = await collect(endpoint.textGenerationStream({ model: MODEL, inputs,
      parameters: { max_new_tokens: 10, details: true } }));
    checkStream(events, want, { details: true });
    assert.equal(events.at(-1).details.finish_reason, 'length');
    assert.equal(events.at(-1).details.generated_tokens, 10);
  });

  test('textGenerationStream without details', async () => {
    const inputs = 'Describe a mountain at dawn.';
    const want = await backend(inputs, { max_new_tokens: 7 });
    const events = await collect(endpoint.textGenerationStream({ model: MODEL, inputs,
      parameters: { max_new_tokens: 7 } }));
    checkStream(events, want, { details: false });
  });

  test('textGenerationStream with a stop sequence (finish_reason stop_sequence)', async () => {
    const inputs = 'Name the things you see';
    const full = await backend(inputs, { max_new_tokens: 16 });
    const stop = ' ' + full.text.trim().split(' ')[5];
    const want = await backend(inputs, { max_new_tokens: 16, stop: [stop] });
    assert.equal(want.finish, 'stop_sequence');
    const events = await collect(endpoint.textGenerationStream({ model: MODEL, inputs,
      parameters: { max_new_tokens: 16, stop: [stop], details: true } }));
    checkStream(events, want, { details: true });
  });

  test('textGenerationStream that ends on EOS (finish_reason eos_token)', async () => {
    const inputs = 'Keep talking';
    const want = await backend(inputs, { max_new_tokens: 50 });
    assert.equal(want.finish, 'eos_token');
    const events = await collect(endpoint.textGenerationStream({ model: MODEL, inputs,
      parameters: { max_new_tokens: 50, details: true } }));
    checkStream(events, want, { details: true });
  });

  test('a backend error in mid-stream ends textGenerationStream with the backend\'s message',
    async () => {
      // The emulator breaks a stream after two events with SGLang's in-band error event when
      // asked by X-Emulator-Fault; the proxy forwards the header, which this client can only
      // send through its `fetch` option. SGLang's own stream gives the text and the message.
      const headers = { 'X-Emulator-Fault': 'error_event' };
      const inputs = 'Name the things you see';
      const { text: nativeText, message } = await nativeTextBeforeError(
        `${stack.emulator.base}/generate`,
        { text: inputs, sampling_params: { max_new_tokens: 10 }, stream: true }, headers,
        { text: (ev) => ev.text }); // SGLang streams the cumulative text
      const fetchWithFault = (url, init) =>
        fetch(url, { ...init, headers: { ...init.headers, ...headers } });
      const events = [];
      await assert.rejects((async () => {
        for await (const e of endpoint.textGenerationStream({ model: MODEL, inputs,
          parameters: { max_new_tokens: 10 } }, { fetch: fetchWithFault })) events.push(e);
      })(), (err) => {
        assert.ok(err instanceof Error);
        assert.equal(err.message, message);
        return true;
      });
      assert.equal(events.map((e) => e.token.text).join(''), nativeText);
      assert.ok(events.every((e) => e.generated_text === null), 'no final event before the error');
    });

  test('an invalid parameter surfaces as the client\'s Error with the proxy\'s message',
    async () => {
      // TGI requires temperature > 0 (422 validation).
      const body = { inputs: 'hi', parameters: { max_new_tokens: 4, temperature: 0 } };
      const raw = await postJson(`${stack.proxy.base}/`, body);
      assert.equal(raw.status, 422, JSON.stringify(raw.body));
      assert.equal(raw.body.error_type, 'validation');
      assert.equal(typeof raw.body.error, 'string');
      await assert.rejects(endpoint.textGeneration({ model: MODEL, ...body }), (err) => {
        assert.ok(err instanceof Error);
        // request.ts: throw new Error(JSON.stringify(output.error))
        assert.equal(err.message, JSON.stringify(raw.body.error));
        return true;
      });

      // Streaming: TGI reports it either as a 422 JSON body or as an SSE error event; the
      // client raises Error(error) for both.
      const rawStream = await postRaw(`${stack.proxy.base}/`, { ...body, stream: true });
      let message;
      if (rawStream.status === 200) {
        assert.ok(rawStream.headers.get('content-type').startsWith('text/event-stream'));
        const m = /^data: ?(.*)$/m.exec(rawStream.text);
        assert.ok(m, rawStream.text);
        message = JSON.parse(m[1]).error;
      } else {
        assert.equal(rawStream.status, 422, rawStream.text);
        message = JSON.parse(rawStream.text).error;
      }
      assert.equal(typeof message, 'string', rawStream.text);
      await assert.rejects(collect(endpoint.textGenerationStream({ model: MODEL, ...body })),
        (err) => {
          assert.ok(err instanceof Error);
          assert.equal(err.message, message);
          assert.match(err.message, /temperature/);
          return true;
        });
    });
});
