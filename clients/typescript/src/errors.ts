/**
 * remem's errors, as the HTTP service reports them (`{"error": {"code", "message"}}`).
 *
 *     RememError            every error; `code` is the service's, `status` the HTTP status
 *     ├── InvalidInput      400, 413, 422: what was wrong, and what to do
 *     │   └── RefusedContent  422 refused_content: a secret was refused, nothing stored
 *     ├── Unauthorized      401: no key, or an unknown or revoked one
 *     ├── Forbidden         403: the key may not act on that actor or operation
 *     ├── NotFound          404: not there, or not in the key's scope
 *     ├── ConflictError     409: e.g. a stale checkpoint version
 *     └── StoreError        5xx, or the server could not be reached (status 0)
 */

export class RememError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(message: string, code = "error", status = 0) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

export class InvalidInput extends RememError {}
export class RefusedContent extends InvalidInput {}
export class Unauthorized extends RememError {}
export class Forbidden extends RememError {}
export class NotFound extends RememError {}
export class ConflictError extends RememError {}
export class StoreError extends RememError {}

/** The typed error of an HTTP answer that failed, from its status and `error.code`. */
export function errorFor(status: number, code: string, message: string): RememError {
  if (status === 401) return new Unauthorized(message, code, status);
  if (status === 403) return new Forbidden(message, code, status);
  if (status === 404) return new NotFound(message, code, status);
  if (status === 409) return new ConflictError(message, code, status);
  if (code === "refused_content") return new RefusedContent(message, code, status);
  if (status >= 400 && status < 500) return new InvalidInput(message, code, status);
  return new StoreError(message, code, status);
}
