import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * HMAC-signed webhooks (DESIGN 4 and 8): header `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`.
 * Verification happens before anything is read from the body.
 */

export const DEFAULT_SIGNATURE_TOLERANCE_S = 300;

export type SignatureFailure = 'missing' | 'malformed' | 'stale' | 'mismatch';

export type SignatureVerdict = { readonly ok: true; readonly timestamp: number } | { readonly ok: false; readonly reason: SignatureFailure };

const HEX_SHA256 = /^[0-9a-f]{64}$/i;
const UNIX_SECONDS = /^\d{1,12}$/;

/** `t=<unix s>,v1=<hex>` for `rawBody` (senders, the local runtime and tests). */
export function signPayload(rawBody: string, secret: string, tSeconds: number): string {
  return `t=${tSeconds},v1=${hmacHex(secret, `${tSeconds}.${rawBody}`)}`;
}

/**
 * The keys a receiver's secret holds: one value, or during a rotation `{"current","previous"}`
 * (docs/security.md), both accepted until the previous one is removed. An empty key is never a key.
 */
export function signingKeysOf(secret: string): string[] {
  const trimmed = secret.trim();
  if (trimmed.startsWith('{')) {
    try {
      const parsed = JSON.parse(trimmed) as { current?: unknown; previous?: unknown };
      return [parsed.current, parsed.previous].filter((key): key is string => typeof key === 'string' && key.trim() !== '');
    } catch {
      return [];
    }
  }
  return trimmed === '' ? [] : [secret];
}

/**
 * Checks a signature header against the raw body: the timestamp within `toleranceS` of `nowMs`
 * (either side) and one of the `v1` values equal to the HMAC under one of the secret's keys
 * (`signingKeysOf`), every pair compared in constant time. A secret with no key verifies nothing.
 */
export function verifySignedPayload(
  headerValue: string | undefined,
  rawBody: string,
  secret: string,
  nowMs: number,
  toleranceS = DEFAULT_SIGNATURE_TOLERANCE_S,
): SignatureVerdict {
  if (headerValue === undefined || headerValue.trim() === '') return { ok: false, reason: 'missing' };
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of headerValue.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return { ok: false, reason: 'malformed' };
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't') {
      if (timestamp !== undefined || !UNIX_SECONDS.test(value)) return { ok: false, reason: 'malformed' };
      timestamp = Number(value);
    } else if (name === 'v1') {
      if (!HEX_SHA256.test(value)) return { ok: false, reason: 'malformed' };
      candidates.push(value.toLowerCase());
    }
    // Other schemes (v0, future versions) are ignored, as Stripe does.
  }
  if (timestamp === undefined || candidates.length === 0) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceS) return { ok: false, reason: 'stale' };
  let matched = false;
  for (const key of signingKeysOf(secret)) {
    const expected = Buffer.from(hmacHex(key, `${timestamp}.${rawBody}`), 'hex');
    for (const candidate of candidates) {
      // Lengths are equal (both 32 bytes, checked by the regex), so timingSafeEqual never throws.
      if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) matched = true;
    }
  }
  return matched ? { ok: true, timestamp } : { ok: false, reason: 'mismatch' };
}

function hmacHex(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload, 'utf8').digest('hex');
}
