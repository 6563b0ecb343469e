import { firstBillingRecord, historyRowOf } from '../billing-record.js';
import type { CardDecision, CardOutcomePorts, CardResult, CheckoutCompleted, PaymentIntentOutcome } from '../card-outcomes.js';
import { AlreadyExistsError, ConcurrentModificationError } from '../errors.js';
import { everRecorded } from '../booked.js';
import { hasOpenChain } from '../intent.js';
import { withUserLock, type LockDeps } from '../lock.js';
import type { IdGenerator } from '../billing-record.js';
import type { BillingRecord } from '../records.js';
import type { CardMovementOf } from '../card-movements.js';
import type { MoneyMovementStore } from '../ports/money-movements.js';

/** Records of the user read to see whether a chain is open. */
const RECENT_RECORDS = 24;

/**
 * checkout.session.completed opens the user's card chain, under the lock so it cannot race a NEW. A
 * card chain's first period at that date is a replay; any other open chain means already a member.
 */
export async function applyCheckoutCompleted(ports: CardOutcomePorts & LockDeps, input: CheckoutCompleted, owner: string): Promise<CardResult> {
  return withUserLock(ports, input.user_id, owner, () => openChain(ports, input));
}

async function openChain(ports: CardOutcomePorts, input: CheckoutCompleted): Promise<CardResult> {
  const existing = await ports.billing.get({ user_id: input.user_id, billing_date: input.first_billing_date });
  if (existing && opensCardChain(existing)) return { kind: 'ignored', reason: 'already_applied', record: existing };
  const recent = (await ports.billing.listByUser(input.user_id, { limit: RECENT_RECORDS })).items;
  if (hasOpenChain(recent)) return { kind: 'ignored', reason: 'already_member', record: recent[0]! };
  const record = firstBillingRecord(
    {
      user_id: input.user_id,
      amount_cents: input.amount_cents,
      term: input.term,
      tier: input.tier,
      payment_method: 'card',
      first_billing_date: input.first_billing_date,
      friday_billing: input.friday_billing,
    },
    ports.clock.now(),
    ports.ids,
  );
  try {
    await ports.billing.commit({ writes: [{ kind: 'create', record, displace: true }], history: [historyRowOf(record)] });
  } catch (error) {
    // A concurrent delivery created it between our read and our write.
    if (error instanceof AlreadyExistsError) return { kind: 'ignored', reason: 'already_applied' };
    throw error;
  }
  return { kind: 'applied', record };
}

/** What a checkout leaves at its date: the first period of a card chain (a legacy record, without a chain id, counts: the old rule). */
function opensCardChain(record: BillingRecord): boolean {
  return record.chain_id === undefined || (record.chain_id === record.subscription_id && record.payment_method === 'card');
}

/** An `unless_recorded` decision asks the period's audit rows whether it ever recorded that PaymentIntent (rare: one Query, paged). */
async function resolveRecorded(ports: CardOutcomePorts, subscriptionId: string, decision: CardDecision): Promise<Exclude<CardDecision, { kind: 'unless_recorded' }>> {
  if (decision.kind !== 'unless_recorded') return decision;
  if (await everRecorded(ports.billing, subscriptionId, decision.transaction)) return { kind: 'ignore', reason: 'status' };
  return resolveRecorded(ports, subscriptionId, decision.otherwise);
}

type Decide<I> = (record: BillingRecord, input: I, now: Date, ids: IdGenerator) => CardDecision;

/**
 * Read, decide, commit on the read version; one re-read after a conflict. A decision that records a
 * submission for its attempt is retaken under the lock: an attempt holding it is about to record its
 * own answer, so the event is refused (409) and Stripe redelivers it.
 */
export async function applyCardOutcome<I extends PaymentIntentOutcome>(
  ports: CardOutcomePorts & LockDeps & { readonly movements: MoneyMovementStore },
  decide: Decide<I>,
  input: I,
  owner: string,
  movementOf?: CardMovementOf,
): Promise<CardResult> {
  const once = async (locked: boolean): Promise<CardResult> => {
    const record = await ports.billing.get({ user_id: input.reference.user_id, billing_date: input.reference.billing_date });
    if (!record) return { kind: 'ignored', reason: 'not_found' };
    const decision = await resolveRecorded(ports, record.subscription_id, decide(record, input, ports.clock.now(), ports.ids));
    // Money moved though the period takes nothing (a partial refund, a waived period): its row alone (DESIGN 14).
    const movement = movementOf?.(record, decision);
    if (decision.kind === 'ignore') {
      if (movement) await ports.movements.record(movement);
      return { kind: 'ignored', reason: decision.reason, record };
    }
    if (decision.records_submission === true && !locked) return withUserLock(ports, input.reference.user_id, owner, () => once(true));
    await ports.billing.commit(movement ? { ...decision.tx, movements: [...(decision.tx.movements ?? []), movement] } : decision.tx);
    return { kind: 'applied', record: decision.after, ...(decision.exception ? { exception: decision.exception } : {}) };
  };
  try {
    return await once(false);
  } catch (error) {
    if (!(error instanceof ConcurrentModificationError)) throw error;
    return once(false);
  }
}
