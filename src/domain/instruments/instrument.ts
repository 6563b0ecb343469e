import * as z from '../zod.js';
import { lazySchema } from '../lazy-schema.js';
import { instant, withFields } from '../schema-fields.js';
import { DECLINE_CLASSES } from '../records.js';
import { DECIDED_BY, HOLD_CLASSES, HOLD_CODES, type HoldCode } from './holds.js';

/** What the payer pays with (DESIGN 3.2): one item per user holds every instrument seen, its holds and counters. */

export const INSTRUMENT_RAILS = ['ach', 'pinless', 'card'] as const;
export type InstrumentRail = (typeof INSTRUMENT_RAILS)[number];

/** An instrument as the account directory or Stripe names it; `instrument_id` is derived, never chosen. */
export const instrumentSchema = lazySchema(() => withFields((f) => z.object({
  instrument_id: f.text,
  rail: z.enum(INSTRUMENT_RAILS),
  /** ACH: the bank account and the debit authorization it is debited under. */
  account_id: f.optionalText,
  authorization_id: f.optionalText,
  authorized_at: f.optionalInstant,
  /** Pinless and card: the card's fingerprint and brand. */
  fingerprint: f.optionalText,
  brand: f.optionalText,
  first_seen_at: f.optionalInstant,
})));
export type Instrument = z.infer<typeof instrumentSchema>;

/** What set a hold: a return, a decline, a dispute or an event, as far as each is known. */
export const holdSourceSchema = lazySchema(() => withFields((f) => z.object({
  kind: z.enum(['ach_return', 'decline', 'dispute', 'event']),
  return_code: f.optionalText,
  decline_code: f.optionalText,
  dispute_id: f.optionalText,
  event_id: f.optionalText,
  confirmation_id: f.optionalText,
  /** The period (`subscription:<id>`) or loan payment (`loan_payment:<id>`) whose entry set it. */
  reference: f.optionalText,
})));
export type HoldSource = z.infer<typeof holdSourceSchema>;

export const holdSchema = lazySchema(() => withFields((f) => z.object({
  code: z.enum(HOLD_CODES),
  class: z.enum(HOLD_CLASSES),
  rule: z.enum(DECIDED_BY),
  instrument_id: f.text,
  /** ACH: the account an account hold binds, whatever the authorization. */
  account_id: f.optionalText,
  since: instant,
  set_by: holdSourceSchema,
})));
export type Hold = z.infer<typeof holdSchema>;

/** One presentment inside the networks' windows: `initiated` as Visa counts it (merchant apart from customer). */
export const presentmentSchema = lazySchema(() => withFields((f) => z.object({
  at: instant,
  initiated: z.enum(['merchant', 'customer']),
  reference: f.optionalText,
  /** Set when the processor declined it: the networks' ceilings count declined presentments. */
  decline_class: z.optional(z.enum(DECLINE_CLASSES)),
})));
export type Presentment = z.infer<typeof presentmentSchema>;

/** One ACH entry (a period's or a loan payment's debit): its re-presentments within NACHA's window. */
export const achEntrySchema = lazySchema(() => withFields((f) => z.object({
  entry_id: f.text,
  instrument_id: f.text,
  first_entry_at: instant,
  represented: f.count,
})));
export type AchEntry = z.infer<typeof achEntrySchema>;

/**
 * The user's card in Stripe as last seen (checkout, `customer.*` and `payment_method.*` webhooks, or
 * resolved once by the attempt): what the collection path charges without asking Stripe who to charge.
 * Without `payment_method`, the customer is known but not its card: the next attempt asks for it.
 */
export const stripeCardSchema = lazySchema(() => withFields((f) => z.object({
  customer: f.text,
  payment_method: f.optionalText,
  fingerprint: f.optionalText,
  brand: f.optionalText,
})));
export type StripeCard = z.infer<typeof stripeCardSchema>;

/** The card instrument a stored Stripe card is (`card:<fingerprint>`), when its fingerprint is known. */
export function stripeCardInstrument(card: StripeCard | undefined): Instrument | undefined {
  if (!card?.fingerprint) return undefined;
  return { instrument_id: cardInstrumentId('card', card.fingerprint), rail: 'card', fingerprint: card.fingerprint, ...(card.brand !== undefined ? { brand: card.brand } : {}) };
}

export const instrumentsItemSchema = lazySchema(() => withFields((f) => z.object({
  user_id: f.text,
  stripe_card: z.optional(stripeCardSchema),
  instruments: z.record(z.string(), instrumentSchema),
  /** By instrument id, then by hold code. */
  holds: z.record(z.string(), z.record(z.string(), holdSchema)),
  presentments: z.record(z.string(), z.array(presentmentSchema)),
  entries: z.record(z.string(), achEntrySchema),
})));
export type InstrumentsItem = z.infer<typeof instrumentsItemSchema>;

export function emptyInstruments(userId: string): InstrumentsItem {
  return { user_id: userId, instruments: {}, holds: {}, presentments: {}, entries: {} };
}

/** Ids are `<rail>:<what names it>`: an ACH account under another authorization is another instrument. */
export function achInstrumentId(accountId: string, authorizationId: string): string {
  return `ach:${accountId}:${authorizationId}`;
}
export function cardInstrumentId(rail: 'pinless' | 'card', fingerprint: string): string {
  return `${rail}:${fingerprint}`;
}

/** The entry id of a period's debit or a loan payment's: re-presentments count per entry. */
export function entryIdOf(reference: { kind: 'subscription'; subscription_id: string } | { kind: 'loan_payment'; payment_id: string }): string {
  return reference.kind === 'subscription' ? `subscription:${reference.subscription_id}` : `loan_payment:${reference.payment_id}`;
}

/** Every change to the item, applied without a version condition (DESIGN 3.2). */
export interface InstrumentWrite {
  readonly user_id: string;
  /** Instruments used or seen: stored once, never overwritten. */
  readonly seen?: readonly Instrument[];
  /** Each set only if its code is not already held on that instrument (the first setter's `since` stays). */
  readonly holds?: readonly Hold[];
  readonly releases?: readonly { readonly instrument_id: string; readonly code: HoldCode }[];
  /** Appended to the instrument's presentments; with `kept`, the list becomes `kept` + it (pruned past the windows). */
  readonly presentments?: readonly { readonly instrument_id: string; readonly presentment: Presentment; readonly kept?: readonly Presentment[] }[];
  /** A re-presentment of an entry: its count grows by one; its first entry date is kept once set. */
  readonly representments?: readonly { readonly entry_id: string; readonly instrument_id: string; readonly first_entry_at: string }[];
  /** A first presentment: the entry's original date, kept once set. */
  readonly entries?: readonly { readonly entry_id: string; readonly instrument_id: string; readonly first_entry_at: string }[];
  /** The Stripe card: `replace` for what Stripe says now (a webhook), else stored only when none is (an attempt's resolution). */
  readonly stripe_card?: { readonly card: StripeCard; readonly replace: boolean };
}

/** Two writes of one transaction as one (one item, one Update); undefined when neither writes. */
export function combineInstrumentWrites(...writes: (InstrumentWrite | undefined)[]): InstrumentWrite | undefined {
  const present = writes.filter((w): w is InstrumentWrite => w !== undefined);
  if (present.length <= 1) return present[0];
  const all = <K extends Exclude<keyof InstrumentWrite, 'user_id' | 'stripe_card'>>(key: K) => present.flatMap((w) => (w[key] ?? []) as NonNullable<InstrumentWrite[K]>[number][]);
  return {
    user_id: present[0]!.user_id,
    seen: all('seen'),
    holds: all('holds'),
    releases: all('releases'),
    presentments: all('presentments'),
    representments: all('representments'),
    entries: all('entries'),
    ...(present.find((w) => w.stripe_card) ? { stripe_card: present.find((w) => w.stripe_card)!.stripe_card! } : {}),
  } as InstrumentWrite;
}

export function isEmptyInstrumentWrite(write: InstrumentWrite): boolean {
  return write.stripe_card === undefined && [write.seen, write.holds, write.releases, write.presentments, write.representments, write.entries].every((l) => (l?.length ?? 0) === 0);
}

/** The write as DynamoDB applies it (the in-memory ledger and the tests share this). */
export function applyInstrumentWrite(item: InstrumentsItem, write: InstrumentWrite): InstrumentsItem {
  const next: InstrumentsItem = {
    user_id: item.user_id,
    instruments: { ...item.instruments },
    holds: Object.fromEntries(Object.entries(item.holds).map(([id, holds]) => [id, { ...holds }])),
    presentments: Object.fromEntries(Object.entries(item.presentments).map(([id, list]) => [id, [...list]])),
    entries: { ...item.entries },
    ...(item.stripe_card ? { stripe_card: item.stripe_card } : {}),
  };
  if (write.stripe_card && (write.stripe_card.replace || !next.stripe_card)) next.stripe_card = write.stripe_card.card;
  for (const instrument of write.seen ?? []) next.instruments[instrument.instrument_id] ??= instrument;
  for (const hold of write.holds ?? []) {
    const holds = (next.holds[hold.instrument_id] ??= {});
    holds[hold.code] ??= hold;
  }
  for (const release of write.releases ?? []) delete next.holds[release.instrument_id]?.[release.code];
  for (const { instrument_id, presentment, kept } of write.presentments ?? []) {
    if (kept) next.presentments[instrument_id] = [...kept, presentment];
    else (next.presentments[instrument_id] ??= []).push(presentment);
  }
  for (const entry of write.entries ?? []) next.entries[entry.entry_id] ??= { ...entry, represented: 0 };
  for (const entry of write.representments ?? []) {
    const current = next.entries[entry.entry_id];
    next.entries[entry.entry_id] = { ...entry, first_entry_at: current?.first_entry_at ?? entry.first_entry_at, represented: (current?.represented ?? 0) + 1 };
  }
  return next;
}

/** Every hold of the item, newest first. */
export function allHolds(item: InstrumentsItem): Hold[] {
  return Object.values(item.holds)
    .flatMap((holds) => Object.values(holds))
    .sort((a, b) => (a.since < b.since ? 1 : -1));
}

/** The account of an ACH instrument id (`ach:<account>:<authorization>`); authorization ids carry no `:`. */
export function achAccountOf(instrumentId: string): string | undefined {
  if (!instrumentId.startsWith('ach:')) return undefined;
  const rest = instrumentId.slice('ach:'.length);
  const cut = rest.lastIndexOf(':');
  return cut > 0 ? rest.slice(0, cut) : undefined;
}
