import { HOLD_CODES } from '../domain/collectible.js';

/** The answers many operations share (DESIGN 8), by status. */
export const GATEWAY_401 = { description: 'No bearer token, or one the JWT authorizer refuses', schema: ['GatewayMessage', 'Error'] } as const;
export const GATEWAY_403 = { description: 'The token lacks the route\'s scope', schema: ['GatewayMessage', 'Error'] } as const;
export const BAD_REQUEST = { description: 'Malformed input: the zod issues are in error.details', schema: 'Error' } as const;
export const NOT_FOUND = { description: 'No such subscription (or route)', schema: ['Error', 'GatewayMessage'] } as const;
export const CONFLICT = { description: 'locked (being billed right now), an illegal transition, or unbilled_period', schema: 'Error' } as const;
export const INTERNAL = { description: 'An internal fault: a generic message with a reference id, never keys or table names', schema: 'Error' } as const;
export const UNAVAILABLE = { description: 'A dependency is briefly unavailable; retry (Retry-After)', schema: 'Error' } as const;

/** Manual pay and retry-billing: the holds that bind every path (DESIGN 3.1) answer 409 with their code. */
export const PAYMENT_CONFLICT = {
  description: `locked (being billed right now), daily_debit_limit (past the member's daily cap on debits people start), a hold that binds every path, or payment_exception (the period received a card payment for another amount or currency), nothing changed or charged: ${HOLD_CODES.map((c) => `\`${c}\``).join(', ')}, or \`network_ceiling\` (the card's network reattempt ceiling); each with its \`decided_by\``,
  schema: 'PaymentConflict',
} as const;

export const readErrors = { '400': BAD_REQUEST, '401': GATEWAY_401, '403': GATEWAY_403, '404': NOT_FOUND, '500': INTERNAL, '503': UNAVAILABLE };
export const actionErrors = { ...readErrors, '409': CONFLICT };
