import path from 'node:path';
import type { LRUCache } from 'lru-cache';
import type * as LruCacheModule from 'lru-cache';
import { lazily, lazyModule } from '../host/lazy-module.js';

const lruCache = lazyModule<typeof LruCacheModule>('lru-cache');
import {
  PATH_TAIL_STOP_CLASS,
  SEGMENT_CONTINUATION_CLASS,
  isTextBoundaryAt,
  tailEnd,
} from './path-mapping-boundaries.js';
import { realpathLenient } from './path-mapping-realpath.js';
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
 * The one compiled spelling of the host→virtual masking rule: the host base, a segment boundary
 * (`/`, end of text, or a character that cannot continue a name — so `…/skills` does not match
 * inside `…/skills-extra`), then an optional tail starting with `/` or `\` that runs up to
 * whitespace, a quote or shell punctuation. Used for the small process-stable source set; dynamic
 * per-thread roots are scanned directly with the same rule (`scanPathOccurrences`).
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
 * Start and end offsets of every occurrence of `base` in `text` under the masking rule, scanning
 * left to right without overlaps (the same matches `buildOutputMaskPattern` yields), but with no
 * compiled pattern per base — nothing here is retained per host path.
 */
export function* scanPathOccurrences(
  text: string,
  base: string,
  options: Pick<MaskOptions, 'separatorAgnostic'> = {},
): Generator<[number, number]> {
  if (base.length === 0) return;
  // Separator-agnostic matching compares both sides with `\` folded to `/`; the folding keeps
  // every offset, so matches index the original text.
  const agnostic = options.separatorAgnostic === true;
  const needle = agnostic ? base.replace(/\\/g, '/') : base;
  const haystack = agnostic && text.includes('\\') ? text.replace(/\\/g, '/') : text;
  let from = 0;
  for (;;) {
    const start = haystack.indexOf(needle, from);
    if (start < 0) return;
    const afterBase = start + needle.length;
    if (!isTextBoundaryAt(text, afterBase)) {
      from = start + 1;
      continue;
    }
    const sep = text.charCodeAt(afterBase);
    let end = sep === 0x2f || sep === 0x5c ? tailEnd(text, afterBase + 1) : afterBase;
    // A tail never swallows the next occurrence of the base (`W/a:W/b`, PATH-style lists): it
    // ends where that one starts, so every occurrence is masked. Linear: the search resumes there.
    for (let next = haystack.indexOf(needle, afterBase); next >= 0 && next < end;) {
      if (isTextBoundaryAt(text, next + needle.length)) {
        end = next;
        break;
      }
      next = haystack.indexOf(needle, next + 1);
    }
    yield [start, end];
    from = end;
  }
}

function replacement(matched: string, baseLength: number, virtual: string, opts: MaskOptions) {
  let rel = matched.slice(baseLength).replace(/^[/\\]+/, '');
  if (opts.normalizeTailSeparators) rel = rel.replace(/\\/g, '/');
  return rel ? `${virtual}/${rel}` : virtual;
}

function maskByScanning(text: string, base: string, virtual: string, opts: MaskOptions): string {
  let out = '';
  let last = 0;
  let matched = false;
  for (const [start, end] of scanPathOccurrences(text, base, opts)) {
    out +=
      text.slice(last, start) + replacement(text.slice(start, end), base.length, virtual, opts);
    last = end;
    matched = true;
  }
  return matched ? out + text.slice(last) : text;
}

/** Bounded: only the process-stable skills/integrations bases are ever compiled. */
const compiledStablePatterns: () => LRUCache<string, RegExp> = lazily(
  () => new (lruCache().LRUCache)<string, RegExp>({ max: 32 }),
);

function maskWithCompiledPattern(
  text: string,
  base: string,
  virtual: string,
  opts: MaskOptions,
): string {
  const key = `${opts.separatorAgnostic ? 1 : 0}\0${base}`;
  let pattern = compiledStablePatterns().get(key);
  if (!pattern) {
    pattern = buildOutputMaskPattern(base, opts);
    compiledStablePatterns().set(key, pattern);
  }
  pattern.lastIndex = 0;
  // The compiled rule's tail runs past a repeated base (`W/a:W/b`); masking the match by scanning
  // applies the cut of `scanPathOccurrences`, so both rules mask every occurrence.
  return text.replace(pattern, (m) => maskByScanning(m, base, virtual, opts));
}

function trimTrailingSeparators(value: string): string {
  let end = value.length;
  while (end > 1 && (value[end - 1] === '/' || value[end - 1] === '\\')) end--;
  return value.slice(0, end);
}

/**
 * Rewrites host paths in text to their virtual form, one source after the other (order matters:
 * put deeper host directories first). Each source masks its host base exactly as given; callers
 * add canonical spellings as further sources. Idempotent as long as no virtual path contains a
 * host base.
 */
export class HostPathMasker {
  private readonly sources: readonly MaskSource[];
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
    this.options = options;
  }

  mask(text: string): string {
    let result = text;
    for (const { hostPath, virtualPath } of this.sources) {
      result = maskByScanning(result, hostPath, virtualPath, this.options);
    }
    return result;
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

interface OrderedSource extends MaskSource {
  readonly stable: boolean;
}

/**
 * Safety net for text produced by a host-backed sandbox (command output, errors, listings): every
 * host path of the thread, the skills tree and the ACP workspace is shown as its virtual path.
 * Order: skills, integrations, the user's custom skills, the ACP workspace, then the thread's
 * user-data directories (deepest host path first). Each host base is masked in its given and its
 * canonical spelling, with either separator. Only the process-stable skills/integrations bases use
 * compiled patterns; per-user and per-thread roots are scanned directly.
 */
export async function maskLocalPathsInOutput(
  output: string,
  options: LocalMaskOptions = {},
): Promise<string> {
  const skills = options.skillsContainerPath ?? '/mnt/skills';
  const ordered: OrderedSource[] = [];
  if (options.skillsHostPath) {
    ordered.push({ hostPath: options.skillsHostPath, virtualPath: skills, stable: true });
  }
  if (options.integrationsHostPath) {
    ordered.push({
      hostPath: options.integrationsHostPath,
      virtualPath: `${skills}/integrations`,
      stable: true,
    });
  }
  if (options.userCustomSkillsHostPath) {
    ordered.push({
      hostPath: options.userCustomSkillsHostPath,
      virtualPath: `${skills}/custom`,
      stable: false,
    });
  }
  const td = options.threadData ?? undefined;
  if (td?.acpWorkspacePath) {
    ordered.push({
      hostPath: td.acpWorkspacePath,
      virtualPath: '/mnt/acp-workspace',
      stable: false,
    });
  }
  if (td) {
    for (const m of threadHostToVirtualMappings(td)) {
      ordered.push({ hostPath: m.hostPath, virtualPath: m.virtualPath, stable: false });
    }
  }
  if (ordered.length === 0) return output;

  const opts: MaskOptions = { separatorAgnostic: true };
  let result = output;
  for (const source of ordered) {
    const raw = trimTrailingSeparators(source.hostPath);
    const canonical = trimTrailingSeparators(await resolveHostRoot(raw));
    const bases = canonical === raw ? [raw] : [raw, canonical];
    for (const base of bases) {
      result = source.stable
        ? maskWithCompiledPattern(result, base, source.virtualPath, opts)
        : maskByScanning(result, base, source.virtualPath, opts);
    }
  }
  return result;
}
