/** A 64-bit FNV-1a of the parts, hex: the same parts give the same id in every run and runtime. */
export function stableId(...parts: readonly string[]): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(parts.join('\u0000'))) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return `rx_${hash.toString(16).padStart(16, '0')}`;
}
