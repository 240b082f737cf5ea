// One request through an official Node SDK, its own retries off, for the gateway tests.
// Usage: node client.cjs API STREAM URL  (API: anthropic | openai-chat | openai-responses;
// STREAM: stream | json). The SDKs are loaded from BACKSTAY_NODE_SDKS (the directory
// scripts/install-node-sdks fills); the key comes from BACKSTAY_TEST_KEY.
// Prints one JSON line: {"ok": true, "text": ...} or {"ok": false, "status": N, "error": ...}.
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

const load = createRequire(path.join(process.env.BACKSTAY_NODE_SDKS, "package.json"));
const [api, mode, url] = process.argv.slice(2);
const stream = mode === "stream";
const apiKey = process.env.BACKSTAY_TEST_KEY;
const prompt = "Write a haiku about resilient systems.";

async function anthropic() {
  const Anthropic = load("@anthropic-ai/sdk").default;
  const client = new Anthropic({ apiKey, baseURL: url, maxRetries: 0, timeout: 20000 });
  const body = {
    model: "claude-sonnet-4-6",
    max_tokens: 200,
    messages: [{ role: "user", content: prompt }],
  };
  const message = stream
    ? await client.messages.stream(body).finalMessage()
    : await client.messages.create(body);
  return message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

async function openaiChat() {
  const OpenAI = load("openai").default;
  const client = new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0, timeout: 20000 });
  const body = { model: "gpt-5", messages: [{ role: "user", content: prompt }] };
  if (!stream) {
    const done = await client.chat.completions.create(body);
    return done.choices[0].message.content;
  }
  let text = "";
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  return text;
}

async function openaiResponses() {
  const OpenAI = load("openai").default;
  const client = new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0, timeout: 20000 });
  const body = { model: "gpt-5", input: prompt };
  const response = stream
    ? await client.responses.stream(body).finalResponse()
    : await client.responses.create(body);
  // A streamed final response carries no output_text: read the message items.
  return response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content)
    .map((part) => part.text ?? "")
    .join("");
}

const calls = { anthropic, "openai-chat": openaiChat, "openai-responses": openaiResponses };

calls[api]().then(
  (text) => {
    process.stdout.write(JSON.stringify({ ok: true, text }) + "\n");
  },
  (err) => {
    const status = typeof err.status === "number" ? err.status : null;
    process.stdout.write(JSON.stringify({ ok: false, status, error: String(err.message) }) + "\n");
    process.exitCode = 1;
  },
);
