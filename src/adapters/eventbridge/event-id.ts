import { createHash } from 'node:crypto';
import type { EventIdInput } from '../../domain/published-events.js';

/** The namespace of this system's event ids (a fixed, random UUID). */
const EVENT_ID_NAMESPACE = Buffer.from('6f1d3c2a9b8e4f70a1c5d2e3f4a5b6c7', 'hex');

/**
 * A name-based UUID (RFC 9562 version 5, SHA-1) of the history row's key and the detail-type: the
 * same row always yields the same id, whoever publishes it and however often (DESIGN 11), and two
 * rows or two detail-types never share one.
 */
export function eventIdOf(input: EventIdInput): string {
  const name = JSON.stringify([input.user_id, input.last_run_date, input.detail_type]);
  const hash = createHash('sha1').update(EVENT_ID_NAMESPACE).update(name, 'utf8').digest();
  const bytes = Buffer.from(hash.subarray(0, 16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
