/**
 * remem as tools of the Vercel AI SDK (the `ai` package, 6.x): `remember`, `recall` and
 * `forget`, bound to one actor, for `generateText` / `streamText`.
 *
 *     import { generateText, stepCountIs } from "ai";
 *     import { Remem } from "remem";
 *     import { rememTools } from "remem/ai";
 *
 *     const remem = new Remem({ url: process.env.REMEM_URL!, apiKey: process.env.REMEM_KEY! });
 *     const { text } = await generateText({
 *       model, prompt: "Remember that I prefer aisle seats.",
 *       tools: rememTools(remem, { actor: userId }), stopWhen: stepCountIs(3),
 *     });
 *
 * The mapping (every call through the service, so its key's scope, validation and secret
 * screening hold):
 *
 *     tool       input                 remem                           the model is given
 *     remember   { text }              POST /v1/memories:batchCreate   { id, text }
 *                                      (an explicit statement,
 *                                      confirmed at once)
 *     recall     { query }             POST /v1/retrieve (k items)     { memories: [{ id, text,
 *                                                                        kind, date }] }
 *     forget     { memoryId }          GET then DELETE                 { forgot, verified }
 *                                      /v1/memories/{id}: only a
 *                                      record of this actor
 *
 * A refused secret, invalid input or an id that is no memory of this actor comes back to
 * the model as `{ error: code, message }` (nothing was stored or erased), so it can say
 * so; any other failure (a bad key, the service down) is thrown from `execute`, which
 * the AI SDK records as a `tool-error` (the model is shown its message). `forget`
 * answers `verified: true` only when the service read every surface back.
 */

import { jsonSchema, tool } from "ai";

import { InvalidInput, NotFound } from "./errors.js";
import type { JsonObject, Remem } from "./index.js";

export interface RememToolsOptions {
  /** The remem actor (the end user) every call reads and writes. */
  actor: string;
  /** The most memories a recall hands the model (default 5). */
  k?: number;
}

/** What a tool hands the model when remem refused the call. */
export interface ToolRefusal {
  error: string;
  message: string;
}

type Said<T> = Promise<T | ToolRefusal>;

/** The `remember`, `recall` and `forget` tools for one actor; see the module comment. */
export function rememTools(remem: Remem, options: RememToolsOptions) {
  const actor = options?.actor;
  if (typeof actor !== "string" || !actor.trim()) {
    throw new InvalidInput("rememTools(remem, { actor }) needs the actor's name", "invalid_input");
  }
  const k = options.k ?? 5;
  if (!Number.isInteger(k) || k < 1 || k > 1000) {
    throw new InvalidInput(`k must be an integer from 1 to 1000; got ${k}`, "invalid_input");
  }
  return {
    remember: tool({
      description:
        "Remember a durable fact or preference the user stated, in one short sentence " +
        "about the user (e.g. 'Prefers aisle seats').",
      inputSchema: jsonSchema<{ text: string }>({
        type: "object",
        properties: { text: { type: "string", description: "the statement to remember" } },
        required: ["text"],
        additionalProperties: false,
      }),
      execute: async ({ text }): Said<{ id: string; text: string }> =>
        refused(async () => {
          const record = await remem.remember({ actor, text });
          return { id: record.id, text: record.text };
        }),
    }),
    recall: tool({
      description: "Recall what is known about the user that matters for a question.",
      inputSchema: jsonSchema<{ query: string }>({
        type: "object",
        properties: { query: { type: "string", description: "what to look for" } },
        required: ["query"],
        additionalProperties: false,
      }),
      execute: async ({ query }): Said<{ memories: JsonObject[] }> =>
        refused(async () => {
          const packet = await remem.recall({ actor, query, k, includeEvents: false });
          const items = [...asItems(packet.pinned), ...asItems(packet.records)];
          const memories = items.map((m) => ({
            id: m.id, text: m.text, kind: m.kind, date: m.source_date,
          }));
          return { memories };
        }),
    }),
    forget: tool({
      description:
        "Erase one memory of the user for good, when the user asks to forget it; " +
        "memoryId is an id that recall returned.",
      inputSchema: jsonSchema<{ memoryId: string }>({
        type: "object",
        properties: { memoryId: { type: "string", description: "the memory's id" } },
        required: ["memoryId"],
        additionalProperties: false,
      }),
      execute: async ({ memoryId }): Said<{ forgot: string; verified: boolean }> =>
        refused(async () => {
          const record = (await remem
            .call("getMemory", { path: { record_id: memoryId } })
            .catch((err) => (err instanceof NotFound ? null : Promise.reject(err)))) as
            | JsonObject
            | null;
          if (record === null || record.actor !== actor) {
            // another actor's record is not named as existing
            const what = `actor ${JSON.stringify(actor)} has no memory ${JSON.stringify(memoryId)}`;
            throw new NotFound(what, "not_found", 404);
          }
          const report = await remem.forget({ recordId: memoryId });
          return { forgot: memoryId, verified: report.verified };
        }),
    }),
  };
}

/** `run()`, or the refusal a model can read when remem refused the input. */
async function refused<T>(run: () => Promise<T>): Said<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof InvalidInput || err instanceof NotFound) {
      return { error: err.code, message: err.message };
    }
    throw err;
  }
}

function asItems(value: unknown): JsonObject[] {
  return Array.isArray(value) ? (value as JsonObject[]) : [];
}
