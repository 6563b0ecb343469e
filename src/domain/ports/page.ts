export interface Page<T> {
  readonly items: T[];
  /** Opaque continuation token, or null on the last page. */
  readonly next: string | null;
}

export interface PageRequest {
  readonly limit?: number;
  readonly cursor?: string | null;
}
