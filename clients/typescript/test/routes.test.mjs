// The client's ROUTES agree with the service's OpenAPI document (REMEM_OPENAPI, a
// file the pytest test writes from the running app): the same methods and paths,
// both ways, and the same query parameters for each.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ROUTES } from "../dist/esm/index.js";

const doc = JSON.parse(readFileSync(process.env.REMEM_OPENAPI, "utf8"));

function fromDocument() {
  const found = new Map();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      found.set(`${method.toUpperCase()} ${path}`, query.sort());
    }
  }
  return found;
}

test("every route of the document is in ROUTES, and nothing else", () => {
  const client = new Map(
    Object.values(ROUTES).map((r) => [`${r.method} ${r.path}`, [...r.query].sort()]),
  );
  const documented = fromDocument();
  assert.deepEqual([...client.keys()].sort(), [...documented.keys()].sort());
  for (const [key, query] of documented) assert.deepEqual(client.get(key), query, key);
});
