/** FNV-1a (32 bit) over the UTF-8 bytes: stable across processes, runtimes and deployments. */
export function fnv1a32(value: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(value)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A stable shard number in [0, shardCount). */
export function shardOf(value: string, shardCount: number): number {
  return fnv1a32(value) % shardCount;
}

export function assertShardCount(shardCount: number, what: string): number {
  if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > 1000) {
    throw new RangeError(`${what} must be an integer between 1 and 1000 (got ${shardCount})`);
  }
  return shardCount;
}
