// The console's only way out: the billing API, with the operator's token from session storage.

const TOKEN_KEY = 'billing-console-token';
let apiUrl = '';

/** config.json names the API's URL ('' = this origin, as the local runtime serves it). */
export async function loadConfig() {
  try {
    const res = await fetch('config.json', { cache: 'no-store' });
    if (!res.ok) return;
    const config = await res.json();
    if (typeof config.apiUrl === 'string') apiUrl = config.apiUrl.replace(/\/+$/, '');
  } catch {
    // No config: the API is this origin.
  }
}

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** A non-2xx answer (or no answer at all), with what the API said. */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Calls the API; resolves `{status, body}` on 2xx, rejects with an ApiError otherwise. */
export async function api(method, path, options = {}) {
  const token = options.token ?? session.token();
  const headers = { accept: 'application/json', ...(options.headers ?? {}) };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(apiUrl + path, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
  } catch (error) {
    throw new ApiError(0, 'unreachable', `the API could not be reached (${error instanceof Error ? error.message : 'network error'})`);
  }
  const text = await res.text();
  let body = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = text;
  }
  if (!res.ok) {
    const error = body && typeof body === 'object' ? body.error : undefined;
    const code = error?.code ?? (res.status === 401 ? 'unauthorized' : res.status === 403 ? 'forbidden' : res.status === 404 ? 'not_found' : `http_${res.status}`);
    const message = error?.message ?? (body && typeof body === 'object' && typeof body.message === 'string' ? body.message : res.statusText || String(text).slice(0, 200));
    throw new ApiError(res.status, code, message, Array.isArray(error?.details) ? error.details : undefined);
  }
  return { status: res.status, body };
}

/** One line a person can read: "The API answered 400 invalid_query: the request is invalid". */
export function describeError(error) {
  if (!(error instanceof ApiError)) return `Something went wrong in the console: ${error instanceof Error ? error.message : String(error)}`;
  if (error.status === 0) return `The API could not be reached: ${error.message}.`;
  return `The API answered ${error.status} ${error.code}: ${error.message}`;
}

export function newIdempotencyKey() {
  return `console-${crypto.randomUUID()}`;
}
