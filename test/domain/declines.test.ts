import { describe, expect, it } from 'vitest';
import { DECLINE_TABLE, classifyDecline, type DeclineDetails } from '../../src/domain/declines.js';
import type { CardNetwork } from '../../src/domain/records.js';

describe('the classification table', () => {
  it.each(DECLINE_TABLE.map((r) => [r.field, r.code, r.network ?? 'any', r.class] as const))('%s %s (%s network) is %s', (field, code, network, cls) => {
    const details: DeclineDetails = {
      decline_code: field === 'decline_code' ? code : 'not_in_the_table',
      [field]: code,
      ...(network !== 'any' ? { card_network: network as CardNetwork } : {}),
    };
    expect(classifyDecline(details)).toEqual({ decline_code: details.decline_code, decline_class: cls, known: true });
  });

  it('names every class DESIGN 5b lists in the bucket it names', () => {
    const of = (decline_code: string, extra: Partial<DeclineDetails> = {}) => classifyDecline({ decline_code, ...extra }).decline_class;
    for (const code of ['lost_card', 'stolen_card', 'pickup_card', 'fraudulent', 'revocation_of_authorization', 'invalid_account', 'card_not_supported']) {
      expect(of(code)).toBe('do_not_retry');
    }
    expect(of('generic_decline', { advice_code: 'do_not_try_again' })).toBe('do_not_retry');
    expect(of('generic_decline', { network_advice_code: '03', card_network: 'mastercard' })).toBe('do_not_retry');
    expect(of('generic_decline', { network_advice_code: '21', card_network: 'mastercard' })).toBe('do_not_retry');
    for (const code of ['expired_card', 'incorrect_number', 'incorrect_cvc', 'invalid_expiry_month']) expect(of(code)).toBe('update_payment_method');
    expect(of('generic_decline', { advice_code: 'confirm_card_data' })).toBe('update_payment_method');
    expect(of('authentication_required')).toBe('customer_action');
    for (const code of ['insufficient_funds', 'do_not_honor', 'generic_decline', 'try_again_later', 'processing_error', 'issuer_not_available']) {
      expect(of(code)).toBe('retry_later');
    }
  });

  it('lets the most restrictive code win when the codes disagree', () => {
    expect(classifyDecline({ decline_code: 'insufficient_funds', advice_code: 'do_not_try_again' }).decline_class).toBe('do_not_retry');
    expect(classifyDecline({ decline_code: 'lost_card', advice_code: 'try_again_later' }).decline_class).toBe('do_not_retry');
    // A Visa category-1 response code under a generic decline: never reattempted.
    expect(classifyDecline({ decline_code: 'generic_decline', network_decline_code: '41', card_network: 'visa' }).decline_class).toBe('do_not_retry');
  });

  it('reads a network code for its own network, and for a card whose network is not known', () => {
    expect(classifyDecline({ decline_code: 'generic_decline', network_decline_code: '14', card_network: 'visa' }).decline_class).toBe('do_not_retry');
    expect(classifyDecline({ decline_code: 'generic_decline', network_decline_code: '14', card_network: 'mastercard' }).decline_class).toBe('update_payment_method');
    expect(classifyDecline({ decline_code: 'generic_decline', network_advice_code: '03', card_network: 'visa' }).decline_class).toBe('retry_later');
    expect(classifyDecline({ decline_code: 'generic_decline', network_advice_code: '03' }).decline_class).toBe('do_not_retry');
  });

  it('classifies an unknown code as retry_later, marked unknown so that the caller logs it, never an error', () => {
    expect(classifyDecline({ decline_code: 'brand_new_code_2027' })).toEqual({ decline_code: 'brand_new_code_2027', decline_class: 'retry_later', known: false });
  });
});
