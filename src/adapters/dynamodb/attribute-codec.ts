import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { NumberValueImpl as NumberValue } from '@aws-sdk/util-dynamodb';

/**
 * Marshalling owned by the adapter, not the DocumentClient (whose options are shared by every
 * document client of one DynamoDBClient): `amount` is an N with two decimals that must never pass
 * through floating point, so numbers are written from safe integers or exact text and decoded by name.
 */

export type Item = Record<string, AttributeValue>;

/** Decodes the exact text of an N attribute; `attribute` is the top-level attribute it belongs to. */
export type NumberDecoder = (text: string, attribute: string) => unknown;

const INTEGER = /^-?\d+$/;

/** Safe integers become numbers; anything else stays text, so schema validation rejects it. */
export const integerNumbers: NumberDecoder = (text) => {
  if (!INTEGER.test(text)) return text;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
};

export function toAttributeValue(value: unknown, path: string): AttributeValue {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'boolean') return { BOOL: value };
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new TypeError(`${path}: only safe integers are written as plain numbers (got ${value}); use NumberValue for exact decimals`);
    return { N: String(value) };
  }
  if (value instanceof NumberValue) return { N: value.toString() };
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) return { L: value.map((v, i) => toAttributeValue(v, `${path}[${i}]`)) };
  if (typeof value === 'object') return { M: marshallItem(value as Record<string, unknown>, path) };
  throw new TypeError(`${path}: cannot store a value of type ${typeof value}`);
}

/** A plain object → item. `undefined` attributes are left out (absent, not NULL). */
export function marshallItem(object: Readonly<Record<string, unknown>>, path = ''): Item {
  const item: Item = {};
  for (const [name, value] of Object.entries(object)) {
    if (value === undefined) continue;
    item[name] = toAttributeValue(value, path ? `${path}.${name}` : name);
  }
  return item;
}

function fromAttributeValue(value: AttributeValue, attribute: string, decodeNumber: NumberDecoder): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return decodeNumber(value.N, attribute);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.L !== undefined) return value.L.map((v) => fromAttributeValue(v, attribute, decodeNumber));
  if (value.M !== undefined) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value.M)) out[k] = fromAttributeValue(v, attribute, decodeNumber);
    return out;
  }
  // Sets and binaries are never written by these stores: keep them raw so validation reports them.
  return value;
}

export function unmarshallItem(item: Item, decodeNumber: NumberDecoder = integerNumbers): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) out[name] = fromAttributeValue(value, name, decodeNumber);
  return out;
}
