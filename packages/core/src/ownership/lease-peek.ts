import type { LeaseHolder } from './ownership-store.js';

/**
 * A read-only look at a lease, as reconciliation and `sbx ls` need it: a store that could not answer
 * is its own kind, so no caller mistakes an outage for a free lease.
 */
export type LeasePeek =
  | { readonly kind: 'held'; readonly holder: LeaseHolder }
  | { readonly kind: 'absent' }
  | { readonly kind: 'unknown'; readonly error: unknown };

/** How `sbx ls` shows a lease: `owned by <owner>`, `being destroyed by <owner>`, `unowned`. */
export function describeLease(peek: LeasePeek): string {
  if (peek.kind === 'absent') return 'unowned';
  if (peek.kind === 'unknown') return 'owner unknown';
  return peek.holder.state === 'del'
    ? `being destroyed by ${peek.holder.ownerId}`
    : `owned by ${peek.holder.ownerId}`;
}
