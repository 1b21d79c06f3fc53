import type { Clock, Logger } from '@sbx/core';
import type { E2BClient, E2BListOptions, E2BSandboxInfo } from './e2b-client.js';
import { errorMessage } from './e2b-errors.js';

export interface InventoryBudget {
  maxPages: number;
  maxItems: number;
  /** `clock.now()` after which listing stops. */
  deadlineMs: number;
}

export interface RemoteInventory {
  entries: E2BSandboxInfo[];
  /** Only a complete listing may free ledger slots or mark VMs missing. */
  complete: boolean;
  /** A page, item or time budget stopped the listing. */
  budgetExhausted: boolean;
  /**
   * The failure that cut the listing short, if any. Reconciliation works on with what it got;
   * an inspection that got nothing reports it instead of an empty account.
   */
  error?: unknown;
}

/**
 * Lists VMs page by page within the budgets. Any failure makes the inventory incomplete rather than
 * raising: an incomplete inventory is still useful (it can count VMs) but never removes anything.
 */
export async function listRemoteInventory(
  client: E2BClient,
  options: E2BListOptions,
  budget: InventoryBudget,
  clock: Pick<Clock, 'now'>,
  logger: Logger,
): Promise<RemoteInventory> {
  const entries: E2BSandboxInfo[] = [];
  let paginator;
  try {
    paginator = client.list(options);
  } catch (error) {
    logger.warn('e2b sandbox listing failed', { error: errorMessage(error) });
    return { entries, complete: false, budgetExhausted: false, error };
  }
  let pages = 0;
  while (paginator.hasNext) {
    if (
      pages >= budget.maxPages ||
      entries.length >= budget.maxItems ||
      clock.now() >= budget.deadlineMs
    ) {
      return { entries, complete: false, budgetExhausted: true };
    }
    let page: E2BSandboxInfo[];
    try {
      page = await paginator.nextItems();
    } catch (error) {
      logger.warn('e2b sandbox listing page failed', { error: errorMessage(error), pages });
      return { entries, complete: false, budgetExhausted: false, error };
    }
    pages += 1;
    for (const info of page) {
      if (entries.length >= budget.maxItems) {
        return { entries, complete: false, budgetExhausted: true };
      }
      entries.push(info);
    }
  }
  return { entries, complete: true, budgetExhausted: false };
}
