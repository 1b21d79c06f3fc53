import {
  isCommandBoundaryAt,
  isLeftBoundaryAt,
  isTextBoundaryAt,
  tailEnd,
} from './path-mapping-boundaries.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { MAX_PATH_BYTES, shownPath } from './path-limits.js';
import type { PathMapping, PathMappingTable } from './path-mapping.js';

/**
 * `command`: a container path ends at `/`, end of text, whitespace, a quote or shell punctuation.
 * `content`: text-oriented, a path also ends before `,`, `:` and the like (used for file bodies).
 */
export type TranslationMode = 'command' | 'content';

export interface ContainerPathOccurrence {
  readonly start: number;
  readonly end: number;
  readonly mapping: PathMapping;
}

/**
 * Container paths in `text` that the table maps, most specific mount first at each position.
 * A match needs a boundary on both sides: `/tmp/mnt/skills` and `/mnt/skills-extra` are not the
 * mount `/mnt/skills`. A `/` mount is never matched in text (it would claim every absolute path).
 */
export function findContainerPaths(
  text: string,
  table: PathMappingTable,
  mode: TranslationMode,
): ContainerPathOccurrence[] {
  const mappings = table.mappingsBySpecificity.filter((m) => m.containerPath !== '/');
  if (mappings.length === 0) return [];
  const rightBoundary = mode === 'command' ? isCommandBoundaryAt : isTextBoundaryAt;
  const found: ContainerPathOccurrence[] = [];
  let at = text.indexOf('/');
  while (at >= 0) {
    let next = at + 1;
    if (isLeftBoundaryAt(text, at)) {
      for (const mapping of mappings) {
        const root = mapping.containerPath;
        if (!text.startsWith(root, at)) continue;
        const afterRoot = at + root.length;
        if (!rightBoundary(text, afterRoot)) continue;
        const end = text.charCodeAt(afterRoot) === 0x2f ? tailEnd(text, afterRoot + 1) : afterRoot;
        found.push({ start: at, end, mapping });
        next = end;
        break;
      }
    }
    at = text.indexOf('/', next);
  }
  return found;
}

/**
 * Replaces every mapped container path in `text` with its host path (forward slashes). Each path
 * is resolved like a file operation would be, so a `..` segment or a symbolic link that leaves its
 * mount raises `SandboxPermissionError` and nothing is run or written. The substituted spelling is
 * the canonical mount root plus the virtual remainder, so a command still acts on a symbolic link
 * itself (not on its target) and a trailing `/` is kept (`rsync src/ dst/` semantics).
 */
export async function translateContainerPaths(
  text: string,
  table: PathMappingTable,
  mode: TranslationMode,
): Promise<string> {
  const occurrences = findContainerPaths(text, table, mode).filter((o) => {
    if (
      o.end - o.start <= MAX_PATH_BYTES / 3 ||
      Buffer.byteLength(text.slice(o.start, o.end)) <= MAX_PATH_BYTES
    ) {
      return true;
    }
    // No file operation can use a path this long. In file content it is just text and stays as
    // written; in a command it would reach the shell untranslated, so the command is refused.
    if (mode === 'command') {
      throw new InvalidArgumentError(
        `A path in the command is longer than ${MAX_PATH_BYTES} bytes: ${shownPath(text.slice(o.start, o.end))}`,
      );
    }
    return false;
  });
  if (occurrences.length === 0) return text;
  const hostPaths = await Promise.all(
    occurrences.map(async (o) => {
      const virtualPath = text.slice(o.start, o.end);
      const { lexicalHostPath } = await table.resolve(virtualPath, 'read');
      const hostPath = lexicalHostPath.replace(/\\/g, '/');
      return virtualPath.endsWith('/') && !hostPath.endsWith('/') ? `${hostPath}/` : hostPath;
    }),
  );
  let out = '';
  let last = 0;
  occurrences.forEach((o, i) => {
    out += text.slice(last, o.start) + (hostPaths[i] as string);
    last = o.end;
  });
  return out + text.slice(last);
}
