import { membershipEventSchema, type MembershipEventType } from '../../src/domain/membership-events.js';
import { paymentMethodSchema, type PaymentMethod } from '../../src/domain/records.js';

/**
 * Every value of the unions src declares only as a schema or a type, for tests that mean all of
 * them: a new value joins these lists, so it cannot go untested.
 */

export const PAYMENT_METHODS: readonly PaymentMethod[] = paymentMethodSchema.options;

/** Read off the schema's own options, so a new event type is listed without an edit here. */
export const MEMBERSHIP_EVENT_TYPES: readonly MembershipEventType[] = membershipEventSchema._zod.def.options.map(
  (option) => option._zod.def.shape.type._zod.def.values[0] as MembershipEventType,
);
