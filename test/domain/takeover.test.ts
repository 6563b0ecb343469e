import { describe, expect, it } from 'vitest';
import { ACCOUNT_CLOCK_SKEW_MS, deadHolderFoundAccountInactive } from '../../src/domain/takeover.js';

describe('deadHolderFoundAccountInactive: may a dead holder have presented the key, with the account not active now', () => {
  const heldSince = Date.parse('2027-01-20T12:00:00.000Z');
  const at = (offsetMs: number) => new Date(heldSince + offsetMs).toISOString();
  it('no, when the account was in its status since before the lease was held (beyond the clock skew)', () => {
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: at(-ACCOUNT_CLOCK_SKEW_MS - 1) })).toBe(true);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'closed', status_since: at(-86_400_000) })).toBe(true);
  });
  it('maybe, when the status changed after the lease was taken or within the skew of it', () => {
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: at(1) })).toBe(false);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: at(-ACCOUNT_CLOCK_SKEW_MS) })).toBe(false);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: at(0) }, 0)).toBe(false); // the same instant: the ban may have come after the check
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: at(-1) }, 0)).toBe(true);
  });
  it('maybe, when either instant is unknown or unreadable, or the account is active', () => {
    expect(deadHolderFoundAccountInactive({}, { status: 'banned', status_since: at(-86_400_000) })).toBe(false);
    expect(deadHolderFoundAccountInactive(undefined, { status: 'banned', status_since: at(-86_400_000) })).toBe(false);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned' })).toBe(false);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'banned', status_since: 'yesterday' })).toBe(false);
    expect(deadHolderFoundAccountInactive({ held_since: heldSince }, { status: 'active', status_since: at(-86_400_000) })).toBe(false);
  });
});
