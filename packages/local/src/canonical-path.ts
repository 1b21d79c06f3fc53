import { realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * `realpath` of the deepest existing ancestor plus the missing tail. Synchronous on purpose: it
 * runs once, at provider construction (start-up configuration), never on a request path.
 */
export function canonicalPathSync(target: string): string {
  try {
    return realpathSync(target);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    const parent = path.dirname(target);
    return parent === target ? target : path.join(canonicalPathSync(parent), path.basename(target));
  }
}
