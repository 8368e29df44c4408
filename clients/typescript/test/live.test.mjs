// Against a real `remem serve` (REMEM_URL, REMEM_KEY; started by
// tests/integrations/test_typescript_client.py): what a Next.js route handler would do.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as esm from "../dist/esm/index.js";

const require = createRequire(import.meta.url);
const cjs = require("../dist/cjs/index.js");
const options = { url: process.env.REMEM_URL, apiKey: process.env.REMEM_KEY };

test("remember, recall and forget, from ESM and from CommonJS", async () => {
  for (const [mod, actor] of [[esm, "nina"], [cjs, "omar"]]) {
    const remem = new mod.Remem(options);
    const record = await remem.remember({ actor, text: `${actor} prefers aisle seats` });
    assert.equal(record.actor, actor);
    const packet = await remem.recall({ actor, query: "which seat does she like?" });
    assert.ok(JSON.stringify(packet).includes(`${actor} prefers aisle seats`), JSON.stringify(packet));
    const report = await remem.forget({ recordId: record.id });
    assert.equal(report.verified, true);
    const after = await remem.recall({ actor, query: "which seat does she like?" });
    assert.ok(!JSON.stringify(after).includes("aisle"), JSON.stringify(after));
  }
});

test("errors are typed and carry the service's code", async () => {
  const remem = new esm.Remem(options);
  await assert.rejects(remem.call("getMemory", { path: { record_id: "rec_nope" } }), (err) => {
    assert.ok(err instanceof esm.NotFound && err instanceof esm.RememError);
    assert.equal(err.code, "not_found");
    assert.equal(err.status, 404);
    return true;
  });
  await assert.rejects(
    remem.remember({ actor: "nina", text: "my api key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" }),
    (err) => err instanceof esm.RefusedContent && err.code === "refused_content",
  );
  const stranger = new esm.Remem({ ...options, apiKey: "rk_unknown" });
  await assert.rejects(stranger.recall({ actor: "nina", query: "x" }), esm.Unauthorized);
  const gone = new esm.Remem({ url: "http://127.0.0.1:9", apiKey: "k" });
  await assert.rejects(gone.call("health"), (err) => err instanceof esm.StoreError);
});

test("a listing with a cursor is an async iterator over every page", async () => {
  const remem = new esm.Remem(options);
  const events = Array.from({ length: 5 }, (_, i) => ({
    actor: "pia", session: "s1", role: "user", text: `turn ${i}`, eventId: `evt_ts_${i}`,
    time: `2026-06-01T10:0${i}:00+00:00`,
  }));
  await remem.addEvents(events);
  const seen = [];
  for await (const e of remem.events({ actor: "pia", pageSize: 2 })) seen.push(e.text);
  assert.deepEqual(seen, ["turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]);
  const erased = await remem.forget({ actor: "pia", reason: "ticket T-12" });
  assert.equal(erased.verified, true);
  const log = await remem.call("listDeletions", { query: { limit: 1 } });
  assert.equal(log.deletions[0].reason, "ticket T-12");  // kept in the receipt
  const left = [];
  for await (const e of remem.events({ actor: "pia" })) left.push(e);
  assert.deepEqual(left, []);
});
