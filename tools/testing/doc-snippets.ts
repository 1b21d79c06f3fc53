import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';

/**
 * The TypeScript blocks of the docs a user would paste, and how CI holds each to account:
 *
 * - `<!-- example: runs in CI -->` (or `<!-- example (name): runs in CI -->`) on the line before a
 *   block (blank lines between allowed): the block is a complete program; it is type-checked
 *   strictly and run. A block with `// your model` lines names a real model: its package's test
 *   runs it with a scripted one (`runReadmeExample`), this runner type-checks it.
 * - `<!-- snippet: fragment - <why> -->`: not checked at all, and the reason is required (a shape
 *   sketch in pseudo-TypeScript, a block that is not TypeScript).
 * - anything else: type-checked against the packages' sources, all blocks in one program. Names a
 *   block uses without declaring them (`provider`, `config`, `logger`: the context the prose gives)
 *   are taken as given; everything else must check: imports must name what the package exports,
 *   calls must fit the signatures.
 */

export type SnippetKind = 'run' | 'check' | 'fragment';

export interface DocSnippet {
  /** The markdown file, absolute. */
  readonly file: string;
  /** Line of the block's first code line in the file, from 1. */
  readonly line: number;
  readonly code: string;
  readonly kind: SnippetKind;
  /** Why a fragment is not checked. */
  readonly reason?: string;
}

export const RUN_MARKER = /^<!-- example(?: \([^)]*\))?: runs in CI -->$/;
const FRAGMENT_MARKER = /^<!-- snippet: fragment(?:\s*[-—:]\s*(.*?))?\s*-->$/;
const ANY_SNIPPET_MARKER = /^<!-- snippet:/;
const FENCE_OPEN = /^```(ts|typescript)\s*$/;
const FENCE_CLOSE = /^```\s*$/;

/** The documentation a user reads: the root README, `docs/*.md` and every package's README. */
export async function docFiles(root: string): Promise<string[]> {
  const files = [path.join(root, 'README.md')];
  for (const name of (await readdir(path.join(root, 'docs'))).sort()) {
    if (name.endsWith('.md')) files.push(path.join(root, 'docs', name));
  }
  for (const pkg of (await readdir(path.join(root, 'packages'))).sort()) {
    const readme = path.join(root, 'packages', pkg, 'README.md');
    if (
      await readFile(readme).then(
        () => true,
        () => false,
      )
    )
      files.push(readme);
  }
  return files;
}

/**
 * Every TypeScript block of `text` with its marking. A `snippet:` marker this runner does not know,
 * or a fragment without its reason, is an error: nothing is skipped by a typo.
 */
export function extractSnippets(file: string, text: string): DocSnippet[] {
  const lines = text.split('\n');
  const out: DocSnippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE_OPEN.test(lines[i]!.trim())) continue;
    let end = i + 1;
    while (end < lines.length && !FENCE_CLOSE.test(lines[end]!.trim())) end++;
    if (end >= lines.length) throw new Error(`${file}:${i + 1}: a \`\`\`ts block is never closed`);
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const marker = before >= 0 ? lines[before]!.trim() : '';
    const code = lines.slice(i + 1, end).join('\n');
    const at = { file, line: i + 2, code };
    const fragment = FRAGMENT_MARKER.exec(marker);
    if (RUN_MARKER.test(marker)) out.push({ ...at, kind: 'run' });
    else if (fragment) {
      if (!fragment[1])
        throw new Error(`${file}:${before + 1}: a fragment marker needs its reason`);
      out.push({ ...at, kind: 'fragment', reason: fragment[1] });
    } else if (ANY_SNIPPET_MARKER.test(marker)) {
      throw new Error(`${file}:${before + 1}: unknown snippet marker ${marker}`);
    } else out.push({ ...at, kind: 'check' });
    i = end;
  }
  return out;
}

export async function snippetsOf(files: readonly string[]): Promise<DocSnippet[]> {
  const all: DocSnippet[] = [];
  for (const file of files) all.push(...extractSnippets(file, await readFile(file, 'utf8')));
  return all;
}

/** A configuration block of the docs: a ```yaml block with a top-level `sandbox:` key. */
export interface DocConfig {
  readonly file: string;
  /** Line of the block's first line in the file, from 1. */
  readonly line: number;
  readonly yaml: string;
  /** The `$NAME` variables it reads (set to a stand-in value when it is validated). */
  readonly variables: readonly string[];
}

export function extractConfigs(file: string, text: string): DocConfig[] {
  const out: DocConfig[] = [];
  for (const match of text.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)) {
    const yaml = match[1]!;
    if (!/^sandbox:/m.test(yaml)) continue;
    const line = text.slice(0, match.index).split('\n').length + 1;
    const variables = [
      ...new Set([...yaml.matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!)),
    ];
    out.push({ file, line, yaml, variables });
  }
  return out;
}

/** The lines a README marks `// your model`: a real model the runner cannot call. */
export function namesModel(snippet: DocSnippet): boolean {
  return snippet.code.split('\n').some((line) => line.trimEnd().endsWith('// your model'));
}

/**
 * The block as its own module: an import of a model package (`// your model`) becomes a
 * declaration of what it imports, so a model SDK need not be installed to check the rest.
 */
function moduleSource(snippet: DocSnippet): string {
  const lines = snippet.code.split('\n').map((line) => {
    if (!line.trimEnd().endsWith('// your model')) return line;
    const imported = /^\s*import\s+\{([^}]*)\}\s+from\s+['"][^'"]+['"];?/.exec(line);
    if (!imported) return line;
    const names = imported[1]!
      .split(',')
      .map((n) =>
        n
          .trim()
          .split(/\s+as\s+/)
          .pop()!,
      )
      .filter(Boolean);
    return names.map((n) => `declare const ${n}: any;`).join(' ') + ' // your model';
  });
  return `${lines.join('\n')}\n`;
}

/** Diagnostics a `check` block may have: names the prose gives it, used without declaring them. */
const GIVEN_NAME_CODES: ReadonlySet<number> = new Set([
  2304, // Cannot find name 'x'.
  2552, // Cannot find name 'x'. Did you mean 'y'?
  2582, // Cannot find name 'expect' (a test runner's global).
  2593, // likewise, with a suggestion of types to install.
  2503, // Cannot find namespace 'x'.
  18004, // No value exists in scope for the shorthand property 'x'.
  // A callback handed to a given name has no contextual type: its parameters are the prose's.
  7006, // Parameter 'x' implicitly has an 'any' type.
  7031, // Binding element 'x' implicitly has an 'any' type.
]);

export interface SnippetDiagnostic {
  readonly snippet: DocSnippet;
  /** `file:line: TScode message`, the line the markdown's. */
  readonly text: string;
  readonly code: number;
}

/**
 * Type-checks every non-fragment snippet in one TypeScript program over the packages' sources
 * (`@sbx/source` condition), each block a virtual module beside its markdown file, so its
 * imports resolve as they would for a reader of that package. An `.mts` file is always a module:
 * blocks never see each other's names. Returns what failed.
 */
export function typecheckSnippets(
  root: string,
  snippets: readonly DocSnippet[],
): SnippetDiagnostic[] {
  const base = ts.readConfigFile(path.join(root, 'tsconfig.base.json'), ts.sys.readFile);
  if (base.error) throw new Error(ts.flattenDiagnosticMessageText(base.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, root);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    skipLibCheck: true,
    types: ['node'],
  };
  const virtual = new Map<string, { source: string; snippet: DocSnippet }>();
  snippets.forEach((snippet, i) => {
    if (snippet.kind === 'fragment') return;
    const name = path.join(path.dirname(snippet.file), `__doc_snippet_${i}.mts`);
    virtual.set(name, { source: moduleSource(snippet), snippet });
  });
  const host = ts.createCompilerHost(options, true);
  const { fileExists, readFile: read, getSourceFile } = host;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name)?.source ?? read.call(host, name);
  host.getSourceFile = (name, languageVersion, onError, create) => {
    const entry = virtual.get(name);
    if (entry) return ts.createSourceFile(name, entry.source, languageVersion, true);
    return getSourceFile.call(host, name, languageVersion, onError, create);
  };
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  const out: SnippetDiagnostic[] = [];
  for (const [name, { snippet }] of virtual) {
    const sourceFile = program.getSourceFile(name);
    if (!sourceFile) throw new Error(`${name}: not in the program`);
    const diagnostics = [
      ...program.getSyntacticDiagnostics(sourceFile),
      ...program.getSemanticDiagnostics(sourceFile),
    ];
    for (const d of diagnostics) {
      if (snippet.kind === 'check' && GIVEN_NAME_CODES.has(d.code)) continue;
      const at = d.start === undefined ? 0 : sourceFile.getLineAndCharacterOfPosition(d.start).line;
      const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      out.push({
        snippet,
        code: d.code,
        text: `${path.relative(root, snippet.file)}:${snippet.line + at}: TS${d.code} ${message}`,
      });
    }
  }
  return out;
}
