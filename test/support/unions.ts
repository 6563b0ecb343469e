import type { MembershipEventType } from '../../src/domain/membership-events.js';
import { paymentMethodSchema, type PaymentMethod } from '../../src/domain/records.js';

/**
 * Every value of the unions src declares only as a schema or a type, for tests that mean all of
 * them: a new value joins these lists, or fails to typecheck here, so it cannot go untested.
 */

export const PAYMENT_METHODS: readonly PaymentMethod[] = paymentMethodSchema.options;

const membershipEventTypes = { NEW: true, PAUSE: true, UNPAUSE: true, CANCEL: true, CLOSEACCOUNT: true, REACTIVATE: true, BAN: true } satisfies Record<MembershipEventType, true>;
export const MEMBERSHIP_EVENT_TYPES = Object.keys(membershipEventTypes) as MembershipEventType[];
