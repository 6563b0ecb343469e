import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument, type JsonObject } from '../openapi/document.js';
import type { GatewayRequest, GatewayResponse } from './gateway.js';

/**
 * The local runtime's pages (never part of a Lambda): GET /openapi.json, a readable rendering of
 * it at GET /docs, and the operator console's static files at GET /console (docs/design.md,
 * operator surfaces). They answer while the rest is still starting.
 */

/** The console's files: plain HTML, JS modules and CSS, served as they are (no build step). */
export const CONSOLE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../console');

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json',
};

/** The console talks only to its own origin (the API); nothing inline, nothing from elsewhere. */
const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' };

export function localPages(options: { readonly baseUrl: () => string }) {
  let openapi: string | undefined;
  let docs: string | undefined;
  return async (request: GatewayRequest, path: string): Promise<GatewayResponse | undefined> => {
    const method = request.method.toUpperCase();
    const isPage = path === '/' || path === '/openapi.json' || path === '/docs' || path === '/console' || path.startsWith('/console/');
    if (!isPage) return undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      return { status: 405, headers: { 'content-type': 'application/json', allow: 'GET' }, body: JSON.stringify({ error: { code: 'method_not_allowed', message: `${method} is not allowed on ${path}; use GET` } }) };
    }
    if (path === '/openapi.json') {
      openapi ??= JSON.stringify(openApiDocument({ serverUrl: options.baseUrl() }), null, 2);
      return { status: 200, headers: { 'content-type': 'application/json', ...PAGE_HEADERS }, body: openapi };
    }
    if (path === '/docs') {
      docs ??= renderDocs(openApiDocument({ serverUrl: options.baseUrl() }));
      return { status: 200, headers: { 'content-type': CONTENT_TYPES.html!, 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'", ...PAGE_HEADERS }, body: docs };
    }
    // The root leads a person who opens the printed URL to the console.
    if (path === '/console' || path === '/') return { status: 302, headers: { location: '/console/', ...PAGE_HEADERS }, body: '' };
    return consoleFile(path.slice('/console/'.length));
  };
}

async function consoleFile(name: string): Promise<GatewayResponse> {
  const file = name === '' ? 'index.html' : name;
  // The console is a flat folder of files with plain names: nothing else is served.
  const m = /^[a-z0-9][a-z0-9-]*\.(html|js|css|json)$/.exec(file);
  if (!m) return notFound();
  if (file === 'config.json') {
    // Locally the API is the same origin; the deployed console gets its API URL here instead.
    return { status: 200, headers: { 'content-type': 'application/json', ...PAGE_HEADERS }, body: JSON.stringify({ apiUrl: '' }) };
  }
  try {
    const body = await readFile(join(CONSOLE_DIR, file));
    return {
      status: 200,
      headers: { 'content-type': CONTENT_TYPES[m[1]!]!, 'content-security-policy': CONSOLE_CSP, 'x-frame-options': 'DENY', ...PAGE_HEADERS },
      body: body.toString('utf8'),
    };
  } catch {
    return notFound();
  }
}

function notFound(): GatewayResponse {
  return { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { code: 'not_found', message: 'no such console file' } }) };
}

/* ---------------- /docs: the OpenAPI document as one plain page ---------------- */

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The document's descriptions are Markdown: inline code and bold, rendered; everything else escaped. */
function markdown(text: string): string {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
}

const REF = /#\/components\/schemas\/([A-Za-z0-9_]+)/g;

/** A schema as JSON, each `$ref` a link to the schema it names. */
function schemaText(schema: unknown): string {
  return escapeHtml(JSON.stringify(schema, null, 2)).replace(REF, (ref, name: string) => `<a href="#schema-${name}">${ref}</a>`);
}

/** A response's schema: its component(s) as links, or the schema itself. */
function responseSchemaHtml(schema: unknown): string {
  const refs = [...JSON.stringify(schema ?? null).matchAll(REF)].map((m) => m[1]!);
  const only = schema && typeof schema === 'object' && Object.keys(schema).every((k) => k === '$ref' || k === 'oneOf');
  if (only && refs.length > 0) return refs.map((name) => `<a href="#schema-${name}"><code>${name}</code></a>`).join(' or ');
  return `<code>${schemaText(schema)}</code>`;
}

function renderDocs(doc: JsonObject): string {
  const info = doc.info as { title: string; version: string; description: string };
  const paths = doc.paths as Record<string, Record<string, JsonObject>>;
  const operations: string[] = [];
  const index: string[] = [];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const id = String(op.operationId);
      const security = (op.security as Record<string, string[]>[])[0]!;
      const [scheme, scopes] = Object.entries(security)[0]!;
      const auth = scheme === 'bearerJwt' ? `Bearer JWT, scope <code>${escapeHtml(scopes.join(' '))}</code>` : `Signed: <code>${escapeHtml(scheme)}</code>`;
      index.push(`<li><a href="#${id}"><code>${method.toUpperCase()} ${escapeHtml(path)}</code></a> ${markdown(String(op.summary))}</li>`);
      const parameters = ((op.parameters ?? []) as { name: string; in: string; required: boolean; description?: string; schema: unknown }[])
        .map((p) => `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${schemaText(p.schema)}</code>${p.description ? `<br>${markdown(p.description)}` : ''}</td></tr>`)
        .join('');
      const body = op.requestBody as { required: boolean; description?: string; content: Record<string, { schema: unknown }> } | undefined;
      const responses = Object.entries(op.responses as Record<string, { description: string; content: Record<string, { schema: unknown }> }>)
        .map(([status, r]) => `<tr><td>${status}</td><td>${markdown(r.description)}</td><td>${responseSchemaHtml(r.content['application/json']?.schema)}</td></tr>`)
        .join('');
      operations.push(`<section id="${id}">
<h3><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h3>
<p>${markdown(String(op.summary))}${op.description ? ` ${markdown(String(op.description))}` : ''}</p>
<p>Auth: ${auth}</p>
${parameters ? `<table><caption>Parameters</caption><tr><th>name</th><th>in</th><th>required</th><th>schema</th></tr>${parameters}</table>` : ''}
${body ? `<details><summary>Request body (${body.required ? 'required' : 'optional'})${body.description ? `: ${markdown(body.description)}` : ''}</summary><pre>${schemaText(body.content['application/json']?.schema)}</pre></details>` : ''}
<table><caption>Responses</caption><tr><th>status</th><th>meaning</th><th>schema</th></tr>${responses}</table>
</section>`);
    }
  }
  const schemas = Object.entries((doc.components as { schemas: Record<string, unknown> }).schemas)
    .map(([name, schema]) => `<details id="schema-${name}"><summary><code>${name}</code></summary><pre>${schemaText(schema)}</pre></details>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(info.title)} ${escapeHtml(info.version)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.45 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}code,pre{font:13px ui-monospace,monospace}pre{background:#f4f4f4;padding:.5rem;overflow:auto}table{border-collapse:collapse;margin:.5rem 0;width:100%}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}caption{text-align:left;font-weight:600}section{border-top:1px solid #ddd;margin-top:1.5rem}a:focus,summary:focus{outline:3px solid #1a5fb4}</style>
</head><body>
<h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1>
<p>${markdown(info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Operator console: <a href="/console/">/console</a>.</p>
<h2>Operations</h2><ul>${index.join('')}</ul>
${operations.join('\n')}
<h2>Schemas</h2>
${schemas}
</body></html>`;
}
