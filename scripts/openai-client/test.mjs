// The official openai npm client against grpo serve. serve's
// TestOpenAINodeClient starts the server on the tiny model and runs
//   GRPO_URL=http://127.0.0.1:PORT GRPO_LORA=/abs/adapter node test.mjs
// Every response must parse in the client; each check throws on failure
// and the script exits non-zero with the first one.
import OpenAI from "openai";

const base = process.env.GRPO_URL;
const loraPath = process.env.GRPO_LORA;
if (!base || !loraPath) throw new Error("set GRPO_URL and GRPO_LORA");
// No retries: a 429 or 5xx must fail the test, not be papered over.
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "unused", maxRetries: 0 });

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const user = (content) => [{ role: "user", content }];

async function run(name, f) {
  await f();
  console.log(`ok ${name}`);
}

await run("models", async () => {
  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].id === "tiny", `models ${JSON.stringify(models.data)}`);
});

let greedy;
await run("chat with logprobs and token ids", async () => {
  const r = await client.chat.completions.create({
    model: "tiny", messages: user("hello"), max_tokens: 8, temperature: 0,
    logprobs: true, top_logprobs: 2, return_token_ids: true,
  });
  const c = r.choices[0];
  check(r.object === "chat.completion" && c.message.role === "assistant", "object and role");
  check(typeof c.message.content === "string", "content is a string");
  check(Array.isArray(c.token_ids) && c.token_ids.length > 0, "token_ids");
  check(Array.isArray(r.prompt_token_ids) && r.prompt_token_ids.length > 0, "prompt_token_ids");
  check(c.logprobs.content.length === c.token_ids.length, "a log-prob per token id");
  for (const e of c.logprobs.content) {
    check(typeof e.logprob === "number" && e.logprob <= 0 && e.top_logprobs.length === 2, `entry ${JSON.stringify(e)}`);
  }
  check(r.usage.completion_tokens === c.token_ids.length && r.usage.prompt_tokens === r.prompt_token_ids.length, "usage");
  check(["stop", "length"].includes(c.finish_reason), `finish ${c.finish_reason}`);
  greedy = c;
});

await run("streaming chat joins to the whole", async () => {
  const stream = await client.chat.completions.create({
    model: "tiny", messages: user("hello"), max_tokens: 8, temperature: 0,
    stream: true, stream_options: { include_usage: true }, return_token_ids: true,
  });
  let text = "", ids = [], finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    check(chunk.object === "chat.completion.chunk", `chunk object ${chunk.object}`);
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.content) text += ch.delta.content;
      if (ch.token_ids) ids.push(...ch.token_ids);
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check(chunks >= 3, `${chunks} chunks`);
  check(text === greedy.message.content, `streamed ${JSON.stringify(text)} vs ${JSON.stringify(greedy.message.content)}`);
  check(same(ids, greedy.token_ids) && finish === greedy.finish_reason, "streamed ids and finish");
  check(usage && usage.completion_tokens === ids.length, "usage chunk");
});

await run("completions with token ids, logprobs and echo", async () => {
  const prompt = [104, 101, 108, 108, 111]; // "hello"
  const r = await client.completions.create({
    model: "tiny", prompt, max_tokens: 5, temperature: 0, logprobs: 1, echo: true, return_token_ids: true,
  });
  const c = r.choices[0];
  check(r.object === "text_completion" && c.text.startsWith("hello"), `text ${JSON.stringify(c.text)}`);
  check(same(c.prompt_token_ids, prompt) && c.token_ids.length > 0, "token ids");
  check(c.logprobs.tokens.length === prompt.length + c.token_ids.length, "a log-prob entry per token");
  check(c.logprobs.token_logprobs[0] === null && typeof c.logprobs.token_logprobs[1] === "number", "the first prompt token has none");
  const s = await client.completions.create({ model: "tiny", prompt, max_tokens: 5, temperature: 0, stream: true, return_token_ids: true });
  let text = "", ids = [];
  for await (const chunk of s) {
    for (const ch of chunk.choices) { text += ch.text; if (ch.token_ids) ids.push(...ch.token_ids); }
  }
  check(same(ids, c.token_ids) && "hello" + text === c.text, "streamed completion");
});

await run("tools reach the template", async () => {
  const tools = [{ type: "function", function: { name: "get_weather", description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
  const plain = await client.chat.completions.create({ model: "tiny", messages: user("weather in Paris?"), max_tokens: 2, return_token_ids: true });
  const r = await client.chat.completions.create({ model: "tiny", messages: user("weather in Paris?"), tools, tool_choice: "auto", max_tokens: 2, return_token_ids: true });
  check(r.prompt_token_ids.length > plain.prompt_token_ids.length + 20, "the tool schema is in the prompt");
  const text = String.fromCharCode(...r.prompt_token_ids.filter((t) => t < 256));
  check(text.includes('"name": "get_weather"'), "the tool's name is in the prompt");
  // A conversation with a tool call and its result parses too.
  const r2 = await client.chat.completions.create({ model: "tiny", tools, max_tokens: 2, messages: [
    ...user("weather in Paris?"),
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    { role: "tool", tool_call_id: "c1", content: "sunny" },
  ] });
  check(typeof r2.choices[0].message.content === "string", "reply after a tool result");
});

await run("a LoRA loaded at run time changes the output", async () => {
  const ask = (model) => client.completions.create({ model, prompt: "abc", max_tokens: 8, temperature: 0, ignore_eos: true, return_token_ids: true });
  const before = (await ask("tiny")).choices[0].token_ids;
  // vLLM's endpoint answers plain text, so it is called with fetch.
  const res = await fetch(`${base}/v1/load_lora_adapter`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ lora_name: "rt", lora_path: loraPath }) });
  check(res.ok, `load_lora_adapter: ${res.status} ${await res.text()}`);
  const models = await client.models.list();
  check(models.data.some((m) => m.id === "rt" && m.parent === "tiny"), "the adapter is listed");
  const adapted = (await ask("rt")).choices[0].token_ids;
  check(!same(adapted, before), `the adapter changed nothing: ${before}`);
  check(same((await ask("tiny")).choices[0].token_ids, before), "the base model is unchanged");
  try {
    await client.completions.create({ model: "nope", prompt: "a", max_tokens: 1 });
    check(false, "an unknown model was served");
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError && e.message.includes("does not exist"), `unknown model: ${e}`);
  }
  try {
    await client.chat.completions.create({ model: "tiny", messages: user("a"), temperature: -1 });
    check(false, "temperature -1 was accepted");
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === "temperature", `bad request: ${e}`);
  }
});

await run("64 concurrent streamed requests", async () => {
  const one = async (i) => {
    const s = await client.chat.completions.create({ model: "tiny", messages: user(`q${i}`), max_tokens: 6, seed: i, stream: true });
    let finish = null, role = null;
    for await (const chunk of s) {
      for (const ch of chunk.choices) {
        if (ch.delta.role) role = ch.delta.role;
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    check(role === "assistant" && ["stop", "length"].includes(finish), `request ${i}: role ${role} finish ${finish}`);
  };
  await Promise.all(Array.from({ length: 64 }, (_, i) => one(i)));
});

await run("clients killed mid-stream free their slots", async () => {
  const metrics = async () => await (await fetch(`${base}/metrics`)).text();
  const metric = async (outcome) => Number((await metrics()).match(new RegExp(`grpo_requests_total\\{outcome="${outcome}"\\} (\\d+)`))[1]);
  const cancelledBefore = await metric("cancelled");
  // Fill every slot (8) with long generations and abandon each after its
  // first chunk.
  await Promise.all(Array.from({ length: 8 }, async (_, i) => {
    const ac = new AbortController();
    const s = await client.chat.completions.create({ model: "tiny", messages: user(`long ${i}`), max_tokens: 400, ignore_eos: true, stream: true }, { signal: ac.signal });
    for await (const _chunk of s) { ac.abort(); break; }
  }));
  const r = await client.chat.completions.create({ model: "tiny", messages: user("next"), max_tokens: 3 });
  check(r.choices.length === 1, "the next request is served");
  // Wait until nothing runs: the abandoned requests either were cancelled
  // (slots freed) or, if disconnects were missed, ran to their end.
  while (!(await metrics()).includes("grpo_requests_running 0\n")) {}
  const cancelled = (await metric("cancelled")) - cancelledBefore;
  check(cancelled === 8, `${cancelled} of the 8 abandoned requests were cancelled (the rest ran to the end)`);
});

console.log("all ok");
