import type { AttributeValue, TransactWriteItem, Update } from '@aws-sdk/client-dynamodb';
import { safeParseCold } from '../../../domain/lazy-schema.js';
import {
  emptyInstruments,
  instrumentsItemSchema,
  type InstrumentsItem,
  type InstrumentWrite,
} from '../../../domain/instruments/instrument.js';
import { marshallItem, toAttributeValue, unmarshallItem, type Item } from '../attribute-codec.js';
import { CorruptItemError } from '../errors.js';

/**
 * The instruments item (DESIGN 3.2) stores each part in a top-level attribute of its own, so a
 * write reaches it by SET if_not_exists, ADD or list_append with no parent map to create first and
 * no version to condition on: `i#<instrument>`, `h#<instrument>#<code>` (a hold), `p#<instrument>`
 * (presentments), `e#<entry>` and `n#<entry>` (an ACH entry and its re-presentment count).
 */

const PREFIX = { instrument: 'i#', hold: 'h#', presentments: 'p#', entry: 'e#', count: 'n#' } as const;
/** The user's current Stripe card: one attribute, replaced whole. */
const STRIPE_CARD = 'stripe_card';

export function instrumentsKey(userId: string): Item {
  return { user_id: { S: userId } };
}

export function instrumentsFromItem(item: Item | undefined, userId: string, table: string): InstrumentsItem {
  if (!item) return emptyInstruments(userId);
  const raw = unmarshallItem(item);
  const value = emptyInstruments(userId);
  const counts: Record<string, unknown> = {};
  const entries: Record<string, Record<string, unknown>> = {};
  for (const [name, attr] of Object.entries(raw)) {
    if (name === STRIPE_CARD) (value as Record<string, unknown>).stripe_card = attr;
    else if (name.startsWith(PREFIX.instrument)) (value.instruments as Record<string, unknown>)[name.slice(2)] = attr;
    else if (name.startsWith(PREFIX.hold)) {
      const hold = attr as { instrument_id?: string; code?: string };
      const holds = ((value.holds as Record<string, Record<string, unknown>>)[hold.instrument_id ?? ''] ??= {});
      holds[hold.code ?? ''] = attr;
    } else if (name.startsWith(PREFIX.presentments)) (value.presentments as Record<string, unknown>)[name.slice(2)] = attr;
    else if (name.startsWith(PREFIX.entry)) entries[name.slice(2)] = attr as Record<string, unknown>;
    else if (name.startsWith(PREFIX.count)) counts[name.slice(2)] = attr;
  }
  for (const [id, entry] of Object.entries(entries)) (value.entries as Record<string, unknown>)[id] = { ...entry, represented: counts[id] ?? 0 };
  const parsed = safeParseCold(instrumentsItemSchema, value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`).join('; ');
    throw new CorruptItemError(`${table} item (user_id=${userId}) is corrupt: ${issues}`);
  }
  return parsed.data;
}

/** The write as one UpdateItem's expression: no condition but what `condition` adds. */
export function instrumentsUpdate(table: string, write: InstrumentWrite): Update {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const set: string[] = [];
  const add: string[] = [];
  const remove: string[] = [];
  let n = 0;
  const bind = (attribute: string, value?: unknown): { name: string; value: string } => {
    n += 1;
    names[`#a${n}`] = attribute;
    if (value !== undefined) values[`:v${n}`] = toAttributeValue(value, attribute);
    return { name: `#a${n}`, value: `:v${n}` };
  };
  const once = (attribute: string, value: unknown) => {
    const b = bind(attribute, value);
    set.push(`${b.name} = if_not_exists(${b.name}, ${b.value})`);
  };
  for (const instrument of write.seen ?? []) once(`${PREFIX.instrument}${instrument.instrument_id}`, instrument);
  if (write.stripe_card?.replace) {
    const b = bind(STRIPE_CARD, write.stripe_card.card);
    set.push(`${b.name} = ${b.value}`);
  } else if (write.stripe_card) once(STRIPE_CARD, write.stripe_card.card);
  for (const hold of write.holds ?? []) once(`${PREFIX.hold}${hold.instrument_id}#${hold.code}`, hold);
  for (const release of write.releases ?? []) remove.push(bind(`${PREFIX.hold}${release.instrument_id}#${release.code}`).name);
  for (const { instrument_id, presentment, kept } of write.presentments ?? []) {
    // The writer read the list: what is past the windows goes, without a condition (a retry writes the same list).
    if (kept) {
      const b = bind(`${PREFIX.presentments}${instrument_id}`, [...kept, presentment]);
      set.push(`${b.name} = ${b.value}`);
      continue;
    }
    const b = bind(`${PREFIX.presentments}${instrument_id}`, [presentment]);
    values[':none'] = { L: [] };
    set.push(`${b.name} = list_append(if_not_exists(${b.name}, :none), ${b.value})`);
  }
  const entries = new Map([...(write.entries ?? []), ...(write.representments ?? [])].map((e) => [e.entry_id, e]));
  for (const entry of entries.values()) {
    once(`${PREFIX.entry}${entry.entry_id}`, { entry_id: entry.entry_id, instrument_id: entry.instrument_id, first_entry_at: entry.first_entry_at });
  }
  for (const entry of write.representments ?? []) {
    const b = bind(`${PREFIX.count}${entry.entry_id}`, 1);
    add.push(`${b.name} ${b.value}`);
  }
  const clauses = [set.length ? `SET ${set.join(', ')}` : '', add.length ? `ADD ${add.join(', ')}` : '', remove.length ? `REMOVE ${remove.join(', ')}` : ''];
  return {
    TableName: table,
    Key: instrumentsKey(write.user_id),
    UpdateExpression: clauses.filter(Boolean).join(' '),
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

/** The write as one item of the attempt's (or an outcome's) TransactWriteItems. */
export function instrumentsTransactItem(table: string, write: InstrumentWrite): TransactWriteItem {
  return { Update: instrumentsUpdate(table, write) };
}

/** For tests and seeding: an item as it would be stored. */
export function storedInstrumentsItem(item: InstrumentsItem): Item {
  const flat: Record<string, unknown> = { user_id: item.user_id, ...(item.stripe_card ? { [STRIPE_CARD]: item.stripe_card } : {}) };
  for (const [id, instrument] of Object.entries(item.instruments)) flat[`${PREFIX.instrument}${id}`] = instrument;
  for (const holds of Object.values(item.holds)) for (const hold of Object.values(holds)) flat[`${PREFIX.hold}${hold.instrument_id}#${hold.code}`] = hold;
  for (const [id, list] of Object.entries(item.presentments)) flat[`${PREFIX.presentments}${id}`] = list;
  for (const [id, { represented, ...entry }] of Object.entries(item.entries)) {
    flat[`${PREFIX.entry}${id}`] = entry;
    flat[`${PREFIX.count}${id}`] = represented;
  }
  return marshallItem(flat);
}
