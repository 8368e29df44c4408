/**
 * Every route of remem's HTTP API this client calls: its method, its path (with
 * `{name}` parameters) and the query parameters it takes. `test/routes.test.mjs`
 * checks this table against the service's OpenAPI document, both ways.
 */

export type Method = "GET" | "POST" | "PUT" | "DELETE";

export interface Route {
  readonly method: Method;
  readonly path: string;
  readonly query: readonly string[];
}

const route = (method: Method, path: string, query: readonly string[] = []): Route => ({
  method,
  path,
  query,
});

export const ROUTES = {
  health: route("GET", "/healthz"),
  ready: route("GET", "/readyz"),
  jobs: route("GET", "/v1/jobs"),
  listJobs: route("GET", "/v1/jobs/list", ["status", "limit", "cursor"]),
  retryJobs: route("POST", "/v1/jobs/retry", ["failed_only"]),
  addEvents: route("POST", "/v1/events"),
  listEvents: route("GET", "/v1/events", ["actor_id", "session_id", "limit", "cursor"]),
  importEventIds: route("POST", "/v1/events/import-ids"),
  retrieve: route("POST", "/v1/memories/retrieve"),
  fact: route("GET", "/v1/actors/{actor_id}/facts/{field}", ["as_of", "known_at", "valid_at"]),
  profile: route("GET", "/v1/actors/{actor_id}/profile", [
    "as_of",
    "known_at",
    "valid_at",
    "max_sensitivity",
    "budget_tokens",
  ]),
  listMemories: route("GET", "/v1/memories", [
    "actor_id",
    "all",
    "limit",
    "as_of",
    "field",
    "namespace",
    "metadata",
    "cursor",
  ]),
  getMemory: route("GET", "/v1/memories/{record_id}"),
  forgetMemory: route("DELETE", "/v1/memories/{record_id}", ["reason"]),
  history: route("GET", "/v1/memories/{record_id}/history"),
  batchCreate: route("POST", "/v1/memories/batch-create"),
  batchUpdate: route("POST", "/v1/memories/batch-update"),
  batchDelete: route("POST", "/v1/memories/batch-delete"),
  batchWrite: route("POST", "/v1/memories/batch"),
  proposeProcedure: route("POST", "/v1/procedures"),
  approve: route("POST", "/v1/memories/{record_id}/approve"),
  reject: route("POST", "/v1/memories/{record_id}/reject"),
  addDocument: route("POST", "/v1/documents"),
  listDocuments: route("GET", "/v1/documents", ["scope", "limit", "cursor"]),
  getDocument: route("GET", "/v1/documents/{document_id}"),
  removeDocument: route("DELETE", "/v1/documents/{document_id}"),
  searchDocuments: route("POST", "/v1/documents/search"),
  saveCheckpoint: route("PUT", "/v1/actors/{actor_id}/checkpoints/{workflow}"),
  loadCheckpoint: route("GET", "/v1/actors/{actor_id}/checkpoints/{workflow}"),
  deleteCheckpoint: route("DELETE", "/v1/actors/{actor_id}/checkpoints/{workflow}"),
  listCheckpoints: route("GET", "/v1/actors/{actor_id}/checkpoints", ["prefix", "limit", "cursor"]),
  deleteCheckpoints: route("DELETE", "/v1/actors/{actor_id}/checkpoints", ["prefix"]),
  forgetSubject: route("POST", "/v1/subjects/{actor_id}/forget", ["reason"]),
  exportSubject: route("GET", "/v1/subjects/{actor_id}/export"),
  listKeys: route("GET", "/v1/keys", ["limit", "cursor"]),
  createKey: route("POST", "/v1/keys"),
  revokeKey: route("DELETE", "/v1/keys/{key_id}"),
  metrics: route("GET", "/metrics"),
  listDeletions: route("GET", "/v1/deletions", ["limit", "cursor"]),
  deletionReceipt: route("GET", "/v1/deletions/{deletion_id}/receipt"),
  audit: route("GET", "/v1/audit", ["actor_id", "key_id", "action", "limit", "cursor"]),
  listProcedures: route("GET", "/v1/procedures", ["actor_id", "all", "limit", "cursor"]),
  freshStart: route("GET", "/v1/subjects/{actor_id}/fresh-start"),
} as const satisfies Record<string, Route>;

export type RouteName = keyof typeof ROUTES;
