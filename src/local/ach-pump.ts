import { NOT_YET_RECORDED } from '../domain/ach-outcomes.js';
import type { Clock } from '../domain/ports/clock.js';
import type { PaymentSimulator, PendingAchOutcome } from '../adapters/processor/simulator.js';
import { signPayload } from '../handlers/shared/signature.js';
import type { Logger } from '../runtime/logger.js';
import type { GatewayRequest, GatewayResponse } from './gateway.js';

/** Deliveries of one outcome before the pump stops retrying it (the handler keeps refusing it). */
const MAX_DELIVERIES = 5;

export interface AchPumpResult {
  settled: number;
  returned: number;
  /** Deliveries the ach-handler did not accept; they are put back and sent on the next pump. */
  failed: number;
}

/** The ACH webhook body (docs/design.md, ACH outcomes) for one simulated bank outcome. */
export function achEventBody(outcome: PendingAchOutcome, occurredAt: Date): Record<string, unknown> {
  const { charge } = outcome;
  const reference =
    charge.reference.kind === 'subscription'
      ? { kind: 'subscription', user_id: charge.reference.user_id, billing_date: charge.reference.billing_date }
      : { kind: 'loan_payment', user_id: charge.reference.user_id, loan_id: charge.reference.loan_id, payment_id: charge.reference.payment_id };
  return {
    event_id: `ach_${charge.confirmation_id}_${outcome.type}`,
    type: outcome.type,
    confirmation_id: charge.confirmation_id,
    ...(outcome.return_code ? { return_code: outcome.return_code } : {}),
    amount_cents: charge.amount_cents,
    occurred_at: occurredAt.toISOString(),
    reference,
  };
}

function notYetRecorded(response: GatewayResponse | undefined): boolean {
  if (response?.status !== 409) return false;
  try {
    return (JSON.parse(response.body) as { error?: { code?: unknown } }).error?.code === NOT_YET_RECORDED;
  } catch {
    return false;
  }
}

/**
 * The bank's side of ACH, locally: takes the simulator's outcomes that are due at the simulated
 * now and posts each to `POST /webhooks/ach` through the gateway, signed with the shared secret
 * and timestamped with the wall clock, as a real bank's sender would (the handler checks the
 * timestamp against the wall clock; `occurred_at` is business time, the simulated clock).
 * One pump at a time; a delivery that is not answered 2xx is put back for the next pump.
 */
export class AchSettlementPump {
  private running: Promise<AchPumpResult> | undefined;
  private stopped = false;
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly deps: {
      /** Business time: which outcomes are due, and their `occurred_at`. */
      readonly clock: Clock;
      /** Signature timestamps: a real sender signs with the wall clock, whatever the business time. */
      readonly wallClock: Clock;
      readonly simulator: PaymentSimulator;
      readonly secret: string;
      readonly logger: Logger;
      readonly dispatch: (request: GatewayRequest) => Promise<GatewayResponse>;
    },
  ) {}

  /** On stop: no new delivery starts (the outcomes stay in the simulator's journal); resolves once the one in progress ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }

  async pump(): Promise<AchPumpResult> {
    // Chain pumps so that two triggers never deliver the same outcomes concurrently.
    const previous = this.running ?? Promise.resolve(undefined);
    const next = previous.catch(() => undefined).then(() => this.deliverDue());
    this.running = next;
    try {
      return await next;
    } finally {
      if (this.running === next) this.running = undefined;
    }
  }

  private async deliverDue(): Promise<AchPumpResult> {
    const { clock, wallClock, simulator, secret, logger, dispatch } = this.deps;
    const result: AchPumpResult = { settled: 0, returned: 0, failed: 0 };
    if (this.stopped) return result;
    const due = simulator.takeDueAchOutcomes(clock.now().getTime());
    for (const [at, outcome] of due.entries()) {
      if (this.stopped) {
        for (const left of due.slice(at)) simulator.redeliver(left.charge.confirmation_id);
        break;
      }
      const now = clock.now();
      const body = JSON.stringify(achEventBody(outcome, now));
      let response: GatewayResponse | undefined;
      try {
        response = await dispatch({
          method: 'POST',
          url: '/webhooks/ach',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'local-ach-network',
            'x-ach-signature': signPayload(body, secret, Math.floor(wallClock.now().getTime() / 1000)),
          },
          body,
        });
      } catch (error) {
        logger.error({ err: error, confirmation_id: outcome.charge.confirmation_id }, 'ach webhook delivery raised');
      }
      if (response && response.status >= 200 && response.status < 300) {
        simulator.acknowledge(outcome.charge.confirmation_id);
        result[outcome.type === 'settled' ? 'settled' : 'returned'] += 1;
        logger.info(
          { confirmation_id: outcome.charge.confirmation_id, user_id: outcome.charge.user_id, type: outcome.type, return_code: outcome.return_code },
          'ach outcome delivered',
        );
      } else {
        result.failed += 1;
        const id = outcome.charge.confirmation_id;
        // The submission's record is being repaired (a crash lost its answer): delivered again until it is recorded.
        const waiting = notYetRecorded(response);
        const failures = (this.failures.get(id) ?? 0) + (waiting ? 0 : 1);
        this.failures.set(id, failures);
        const details = { confirmation_id: id, status: response?.status, answer: response?.body.slice(0, 300), failures };
        if (failures < MAX_DELIVERIES) {
          simulator.redeliver(id);
          logger[waiting ? 'info' : 'warn'](details, 'ach webhook not accepted; will retry on the next pump');
        } else {
          logger.error(details, 'ach webhook not accepted after repeated deliveries; giving up on this outcome');
        }
      }
    }
    return result;
  }
}
