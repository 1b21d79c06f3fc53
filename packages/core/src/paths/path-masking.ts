import path from 'node:path';
import type { LRUCache } from 'lru-cache';
import type * as LruCacheModule from 'lru-cache';
import { lazily, lazyModule } from '../modules/lazy-module.js';

const lruCache = lazyModule<typeof LruCacheModule>('lru-cache');
import { PATH_TAIL_STOP_CLASS, SEGMENT_CONTINUATION_CLASS } from './path-mapping-boundaries.js';
import { realpathLenient } from './path-mapping-realpath.js';
import { scanHostBases } from './host-base-scan.js';
import type { ThreadDataPaths } from './virtual-paths.js';
import { threadHostToVirtualMappings } from './virtual-paths-thread.js';

/** A host directory and the virtual path it is shown as. */
export interface MaskSource {
  readonly hostPath: string;
  readonly virtualPath: string;
}

export interface MaskOptions {
  /**
   * Let each separator inside a host base match `/` or `\`, for bases whose spelling the output
   * may not share (Windows-style paths reported by tools). Default false.
   */
  separatorAgnostic?: boolean;
  /** Rewrite `\` to `/` in the part below the base, so the result is a pure virtual path. */
  normalizeTailSeparators?: boolean;
}

/** Escapes only syntax characters, which is what the `u` flag permits (`\-` would be an error). */
function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The masking rule for one base as a regular expression: the host base, a segment boundary (`/`,
 * end of text, or a character that cannot continue a name — so `…/skills` does not match inside
 * `…/skills-extra`), then an optional tail starting with `/` or `\` that runs up to whitespace, a
 * quote or shell punctuation. For hosts that match with regular expressions; sbx's maskers scan
 * all bases in one pass instead (`scanHostBases`), which also cuts a tail where the next host path
 * starts, so chained paths (`W/a:W/b`) are each masked.
 */
export function buildOutputMaskPattern(base: string, options: MaskOptions = {}): RegExp {
  let escaped = escapeRegExp(base);
  if (options.separatorAgnostic) escaped = escaped.replace(/\\\\|\//g, '[/\\\\]');
  return new RegExp(
    `${escaped}(?=/|$|[^${SEGMENT_CONTINUATION_CLASS}])(?:[/\\\\][^${PATH_TAIL_STOP_CLASS}]*)?`,
    'gu',
  );
}

/**
 * Start and end offsets of every occurrence of `base` in `text` under the masking rule, left to
 * right without overlaps (the matches of `buildOutputMaskPattern`, except that a tail ends where
 * the base occurs again), in linear time.
 */
export function* scanPathOccurrences(
  text: string,
  base: string,
  options: Pick<MaskOptions, 'separatorAgnostic'> = {},
): Generator<[number, number]> {
  if (base.length === 0) return;
  for (const o of scanHostBases(text, [base], options)) yield [o.start, o.end];
}

function replacement(matched: string, baseLength: number, virtual: string, opts: MaskOptions) {
  let rel = matched.slice(baseLength).replace(/^[/\\]+/, '');
  if (opts.normalizeTailSeparators) rel = rel.replace(/\\/g, '/');
  return rel ? `${virtual}/${rel}` : virtual;
}

function trimTrailingSeparators(value: string): string {
  let end = value.length;
  while (end > 1 && (value[end - 1] === '/' || value[end - 1] === '\\')) end--;
  return value.slice(0, end);
}

/**
 * Rewrites host paths in text to their virtual form, every source in one linear pass
 * (`scanHostBases`): where bases nest, the deepest wins whatever the order of the sources, and
 * chained paths (`A/x:B/y:C/z`) are each masked however many there are. Each source masks its
 * host base exactly as given; callers add canonical spellings as further sources (the first of
 * two equal bases wins). Idempotent as long as no virtual path contains a host base.
 */
export class HostPathMasker {
  private readonly sources: readonly MaskSource[];
  private readonly bases: readonly string[];
  private readonly options: MaskOptions;

  constructor(sources: readonly MaskSource[], options: MaskOptions = {}) {
    const seen = new Set<string>();
    const unique: MaskSource[] = [];
    for (const s of sources) {
      const hostPath = trimTrailingSeparators(s.hostPath);
      const key = options.separatorAgnostic ? hostPath.replace(/\\/g, '/') : hostPath;
      if (!hostPath || seen.has(key)) continue;
      seen.add(key);
      unique.push({ hostPath, virtualPath: s.virtualPath });
    }
    this.sources = unique;
    this.bases = unique.map((s) => s.hostPath);
    this.options = options;
  }

  mask(text: string): string {
    if (this.sources.length === 0) return text;
    let out = '';
    let last = 0;
    for (const o of scanHostBases(text, this.bases, this.options)) {
      const { virtualPath } = this.sources[o.base] as MaskSource;
      const matched = text.slice(o.start, o.end);
      out +=
        text.slice(last, o.start) +
        replacement(matched, o.baseEnd - o.start, virtualPath, this.options);
      last = o.end;
    }
    return last === 0 ? text : out + text.slice(last);
  }
}

/**
 * Canonical spellings of host roots, bounded so per-thread roots that pass through a long-lived
 * process are not retained forever, while glob/grep results of recent threads skip repeated
 * `realpath` walks.
 */
const resolvedRootCache: () => LRUCache<string, string> = lazily(
  () => new (lruCache().LRUCache)<string, string>({ max: 256 }),
);

/** Canonical form of an absolute host root via the bounded cache; other spellings unchanged. */
export async function resolveHostRoot(hostPath: string): Promise<string> {
  if (!path.isAbsolute(hostPath)) return hostPath;
  const cached = resolvedRootCache().get(hostPath);
  if (cached !== undefined) return cached;
  let resolved: string;
  try {
    resolved = await realpathLenient(hostPath);
  } catch {
    // An unresolvable root (permission error, link loop) is still masked in its raw spelling.
    resolved = hostPath;
  }
  resolvedRootCache().set(hostPath, resolved);
  return resolved;
}

/** Current size of the resolved-root cache (its bound is 256). */
export function resolvedRootCacheSize(): number {
  return resolvedRootCache().size;
}

export interface LocalMaskOptions {
  /** Host directories of the current thread; absent still masks the skills sources. */
  threadData?: ThreadDataPaths | null;
  /** Host root of the skills tree shown at `skillsContainerPath` (process-stable). */
  skillsHostPath?: string;
  /** Host directory of managed integration skills (process-stable). */
  integrationsHostPath?: string;
  /** Host directory of the current user's raw custom skills. */
  userCustomSkillsHostPath?: string;
  /** Default `/mnt/skills`. */
  skillsContainerPath?: string;
}

/**
 * Safety net for text produced by a host-backed sandbox (command output, errors, listings): every
 * host path of the thread, the skills tree, the integrations, the user's custom skills and the ACP
 * workspace is shown as its virtual path. Each host base is masked in its given and its canonical
 * spelling, with either separator, all in one linear pass (`HostPathMasker`): the deepest base
 * wins where bases nest, and chained paths are each masked. Nothing is compiled or retained per
 * host path but the bounded cache of canonical spellings.
 */
export async function maskLocalPathsInOutput(
  output: string,
  options: LocalMaskOptions = {},
): Promise<string> {
  if (output.length === 0) return output;
  return (await localPathMasker(options))(output);
}

/**
 * `maskLocalPathsInOutput` prepared once: the canonical spellings are resolved now, so the
 * returned function masks synchronously. For text that arrives in pieces (streamed command
 * output), where each piece must be masked in order and at once.
 */
export async function localPathMasker(
  options: LocalMaskOptions = {},
): Promise<(output: string) => string> {
  const skills = options.skillsContainerPath ?? '/mnt/skills';
  const sources: MaskSource[] = [];
  if (options.skillsHostPath) {
    sources.push({ hostPath: options.skillsHostPath, virtualPath: skills });
  }
  if (options.integrationsHostPath) {
    sources.push({ hostPath: options.integrationsHostPath, virtualPath: `${skills}/integrations` });
  }
  if (options.userCustomSkillsHostPath) {
    sources.push({ hostPath: options.userCustomSkillsHostPath, virtualPath: `${skills}/custom` });
  }
  const td = options.threadData ?? undefined;
  if (td?.acpWorkspacePath) {
    sources.push({ hostPath: td.acpWorkspacePath, virtualPath: '/mnt/acp-workspace' });
  }
  if (td) sources.push(...threadHostToVirtualMappings(td));
  if (sources.length === 0) return (output) => output;

  const spelled: MaskSource[] = [];
  for (const source of sources) {
    const raw = trimTrailingSeparators(source.hostPath);
    const canonical = trimTrailingSeparators(await resolveHostRoot(raw));
    spelled.push({ hostPath: raw, virtualPath: source.virtualPath });
    if (canonical !== raw) spelled.push({ hostPath: canonical, virtualPath: source.virtualPath });
  }
  const masker = new HostPathMasker(spelled, { separatorAgnostic: true });
  return (output) => masker.mask(output);
}
