import type { LoggedPresentment } from '../../src/adapters/processor/presentment-log.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * The rails as the reference model judges them (DESIGN 3.2, 10): from the processor's own log of
 * presentments and from what the outside world saw the system accept (the bank's return answered
 * 200, a dispute applied, a release answered 200), never from the system's flags or records. Its
 * numbers and code lists are its own, written from NACHA's and the networks' rules, not imported.
 *
 * R1 holds: no presentment to an instrument after a hold on it committed. A hold commits when the
 *    system accepted what set it: a return's delivery answered 200, a `do_not_try_again` decline
 *    answered to a process that finished without a fault (else at the first clean resend of that
 *    key: the repair that records it), a dispute applied. A key the system handed to the processor
 *    before the hold committed may be resent after it (the same-key repair), never a new one.
 * R2 NACHA: an ACH entry returned R01/R09 is presented again at most twice, within 180 days of its
 *    first presentment, every re-presentment flagged `RETRY PYMT` and nothing else flagged.
 * R3 ceilings (per card, merchant- and customer-initiated apart): Visa at most 20 reattempts in 30
 *    days after a decline; Mastercard at most 10 in 24 hours and 35 in 30 days. A reattempt that
 *    was approved ends the run of declines; one declined again counts.
 * Everything over subscriptions and loans together: an instrument is the payer's, not a period's.
 */

const REPRESENT = new Set(['R01', 'R09']);
const ACCOUNT = new Set(['R02', 'R03', 'R04', 'R12', 'R13', 'R14', 'R15', 'R16', 'R20']);
const UNAUTHORIZED = new Set(['R05', 'R07', 'R08', 'R10', 'R11', 'R29', 'R51']);
const NACHA_WINDOW = 180 * DAY;
const NACHA_MAX_REPRESENTMENTS = 2;
const RETRY_PYMT = 'RETRY PYMT';

/** What the outside world saw the system accept: the facts a hold commits on. */
export interface RailFacts {
  /** A bank return the ach-handler answered 200 for: its confirmation, and the log length then. */
  readonly returnsAccepted: ReadonlyMap<string, number>;
  /** Presentments (by seq) made by a process a fault hit before it finished: what they set may not have committed. */
  readonly unconfirmed: ReadonlySet<number>;
  /** Disputes the system applied (funds withdrawn): the disputed payment, when (log length), and when released or won. */
  readonly disputes: readonly { readonly confirmation_id: string; readonly from: number; readonly until?: number }[];
  /** When each key was first handed to the processor port (log length then): a lost request looks the same. */
  readonly handedAt: ReadonlyMap<string, number>;
  /** Who started each presentment, by seq, when the processor's log does not say (the harness knows). */
  readonly initiatedBy?: ReadonlyMap<number, 'merchant' | 'customer'>;
}

type HoldKind = 'unauthorized' | 'account' | 'card_never' | 'card_dispute';

interface Hold {
  readonly kind: HoldKind;
  /** The instrument held, or for an account hold every instrument on `account`. */
  readonly instrument_id: string;
  readonly account?: string;
  /** Log length when it committed: presentments from this seq on are after it. */
  readonly from: number;
  readonly until?: number;
  readonly why: string;
}

/** `ach:<account>:<authorization>` → account. */
function accountOf(instrumentId: string): string | undefined {
  if (!instrumentId.startsWith('ach:')) return undefined;
  const rest = instrumentId.slice(4);
  return rest.slice(0, rest.lastIndexOf(':'));
}

const entryOf = (p: LoggedPresentment) => (p.reference.kind === 'subscription' ? `subscription ${p.reference.subscription_id}` : `loan payment ${p.reference.payment_id}`);
const label = (p: LoggedPresentment) => `${p.user_id}: ${p.rail} presentment #${p.seq} ${p.idempotency_key} (${entryOf(p)}) at ${new Date(p.at).toISOString()}`;

/** The holds the log and the facts say committed. */
export function committedHolds(log: readonly LoggedPresentment[], facts: RailFacts): Hold[] {
  const holds: Hold[] = [];
  const byConfirmation = new Map<string, LoggedPresentment>();
  for (const p of log) if ((p.answer.kind === 'submitted' || p.answer.kind === 'approved') && !p.resend) byConfirmation.set(p.answer.confirmation_id, p);
  for (const [confirmation, from] of facts.returnsAccepted) {
    const p = byConfirmation.get(confirmation);
    const code = p?.bank?.type === 'returned' ? p.bank.return_code : undefined;
    if (!p || !code || p.instrument_id === undefined) continue;
    const why = `${code} return of ${p.idempotency_key}`;
    if (UNAUTHORIZED.has(code)) holds.push({ kind: 'unauthorized', instrument_id: p.instrument_id, from, why });
    const account = accountOf(p.instrument_id);
    if (ACCOUNT.has(code) && account !== undefined) holds.push({ kind: 'account', instrument_id: p.instrument_id, account, from, why });
  }
  for (const p of log) {
    // A card's answer: an ACH debit the simulator refuses with a card code holds no card.
    if (p.rail === 'ach' || p.answer.kind !== 'declined' || p.answer.advice_code !== 'do_not_try_again' || p.instrument_id === undefined) continue;
    // The decline committed with its attempt, or with the first clean resend of its key (the repair).
    const clean = facts.unconfirmed.has(p.seq) ? log.find((q) => q.seq > p.seq && q.idempotency_key === p.idempotency_key && !facts.unconfirmed.has(q.seq)) : p;
    if (clean) holds.push({ kind: 'card_never', instrument_id: p.instrument_id, from: clean.seq + 1, why: `${p.answer.decline_code} decline of ${p.idempotency_key}` });
  }
  for (const d of facts.disputes) {
    const p = byConfirmation.get(d.confirmation_id);
    if (p?.instrument_id !== undefined) holds.push({ kind: 'card_dispute', instrument_id: p.instrument_id, from: d.from, ...(d.until !== undefined ? { until: d.until } : {}), why: `dispute of ${p.idempotency_key}` });
  }
  return holds;
}

function binds(hold: Hold, p: LoggedPresentment): boolean {
  if (p.instrument_id === undefined || p.seq < hold.from || (hold.until !== undefined && p.seq >= hold.until)) return false;
  if (hold.kind === 'account') return accountOf(p.instrument_id) === hold.account;
  return p.instrument_id === hold.instrument_id;
}

/** R1: every new presentment to a held instrument, the same-key repair of a key handed over before the hold aside. */
export function holdViolations(log: readonly LoggedPresentment[], facts: RailFacts): string[] {
  const holds = committedHolds(log, facts);
  const problems: string[] = [];
  for (const p of log) {
    if (p.resend) continue;
    const handed = facts.handedAt.get(p.idempotency_key) ?? p.seq;
    const hold = holds.find((h) => binds(h, p) && handed >= h.from);
    if (hold) problems.push(`${label(p)} on ${p.instrument_id}: held (${hold.kind}) since ${hold.why}`);
  }
  return problems;
}

/** R2: re-presentments of R01/R09 entries: at most two, within 180 days, each flagged, and only they flagged. */
export function nachaViolations(log: readonly LoggedPresentment[], facts: RailFacts): string[] {
  const problems: string[] = [];
  const entries = new Map<string, LoggedPresentment[]>();
  for (const p of log) {
    if (p.rail !== 'ach' || p.resend || p.answer.kind !== 'submitted') continue;
    const key = entryOf(p);
    entries.set(key, [...(entries.get(key) ?? []), p]);
  }
  for (const presented of entries.values()) {
    const first = presented[0]!;
    let represented = 0;
    for (const p of presented) {
      // A re-presentment follows a return R01/R09 of an earlier presentment of the entry that the system had accepted.
      const after = presented.some((q) => q.seq < p.seq && q.bank?.type === 'returned' && REPRESENT.has(q.bank.return_code ?? '') && (facts.returnsAccepted.get(q.answer.kind === 'submitted' ? q.answer.confirmation_id : '') ?? Infinity) <= p.seq);
      const flagged = p.reinitiated && p.entry_description === RETRY_PYMT;
      if (!after) {
        if (p.reinitiated || p.entry_description === RETRY_PYMT) problems.push(`${label(p)}: flagged a re-presentment but no R01/R09 return of its entry came before`);
        continue;
      }
      represented += 1;
      if (!flagged) problems.push(`${label(p)}: re-presentment ${represented} of an R01/R09 entry not flagged ${RETRY_PYMT}`);
      if (represented > NACHA_MAX_REPRESENTMENTS) problems.push(`${label(p)}: re-presentment ${represented} of the entry (at most ${NACHA_MAX_REPRESENTMENTS})`);
      if (p.at > first.at + NACHA_WINDOW) problems.push(`${label(p)}: re-presented more than 180 days after the original entry (${new Date(first.at).toISOString()})`);
    }
  }
  return problems;
}

/** The networks' ceilings as counts of reattempts after a decline in a trailing window. */
const CEILINGS: Readonly<Record<string, readonly { readonly window: number; readonly max: number; readonly rule: string }[]>> = {
  visa: [{ window: 30 * DAY, max: 20, rule: 'visa.ceiling_30d' }],
  mastercard: [
    { window: 24 * HOUR, max: 10, rule: 'mastercard.ceiling_24h' },
    { window: 30 * DAY, max: 35, rule: 'mastercard.ceiling_30d' },
  ],
};

/** R3: no card presented past its network's ceiling (merchant- and customer-initiated counted apart, subscriptions and loans together). */
export function ceilingViolations(log: readonly LoggedPresentment[], facts: RailFacts): string[] {
  const problems: string[] = [];
  const initiated = (p: LoggedPresentment) => p.initiated ?? facts.initiatedBy?.get(p.seq) ?? 'merchant';
  const cards = log.filter((p) => (p.rail === 'card' || p.rail === 'pinless') && !p.resend && p.instrument_id !== undefined && p.answer.kind !== 'error');
  for (const p of cards) {
    for (const ceiling of CEILINGS[p.brand ?? ''] ?? []) {
      // The declines before it in the window: the first decline and the reattempts that were declined again.
      const declined = cards.filter((q) => q.seq < p.seq && q.instrument_id === p.instrument_id && initiated(q) === initiated(p) && q.at > p.at - ceiling.window && q.answer.kind === 'declined');
      if (declined.length > ceiling.max) problems.push(`${label(p)} on ${p.instrument_id}: reattempt ${declined.length} after a decline within the window of ${ceiling.rule} (at most ${ceiling.max})`);
    }
  }
  return problems;
}

export interface RailsOptions {
  /** The ceilings are judged once the code enforces them (the `visa.*`/`mastercard.*` rules). */
  readonly ceilings: boolean;
}

/** What the judged logs held (MODEL_PROFILE=1 prints it): holds committed by kind, re-presentments, presentments. */
export const RAIL_STATS: Record<string, number> = {};

/** Counts, once per world at its end, what the rails judged. */
export function countRails(log: readonly LoggedPresentment[], facts: RailFacts): void {
  const add = (k: string, n = 1) => (RAIL_STATS[k] = (RAIL_STATS[k] ?? 0) + n);
  for (const h of committedHolds(log, facts)) add(`hold ${h.kind}`);
  add('presentments', log.filter((p) => !p.resend).length);
  add('re-presentments flagged', log.filter((p) => p.reinitiated && !p.resend).length);
  add('loan presentments', log.filter((p) => p.reference.kind === 'loan_payment' && !p.resend).length);
  for (const p of log) if (p.bank?.type === 'returned') add(`returned ${p.bank.return_code}`);
}

export function railViolations(log: readonly LoggedPresentment[], facts: RailFacts, options: RailsOptions): string[] {
  return [...holdViolations(log, facts), ...nachaViolations(log, facts), ...(options.ceilings ? ceilingViolations(log, facts) : [])];
}
