import * as instruments from '../handlers/api/instruments.js';
import { readErrors } from './common-responses.js';

/** The instruments routes (DESIGN 3.2) of the OpenAPI document, beside its other operations. */

const errors = { ...readErrors, '404': { description: 'No such hold (or route)', schema: ['Error', 'GatewayMessage'] } } as const;

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
