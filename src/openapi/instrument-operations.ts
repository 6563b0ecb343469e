import * as instruments from '../handlers/api/instruments.js';
import type { ResponseComponent } from './responses.js';

/** The instruments routes (DESIGN 3.2) of the OpenAPI document, beside its other operations. */

const errors = {
  '400': { description: 'Malformed input: the zod issues are in error.details', schema: 'Error' },
  '401': { description: 'No bearer token, or one the JWT authorizer refuses', schema: ['GatewayMessage', 'Error'] },
  '403': { description: "The token lacks the route's scope", schema: ['GatewayMessage', 'Error'] },
  '404': { description: 'No such hold (or route)', schema: ['Error', 'GatewayMessage'] },
  '500': { description: 'An internal fault: a generic message with a reference id', schema: 'Error' },
  '503': { description: 'A dependency is briefly unavailable; retry (Retry-After)', schema: 'Error' },
} as const satisfies Record<string, { description: string; schema: ResponseComponent | readonly ResponseComponent[] }>;

export const INSTRUMENT_OPERATIONS = {
  'GET /v1/users/{userId}/instruments': {
    operationId: 'listInstruments',
    summary: "A user's instruments with their holds, counters and what set them",
    tag: 'operator',
    path: instruments.instrumentsParams,
    responses: { '200': { description: 'Every instrument the user has used', schema: 'Instruments' }, ...errors },
  },
  'POST /v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release': {
    operationId: 'releaseInstrumentHold',
    summary: 'An operator lifts a releasable hold (a card dispute); the periods it held come back due',
    description: 'Reason required, on the audit row of every period brought back. NACHA and network holds answer 409 hold_not_releasable with decided_by.',
    tag: 'operator',
    path: instruments.releaseHoldParams,
    body: { schema: instruments.releaseHoldBodySchema, required: true },
    responses: {
      '200': { description: 'Released', schema: 'HoldReleased' },
      ...errors,
      '409': { description: 'hold_not_releasable: NACHA or the networks decide it', schema: 'HoldConflict' },
    },
  },
} as const;
