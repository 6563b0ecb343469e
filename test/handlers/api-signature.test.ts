import { describe, expect, it } from 'vitest';
import { signPayload, verifySignedPayload } from '../../src/handlers/shared/signature.js';

const secret = 'whsec_test';
const body = '{"event_id":"e1"}';
const now = Date.parse('2026-03-01T12:00:00Z');
const t = now / 1000;

describe('verifySignedPayload', () => {
  it('accepts a signature it made', () => {
    expect(verifySignedPayload(signPayload(body, secret, t), body, secret, now)).toEqual({ ok: true, timestamp: t });
  });

  it('accepts a timestamp within the tolerance on either side', () => {
    expect(verifySignedPayload(signPayload(body, secret, t - 299), body, secret, now).ok).toBe(true);
    expect(verifySignedPayload(signPayload(body, secret, t + 299), body, secret, now).ok).toBe(true);
  });

  it('refuses a stale or future timestamp', () => {
    expect(verifySignedPayload(signPayload(body, secret, t - 301), body, secret, now)).toEqual({ ok: false, reason: 'stale' });
    expect(verifySignedPayload(signPayload(body, secret, t + 301), body, secret, now)).toEqual({ ok: false, reason: 'stale' });
    expect(verifySignedPayload(signPayload(body, secret, t - 20), body, secret, now, 10).ok).toBe(false);
  });

  it('refuses a changed body, another secret or a re-timestamped signature', () => {
    expect(verifySignedPayload(signPayload(body, secret, t), `${body} `, secret, now)).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifySignedPayload(signPayload(body, 'other', t), body, secret, now)).toEqual({ ok: false, reason: 'mismatch' });
    const v1 = signPayload(body, secret, t).split('v1=')[1];
    expect(verifySignedPayload(`t=${t + 1},v1=${v1}`, body, secret, now)).toEqual({ ok: false, reason: 'mismatch' });
  });

  it('accepts the current and the previous key during a rotation, and only those', () => {
    const rotating = JSON.stringify({ current: 'whsec_new', previous: secret });
    expect(verifySignedPayload(signPayload(body, 'whsec_new', t), body, rotating, now).ok).toBe(true);
    expect(verifySignedPayload(signPayload(body, secret, t), body, rotating, now).ok).toBe(true);
    expect(verifySignedPayload(signPayload(body, 'whsec_other', t), body, rotating, now)).toEqual({ ok: false, reason: 'mismatch' });
    // The rotation done: the previous key no longer verifies.
    expect(verifySignedPayload(signPayload(body, secret, t), body, JSON.stringify({ current: 'whsec_new' }), now).ok).toBe(false);
  });

  it('an empty secret verifies nothing, not even a signature made with the empty key', () => {
    for (const empty of ['', '  ', '{}', '{"current":""}', '{not json']) {
      expect(verifySignedPayload(signPayload(body, '', t), body, empty, now)).toEqual({ ok: false, reason: 'mismatch' });
    }
  });

  it('accepts when any of several v1 values matches (secret rotation)', () => {
    const good = signPayload(body, secret, t).split('v1=')[1];
    expect(verifySignedPayload(`t=${t},v1=${'0'.repeat(64)},v1=${good}`, body, secret, now).ok).toBe(true);
  });

  it.each([
    [undefined, 'missing'],
    ['', 'missing'],
    ['garbage', 'malformed'],
    [`t=${t}`, 'malformed'],
    [`v1=${'a'.repeat(64)}`, 'malformed'],
    [`t=abc,v1=${'a'.repeat(64)}`, 'malformed'],
    [`t=${t},v1=zz`, 'malformed'],
    [`t=${t},t=${t},v1=${'a'.repeat(64)}`, 'malformed'],
    [`t=-5,v1=${'a'.repeat(64)}`, 'malformed'],
  ])('refuses header %j as %s', (header, reason) => {
    expect(verifySignedPayload(header, body, secret, now)).toEqual({ ok: false, reason });
  });
});
