import { SandboxPermissionError, SandboxRuntimeError } from '../errors/errors.js';
import { PATH_TRAVERSAL_MESSAGE, type PathMapping } from '../paths/path-mapping.js';
import {
  THREAD_DATA_UNAVAILABLE_MESSAGE,
  customMountFor,
  isAcpWorkspacePath,
  isSkillsPath,
  rejectPathTraversal,
  type VirtualRootsOptions,
} from '../paths/path-validation.js';
import { splitOnWhitespace, splitShellWords } from './bash-path-guard-tokens.js';
import {
  VIRTUAL_PATH_PREFIX,
  isUnderVirtualPrefix,
  type ThreadDataPaths,
} from '../paths/virtual-paths.js';

export interface BashPathGuardOptions extends VirtualRootsOptions {
  /**
   * Roots served by an enabled MCP filesystem server; commands may name paths below them (see
   * `mcpFilesystemRoots`). Each root should end with `/`.
   */
  mcpAllowedPaths?: readonly string[];
}

/** An MCP server entry as far as the guard cares. */
export interface McpServerArgs {
  readonly enabled?: boolean;
  readonly args?: readonly string[];
}

/** Roots of enabled MCP filesystem servers: every absolute, non-flag argument, ending with `/`. */
export function mcpFilesystemRoots(servers: Iterable<McpServerArgs>): string[] {
  const roots: string[] = [];
  for (const server of servers) {
    if (server.enabled === false) continue;
    const args = server.args ?? [];
    if (!args.some((a) => a.includes('server-filesystem'))) continue;
    for (const arg of args) {
      if (!arg.startsWith('-') && arg.startsWith('/')) roots.push(`${arg.replace(/\/+$/, '')}/`);
    }
  }
  return roots;
}

const USE_USER_DATA = `Use paths under ${VIRTUAL_PATH_PREFIX}`;
const SYSTEM_PATH_PREFIXES = [
  '/bin/',
  '/usr/bin/',
  '/usr/sbin/',
  '/sbin/',
  '/opt/homebrew/bin/',
  '/dev/',
];
const CWD_COMMANDS = new Set(['cd', 'pushd']);
const COMMAND_WRAPPERS = new Set(['command', 'builtin']);
const KEYWORDS = new Set([
  '!',
  '{',
  'case',
  'do',
  'elif',
  'else',
  'for',
  'if',
  'select',
  'then',
  'time',
  'until',
  'while',
  '}',
  'done',
  'esac',
  'fi',
]);
const ROOT_PATH_COMMANDS = new Set([
  'awk',
  'cat',
  'cp',
  'du',
  'find',
  'grep',
  'head',
  'less',
  'ln',
  'ls',
  'more',
  'mv',
  'rm',
  'sed',
  'tail',
  'tar',
]);
const SEPARATORS = new Set([';', '&&', '||', '|', '|&', '&', '(', ')']);
const REDIRECTIONS = new Set(['<', '>', '<<', '>>', '<<<', '<>', '>&', '<&', '&>', '&>>', '>|']);

// A `/` after a word character, `:` or `.` continues a relative path or URL (`src/lib`, `./lib`,
// `http://`), it does not start an absolute one.
const ABSOLUTE_PATH = /(?<![:.\p{L}\p{N}_])(?<!:\/)\/[^\s"'`;&|<>()]+/gu;
const FILE_URL = /\bfile:\/\/\S+/i;
const URL_WITH_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
/** What `urlSpans` finds, as a regex: kept as the specification (and for its property test). */
export const URL_IN_COMMAND = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'`;&|<>()]+/gi;

const SCHEME_CHAR = /[a-z0-9+.-]/i;
const WORD_CHAR = /[A-Za-z0-9_]/;
const LETTER = /[a-z]/i;
const URL_STOP = /[\s"'`;&|<>()]/;

/**
 * The matches of `URL_IN_COMMAND` (start, end), found in linear time: the regex backtracks over
 * every start inside a run like `a.a.a.a…` (quadratic: a 40 KB command took a second). Each `://`
 * is found with `indexOf`; its scheme is the leftmost letter at a word boundary in the run of
 * scheme characters before it (runs never cross a `://`, so each character is visited a bounded
 * number of times); its tail runs up to a stop character.
 */
export function urlSpans(command: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  let cursor = 0;
  for (
    let k = command.indexOf('://', cursor);
    k >= 0;
    k = command.indexOf('://', Math.max(cursor, k + 1))
  ) {
    let runStart = k;
    while (runStart > cursor && SCHEME_CHAR.test(command[runStart - 1] as string)) runStart--;
    let start = -1;
    for (let i = runStart; i < k; i++) {
      if (!LETTER.test(command[i] as string)) continue;
      const before = i === 0 ? '' : (command[i - 1] as string);
      if (before === '' || !WORD_CHAR.test(before)) {
        start = i;
        break;
      }
    }
    let end = k + 3;
    while (end < command.length && !URL_STOP.test(command[end] as string)) end++;
    if (start < 0 || end === k + 3) continue;
    spans.push([start, end]);
    cursor = end;
  }
  return spans;
}
const DOTDOT_SEGMENT = /(?:^|[/\\=])\.\.(?:$|[/\\])/;
const CD_WORD = /\b(?:cd|pushd)\b/g;
const BRACE_BLOCK = /\{([^{}]*)\}/g;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

function deny(message: string): never {
  throw new SandboxPermissionError(message);
}

function isNonFileUrlToken(token: string): boolean {
  const eq = token.indexOf('=');
  const values = eq >= 0 ? [token, token.slice(eq + 1)] : [token];
  return values.some((v) => URL_WITH_SCHEME.test(v) && !v.toLowerCase().startsWith('file://'));
}

/** `{id}`-style placeholders only; brace expansion (`{a,b}`, `{,.bak}`) and `${VAR}` are paths. */
function bracesAreIdentifierPlaceholders(fragment: string): boolean {
  if (fragment.includes('${')) return false;
  const blocks = [...fragment.matchAll(BRACE_BLOCK)].map((m) => m[1] as string);
  const opens = fragment.split('{').length - 1;
  const closes = fragment.split('}').length - 1;
  if (opens !== blocks.length || closes !== blocks.length) return false;
  return blocks.every((inner) => IDENTIFIER.test(inner));
}

/** Text that merely looks like a path inside a string literal or a URL template. */
function isLiteralFragment(fragment: string): boolean {
  if (/[^\x00-\x7f]/.test(fragment)) return true; // eslint-disable-line no-control-regex
  if (fragment.includes('{') || fragment.includes('}')) {
    return bracesAreIdentifierPlaceholders(fragment);
  }
  return false;
}

function isAllowedAbsolutePath(
  p: string,
  options: BashPathGuardOptions,
  allowSystemPaths: boolean,
): boolean {
  const mcp = options.mcpAllowedPaths ?? [];
  const underAllowedRoot =
    mcp.some((root) => p.startsWith(root) || p === root.replace(/\/+$/, '')) ||
    isUnderVirtualPrefix(p, VIRTUAL_PATH_PREFIX) ||
    isSkillsPath(p, options) ||
    isAcpWorkspacePath(p) ||
    customMountFor(p, options.customMounts as readonly PathMapping[] | undefined) !== undefined;
  if (underAllowedRoot) {
    rejectPathTraversal(p);
    return true;
  }
  return (
    allowSystemPaths &&
    SYSTEM_PATH_PREFIXES.some((prefix) => p === prefix.slice(0, -1) || p.startsWith(prefix))
  );
}

function baseName(token: string): string {
  return token.slice(token.lastIndexOf('/') + 1);
}

/** Target of a `cd`/`pushd` starting at `index`: skips redirections and options. */
function cdTarget(tokens: readonly string[], index: number): [string | undefined, number] {
  let i = index;
  while (i < tokens.length) {
    const token = tokens[i] as string;
    if (SEPARATORS.has(token)) return [undefined, i];
    if (REDIRECTIONS.has(token)) {
      i += 2;
      continue;
    }
    if (token.startsWith('-') && token !== '-') {
      i++;
      continue;
    }
    return [token, i + 1];
  }
  return [undefined, i];
}

function checkCdTarget(name: string, target: string | undefined, options: BashPathGuardOptions) {
  if (target === undefined || target === '-') {
    deny(`Unsafe working directory change in command: ${name}. ${USE_USER_DATA}`);
  }
  const unsafe = `Unsafe working directory change in command: ${name} ${target}. ${USE_USER_DATA}`;
  if (target.startsWith('$') || target.startsWith('`') || target.startsWith('~')) deny(unsafe);
  if (target.startsWith('/')) {
    rejectPathTraversal(target);
    if (!isAllowedAbsolutePath(target, options, false)) deny(unsafe);
  }
}

function checkRootArguments(name: string, tokens: readonly string[], index: number): void {
  if (!ROOT_PATH_COMMANDS.has(name)) return;
  for (let i = index; i < tokens.length; i++) {
    const token = tokens[i] as string;
    if (SEPARATORS.has(token)) return;
    if (REDIRECTIONS.has(token)) {
      i++;
      continue;
    }
    if (token === '/') deny(`Unsafe absolute paths in command: /. ${USE_USER_DATA}`);
  }
}

/**
 * `true` when a `cd` or `pushd` word follows a `$(` before the next `)`. Linear: the `$(` openings
 * and the `cd` words are both visited once, in order (the regex `\$\([^)]*\bcd\b` it replaces
 * backtracked quadratically on `$(` repeated without a `)`).
 */
function hasCdInSubstitution(command: string): boolean {
  const words: number[] = [];
  for (const m of command.matchAll(CD_WORD)) words.push(m.index);
  if (words.length === 0) return false;
  let w = 0;
  let closeAt = -1;
  for (let open = command.indexOf('$('); open >= 0; open = command.indexOf('$(', open + 2)) {
    if (closeAt < open) {
      closeAt = command.indexOf(')', open + 2);
      if (closeAt < 0) closeAt = command.length;
    }
    while (w < words.length && (words[w] as number) < open + 2) w++;
    if (w < words.length && (words[w] as number) < closeAt) return true;
  }
  return false;
}

function checkShellWords(command: string, options: BashPathGuardOptions): void {
  if (hasCdInSubstitution(command)) {
    deny(`Unsafe working directory change in command substitution. ${USE_USER_DATA}`);
  }
  const tokens = splitShellWords(command) ?? splitOnWhitespace(command);
  for (const token of tokens) {
    if (SEPARATORS.has(token) || REDIRECTIONS.has(token)) continue;
    if (!isNonFileUrlToken(token) && DOTDOT_SEGMENT.test(token)) deny(PATH_TRAVERSAL_MESSAGE);
  }

  let atCommandStart = true;
  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i] as string;
    if (SEPARATORS.has(token)) {
      atCommandStart = true;
      i++;
      continue;
    }
    if (REDIRECTIONS.has(token) || !atCommandStart) {
      i++;
      continue;
    }
    const name = baseName(token);
    if (ASSIGNMENT.test(token) || KEYWORDS.has(name)) {
      i++;
      continue;
    }
    atCommandStart = false;
    if (COMMAND_WRAPPERS.has(name) && i + 1 < tokens.length) {
      const wrapped = baseName(tokens[i + 1] as string);
      if (CWD_COMMANDS.has(wrapped)) {
        const [target, next] = cdTarget(tokens, i + 2);
        checkCdTarget(wrapped, target, options);
        i = next;
        continue;
      }
      checkRootArguments(wrapped, tokens, i + 2);
    }
    if (CWD_COMMANDS.has(name)) {
      const [target, next] = cdTarget(tokens, i + 1);
      checkCdTarget(name, target, options);
      i = next;
      continue;
    }
    checkRootArguments(name, tokens, i + 1);
    i++;
  }
}

/**
 * Best-effort screening of a host bash command before it runs on a host-backed sandbox: refuses
 * `file://` URLs, `..` segments, working-directory changes to anywhere but the allowed roots, `/`
 * as an argument of common file commands, and absolute paths outside `/mnt/user-data`, the skills
 * root, the ACP workspace, configured mounts, MCP filesystem roots and a few system prefixes
 * (`/bin/`, `/usr/bin/`, `/dev/`, ...).
 *
 * This is NOT a security boundary: a shell can build any path at run time (`$(printf ...)`,
 * variables, scripts). It stops an agent from wandering off by accident and tells it where to
 * work; isolation needs a container provider.
 */
export function validateLocalBashCommandPaths(
  command: string,
  threadData: ThreadDataPaths | null | undefined,
  options: BashPathGuardOptions = {},
): void {
  if (!threadData) throw new SandboxRuntimeError(THREAD_DATA_UNAVAILABLE_MESSAGE);
  const fileUrl = FILE_URL.exec(command);
  if (fileUrl) deny(`Unsafe file:// URL in command: ${fileUrl[0]}. ${USE_USER_DATA}`);

  checkShellWords(command, options);

  const urls = urlSpans(command).filter(
    ([start, end]) => !command.slice(start, end).toLowerCase().startsWith('file://'),
  );
  const unsafe = new Set<string>();
  // Paths and URL spans both come in text order: one forward pointer keeps this linear.
  let span = 0;
  for (const m of command.matchAll(ABSOLUTE_PATH)) {
    while (span < urls.length && (urls[span] as [number, number])[1] <= m.index) span++;
    const current = urls[span];
    if (current && m.index >= current[0] && m.index < current[1]) continue;
    const candidate = m[0];
    if (isLiteralFragment(candidate)) continue;
    if (isAllowedAbsolutePath(candidate, options, true)) continue;
    unsafe.add(candidate);
  }
  if (unsafe.size > 0) {
    const listed = [...unsafe].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(', ');
    deny(`Unsafe absolute paths in command: ${listed}. ${USE_USER_DATA}`);
  }
}
