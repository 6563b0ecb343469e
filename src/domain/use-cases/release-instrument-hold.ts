import { NotFoundError, PaymentHoldError } from '../errors.js';
import { ruleOfCode, type HoldCode } from '../instruments/holds.js';
import type { InstrumentStore } from '../ports/instruments.js';
import { releaseUserHeldPeriods, type ReleaseHeldDeps } from './release-held.js';

export type ReleaseHoldDeps = ReleaseHeldDeps & { readonly instruments: InstrumentStore };

export interface ReleaseHoldRequest {
  readonly user_id: string;
  readonly instrument_id: string;
  readonly code: HoldCode;
  readonly actor: string;
  readonly reason: string;
}

/**
 * An operator lifts a hold an operator may lift (a dispute): the hold goes, and the user's periods it
 * kept off the schedule come back due, each with an audit row naming the actor and the reason.
 * NACHA's and the networks' holds are refused (409 `hold_not_releasable`).
 */
export async function releaseInstrumentHold(deps: ReleaseHoldDeps, request: ReleaseHoldRequest): Promise<{ released_periods: number }> {
  const rule = ruleOfCode(request.code);
  if (!rule.operator_releasable) {
    throw new PaymentHoldError('hold_not_releasable', `a ${request.code} hold is decided by ${rule.decided_by}, not by an operator`, {
      decided_by: rule.decided_by,
      instrument_id: request.instrument_id,
    });
  }
  if (!(await deps.instruments.release(request.user_id, request.instrument_id, request.code))) {
    throw new NotFoundError(`no ${request.code} hold on instrument ${request.instrument_id} of user ${request.user_id}`);
  }
  const released_periods = await releaseUserHeldPeriods(deps, request.user_id, { actor: request.actor, reason: request.reason });
  return { released_periods };
}
