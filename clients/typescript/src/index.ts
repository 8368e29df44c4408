/**
 * remem for TypeScript and JavaScript: a client of the remem HTTP service
 * (`remem serve`), with no runtime dependency beyond the platform's `fetch`.
 *
 *     import { Remem } from "remem";
 *     const remem = new Remem({ url: "http://127.0.0.1:8080", apiKey: process.env.REMEM_KEY! });
 *     await remem.remember({ actor: "u42", text: "Prefers aisle seats" });
 *     const packet = await remem.recall({ actor: "u42", query: "which seat?" });
 *     for await (const event of remem.events({ actor: "u42" })) console.log(event.text);
 *
 * Every route of the API is a method (see `ROUTES`); a failed call throws a typed
 * `RememError` carrying the service's `code`; listings with a cursor are async iterators.
 */

import { RememError, StoreError, errorFor } from "./errors.js";
import { ROUTES, type RouteName } from "./routes.js";

export * from "./errors.js";
export { ROUTES, type Route, type RouteName, type Method } from "./routes.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type Query = Record<string, string | number | boolean | undefined | null>;

export interface RememOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** An API key from `remem keys create`; its tenant and actor scope every call. */
  apiKey: string;
  /** Another `fetch` (a test double, a proxy-aware one); default the global one. */
  fetch?: typeof fetch;
  /** Milliseconds before a call is abandoned (a `StoreError`); default 30 000. */
  timeoutMs?: number;
}

export interface Event {
  event_id: string;
  actor_id: string;
  session_id: string;
  role: "user" | "assistant" | "tool" | "system";
  text: string;
  time: string;
  metadata: JsonObject | null;
}

export interface EventIn {
  actor: string;
  session: string;
  role: Event["role"];
  text: string;
  time?: string;
  eventId?: string;
  metadata?: JsonObject;
}

export interface RememberIn {
  actor: string;
  text: string;
  kind?: "semantic" | "preference" | "episodic";
  field?: string;
  value?: string;
  validUntil?: string;
  sensitivity?: "normal" | "personal" | "sensitive";
  namespace?: string;
  requestId?: string;
}

export interface RecallIn {
  actor: string;
  query: string;
  k?: number;
  budgetTokens?: number;
  asOf?: string;
  includeEvents?: boolean;
  explain?: boolean;
  namespace?: string;
}

export interface ForgetReport {
  deleted: Record<string, number>;
  verified: boolean;
  remaining: Record<string, number>;
  job_id: string;
  attempts: number;
}

/** A record as the service returns it (the API's own field names). */
export type MemoryRecord = JsonObject & { id: string; text: string; actor: string };

export class Remem {
  readonly url: string;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: RememOptions) {
    if (!options?.url || !options.apiKey) {
      throw new RememError("new Remem({ url, apiKey }) needs both", "invalid_input");
    }
    this.url = options.url.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    if (typeof this.#fetch !== "function") {
      throw new RememError("no fetch: use Node 18 or later, or pass options.fetch", "config_error");
    }
  }

  // -- the everyday calls ------------------------------------------------------------

  /** Store an explicit statement as a confirmed record at once; the record. */
  async remember(input: RememberIn): Promise<MemoryRecord> {
    const item = compact({
      request_id: input.requestId,
      actor_id: input.actor,
      text: input.text,
      kind: input.kind,
      field: input.field,
      value: input.value,
      valid_until: input.validUntil,
      sensitivity: input.sensitivity,
      namespace: input.namespace,
    });
    const out = (await this.call("batchCreate", { body: { records: [item] } })) as JsonObject;
    return only(out).record as MemoryRecord;
  }

  /** The packet of what matters for `query`, inside a token budget. */
  async recall(input: RecallIn): Promise<JsonObject> {
    const body = compact({
      actor_id: input.actor,
      query: input.query,
      top_k: input.k,
      budget_tokens: input.budgetTokens,
      as_of: input.asOf,
      include_events: input.includeEvents,
      explain: input.explain,
      namespace: input.namespace,
    });
    return (await this.call("retrieve", { body })) as JsonObject;
  }

  /** Erase one record (`recordId`) or everything of one actor (`actor`, an admin key);
   * the report says whether reading every surface back verified it. `reason` (a reason
   * or ticket reference) is kept in the erasure's receipt; the key names who asked. A
   * reason repeating a word of what is erased is refused (invalid_input, nothing erased). */
  async forget(
    input: ({ recordId: string } | { actor: string }) & { reason?: string },
  ): Promise<ForgetReport> {
    const query: Query = input.reason === undefined ? {} : { reason: input.reason };
    const out =
      "recordId" in input
        ? await this.call("forgetMemory", { path: { record_id: input.recordId }, query })
        : await this.call("forgetSubject", { path: { actor_id: input.actor }, query });
    return out as unknown as ForgetReport;
  }

  /** Append events (one transaction); whether each was new. */
  async addEvents(events: EventIn[]): Promise<JsonObject> {
    const rows = events.map((e) =>
      compact({
        actor_id: e.actor,
        session_id: e.session,
        role: e.role,
        text: e.text,
        time: e.time,
        event_id: e.eventId,
        metadata: e.metadata,
      }),
    );
    return (await this.call("addEvents", { body: { events: rows } })) as JsonObject;
  }

  /** An actor's events in the order they happened, read a page at a time. */
  events(input: { actor?: string; session?: string; pageSize?: number } = {}): AsyncIterable<Event> {
    return this.pages("listEvents", "events", {
      actor_id: input.actor,
      session_id: input.session,
      limit: input.pageSize,
    }) as AsyncIterable<Event>;
  }

  /** Records of an actor (or of the key's), newest first. */
  async memories(query: Query = {}): Promise<MemoryRecord[]> {
    const out = (await this.call("listMemories", { query })) as JsonObject;
    return out.records as MemoryRecord[];
  }

  /** An actor's workflow checkpoints whose name starts with `prefix`, by name descending. */
  checkpoints(input: { actor: string; prefix?: string; pageSize?: number }): AsyncIterable<JsonObject> {
    return this.pages(
      "listCheckpoints",
      "checkpoints",
      { prefix: input.prefix, limit: input.pageSize },
      { actor_id: input.actor },
    );
  }

  // -- every route ---------------------------------------------------------------------

  /**
   * Call one route of `ROUTES` by name: `path` fills its `{parameters}`, `query` its
   * query parameters (undefined ones are left out), `body` is sent as JSON. The answer's
   * JSON (text for /metrics); a failed call throws the `RememError` of its code.
   */
  async call(
    name: RouteName,
    options: { path?: Record<string, string>; query?: Query; body?: unknown } = {},
  ): Promise<Json> {
    const route = ROUTES[name];
    const path = route.path.replace(/\{(\w+)\}/g, (_, key: string) => {
      const value = options.path?.[key];
      if (value === undefined || value === "") {
        throw new RememError(`${name} needs ${key}`, "invalid_input");
      }
      return encodeURIComponent(value);
    });
    const url = new URL(this.url + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (!route.query.includes(key)) {
        throw new RememError(`${name} takes no query parameter ${key}`, "invalid_input");
      }
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.#apiKey}` };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    let resp: Response;
    try {
      resp = await this.#fetch(url, {
        method: route.method,
        headers,
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new StoreError(
        `cannot reach the remem server at ${this.url} (${String(err)}); is it running?`,
        "store_unavailable",
      );
    }
    const text = await resp.text();
    const isJson = (resp.headers.get("content-type") ?? "").includes("json");
    if (resp.ok) return isJson ? (JSON.parse(text) as Json) : text;
    let code = "http_error";
    let message = `HTTP ${resp.status}: ${text.slice(0, 200)}`;
    try {
      const err = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      if (err?.code && err.message) ({ code, message } = err as { code: string; message: string });
    } catch {
      // not JSON: the status says enough
    }
    throw errorFor(resp.status, code, message);
  }

  /** The items of a listing with `next_cursor`, following it page after page. */
  async *pages(
    name: RouteName,
    key: string,
    query: Query = {},
    path?: Record<string, string>,
  ): AsyncGenerator<JsonObject> {
    let cursor: string | null = null;
    do {
      const out = (await this.call(name, {
        path,
        query: { ...query, ...(cursor === null ? {} : { cursor }) },
      })) as JsonObject;
      for (const item of out[key] as JsonObject[]) yield item;
      cursor = (out.next_cursor as string | null) ?? null;
    } while (cursor !== null);
  }
}

function compact(obj: Record<string, unknown>): JsonObject {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as JsonObject;
}

/** The one result of a one-item batch, thrown as its typed error if it failed. */
function only(out: JsonObject): JsonObject {
  const result = (out.results as JsonObject[])[0];
  const status = result.status as number;
  if (status >= 400) {
    const err = result.error as { code: string; message: string };
    throw errorFor(status, err.code, err.message);
  }
  return result;
}
