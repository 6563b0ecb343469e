import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PaymentResult, ProcessorRefund } from '../../domain/ports/processor.js';
import type { SimulatedCharge } from './simulator.js';

/**
 * What the payment simulator has promised, one JSON line per fact: an accepted charge (with its
 * ACH outcome and due time), a decline answered to a key, an ACH outcome the receiver accepted,
 * a refund made at it.
 * Replayed on start, so a restart after a crash keeps every pending ACH outcome
 * and answers a repeated idempotency key as before.
 */
export type JournalEntry =
  | { readonly charge: SimulatedCharge }
  | { readonly declined: { readonly idempotency_key: string; readonly result: PaymentResult } }
  | { readonly delivered: string }
  | { readonly refund: ProcessorRefund };

export interface SimulatorJournal {
  load(): JournalEntry[];
  /** Returns once the entry is in the file: written before the simulator answers. */
  append(entry: JournalEntry): void;
}

/**
 * A journal in one append-only file. Each entry is one `write` of one line, so a process killed
 * at any point (SIGKILL included) leaves whole lines and at most one torn last line, skipped on load.
 */
export class FileSimulatorJournal implements SimulatorJournal {
  constructor(private readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  load(): JournalEntry[] {
    if (!existsSync(this.file)) return [];
    const text = readFileSync(this.file, 'utf8');
    // A torn last line is closed, so the next entry starts a line of its own.
    if (text !== '' && !text.endsWith('\n')) appendFileSync(this.file, '\n');
    const entries: JournalEntry[] = [];
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        entries.push(JSON.parse(line) as JournalEntry);
      } catch {
        // The torn last line of a killed write: that answer was never given.
      }
    }
    return entries;
  }

  append(entry: JournalEntry): void {
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }
}
