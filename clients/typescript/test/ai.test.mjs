// The Vercel AI SDK tools (remem/ai) in `generateText` against a real `remem serve`
// (REMEM_URL, REMEM_KEY; started by tests/integrations/test_typescript_client.py), with
// the model an OpenAI-compatible server on loopback that this test starts and scripts,
// reached through @ai-sdk/openai-compatible: a Next.js-style script, plain node.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs } from "ai";

import { NotFound, Remem } from "../dist/esm/index.js";
import { rememTools } from "../dist/esm/ai.js";

const remem = new Remem({ url: process.env.REMEM_URL, apiKey: process.env.REMEM_KEY });

// -- the scripted model: each request is answered by `script(messages)` ----------------
let script = () => ({ text: "no script" });
const requests = [];
let server;
let model;

function completion(answer) {
  const message = answer.tool
    ? {
        role: "assistant",
        content: null,
        tool_calls: [{ id: `call_${requests.length}`, type: "function",
                       function: { name: answer.tool, arguments: JSON.stringify(answer.input) } }],
      }
    : { role: "assistant", content: answer.text };
  return {
    id: `chatcmpl-${requests.length}`, object: "chat.completion", created: 0, model: "fake-model",
    choices: [{ index: 0, message, finish_reason: answer.tool ? "tool_calls" : "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      try {
        const request = JSON.parse(body);
        requests.push(request);
        const answer = completion(script(request.messages));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      } catch (err) {
        // a script that fails answers 400 (not retried): the test fails, never hangs
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `script failed: ${err}`, type: "invalid_request_error" } }));
      }
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const provider = createOpenAICompatible({
    name: "scripted", apiKey: "test", baseURL: `http://127.0.0.1:${server.address().port}/v1`,
  });
  model = provider.chatModel("fake-model");
});

after(() => server.close());

/** The last tool result the model was shown, parsed (undefined when none; the text
 * itself when it is no JSON, as a tool error's message is). */
function lastToolResult(messages) {
  const last = messages.at(-1);
  if (last.role !== "tool") return undefined;
  try {
    return JSON.parse(last.content);
  } catch {
    return last.content;
  }
}

async function chat(actor, prompt, steps, client = remem) {
  script = (messages) => steps(lastToolResult(messages), messages);
  const { text } = await generateText({
    model, prompt, tools: rememTools(client, { actor }), stopWhen: stepCountIs(4),
  });
  return text;
}

test("remember, recall and forget as the model's tools", async () => {
  const told = await chat("nina", "Remember that I prefer aisle seats.", (result) =>
    result === undefined
      ? { tool: "remember", input: { text: "Nina prefers aisle seats" } }
      : { text: `Noted (${result.id}).` },
  );
  // the model was offered the three tools, and what it remembered is in remem
  assert.deepEqual(requests.at(-1).tools.map((t) => t.function.name).sort(), ["forget", "recall", "remember"]);
  const [record] = await remem.memories({ actor_id: "nina" });
  assert.equal(record.text, "Nina prefers aisle seats");
  assert.equal(told, `Noted (${record.id}).`);

  const answer = await chat("nina", "Which seat do I like?", (result) =>
    result === undefined
      ? { tool: "recall", input: { query: "which seat does she like" } }
      : { text: `You like: ${result.memories.map((m) => m.text).join("; ")}` },
  );
  assert.equal(answer, "You like: Nina prefers aisle seats");

  const forgot = await chat("nina", "Forget my seat preference.", (result) => {
    if (result === undefined) return { tool: "recall", input: { query: "seat preference" } };
    if (result.memories) return { tool: "forget", input: { memoryId: result.memories[0].id } };
    return { text: JSON.stringify(result) };
  });
  assert.deepEqual(JSON.parse(forgot), { forgot: record.id, verified: true });
  await assert.rejects(remem.call("getMemory", { path: { record_id: record.id } }), NotFound);
  const packet = await remem.recall({ actor: "nina", query: "which seat does she like" });
  assert.ok(!JSON.stringify(packet).includes("aisle"), JSON.stringify(packet));
});

test("a secret is refused to the model and nothing is stored", async () => {
  const said = await chat("pia", "My password is hunter2x7, remember it.", (result) =>
    result === undefined
      ? { tool: "remember", input: { text: "Pia's password is hunter2x7" } }
      : { text: JSON.stringify(result) },
  );
  const refusal = JSON.parse(said);
  assert.equal(refusal.error, "refused_content");
  assert.ok(!refusal.message.includes("hunter2x7"), refusal.message);
  assert.deepEqual(await remem.memories({ actor_id: "pia" }), []);
});

test("the tools read and erase only their own actor's memories", async () => {
  const bobs = await remem.remember({ actor: "bob", text: "Bob plays the cello" });
  const said = await chat("omar", "What instrument do I play? Then forget it.", (result) => {
    if (result === undefined) return { tool: "recall", input: { query: "who plays the cello" } };
    if (result.memories) {
      assert.deepEqual(result.memories, []); // bob's memory is not omar's
      return { tool: "forget", input: { memoryId: bobs.id } };
    }
    return { text: JSON.stringify(result) };
  });
  assert.equal(JSON.parse(said).error, "not_found");
  const still = await remem.call("getMemory", { path: { record_id: bobs.id } });
  assert.equal(still.text, "Bob plays the cello");
});

test("a failure other than refused input is the SDK's tool error, not a result", async () => {
  const gone = new Remem({ url: "http://127.0.0.1:9", apiKey: "k" });
  const shown = [];
  const said = await chat("nina", "Which seat do I like?", (result, messages) => {
    if (messages.at(-1).role !== "tool") return { tool: "recall", input: { query: "seat" } };
    shown.push(messages.at(-1).content);
    return { text: "The memory service is down." };
  }, gone);
  assert.equal(said, "The memory service is down.");
  // the AI SDK handed the model the thrown StoreError's message as a tool error
  assert.match(shown[0], /cannot reach the remem server/);
});

test("CommonJS has the tools too, and a bad actor is refused at once", () => {
  const require = createRequire(import.meta.url);
  const cjs = require("../dist/cjs/ai.js");
  const tools = cjs.rememTools(remem, { actor: "nina" });
  assert.deepEqual(Object.keys(tools).sort(), ["forget", "recall", "remember"]);
  assert.throws(() => rememTools(remem, { actor: "" }), /needs the actor's name/);
  assert.throws(() => rememTools(remem, { actor: "nina", k: 0 }), /k must be an integer/);
});
