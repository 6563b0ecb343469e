/**
 * What handlers take from the DynamoDB adapter, named here so no handler reaches into an adapter:
 * the errors they answer for (a corrupt item, a malformed page cursor) and the decoder the
 * events-publisher reads history stream images with.
 */
export { CorruptItemError, InvalidPageRequestError } from '../adapters/dynamodb/errors.js';
export { historyFromItem } from '../adapters/dynamodb/billing-item.js';
export type { Item } from '../adapters/dynamodb/attribute-codec.js';
