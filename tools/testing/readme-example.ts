import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The marker after which a README's runnable example block starts. */
export const EXAMPLE_MARKER = '<!-- example: runs in CI -->';

/**
 * The first fenced `ts` block after the `nth` (from 0) `EXAMPLE_MARKER` in a README. Fails loudly
 * when there is none, so a README that loses its example fails its test instead of testing nothing.
 */
export async function readmeExample(
  readmePath: string,
  marker: string = EXAMPLE_MARKER,
  nth = 0,
): Promise<string> {
  const text = await readFile(readmePath, 'utf8');
  let at = text.indexOf(marker);
  for (let i = 0; i < nth && at >= 0; i++) at = text.indexOf(marker, at + marker.length);
  if (at < 0) throw new Error(`${readmePath}: no '${marker}' marker number ${nth + 1}`);
  const block = /```ts\n([\s\S]*?)```/.exec(text.slice(at));
  if (!block?.[1]) throw new Error(`${readmePath}: no \`\`\`ts block after the example marker`);
  return block[1];
}

export interface ExampleRun {
  /** Lines that replace, in order, each line ending in `// your model`. */
  replacements?: readonly string[];
  /** Published as `globalThis.sbxExampleModel` while the example runs. */
  model?: unknown;
  /** `SBX_HOME` for the run, kept afterwards. Default: a fresh directory, removed afterwards. */
  home?: string;
}

export interface ReadmeExampleRun extends ExampleRun {
  /** Which example: the marker before its block. Default `EXAMPLE_MARKER`. */
  marker?: string;
  /** Which occurrence of the marker, from 0. Default 0. */
  nth?: number;
}

/**
 * Runs a README's example as a module placed beside the README (so its imports resolve as the
 * package's own would), with `SBX_HOME` pointing at a fresh directory so the local provider's data
 * goes nowhere else. A README names a real model on its `// your model` lines; the test replaces
 * them with a scripted one read from `globalThis.sbxExampleModel`. Returns the number of lines of
 * the example as the README shows it.
 */
export async function runReadmeExample(
  readmePath: string,
  run: ReadmeExampleRun = {},
): Promise<number> {
  const shown = await readmeExample(readmePath, run.marker, run.nth);
  await runExampleCode(readmePath, shown, run);
  return shown.trimEnd().split('\n').length;
}

/**
 * Runs `code`, a documentation block of `docPath`, as a module beside that file (see
 * `runReadmeExample`).
 */
export async function runExampleCode(
  docPath: string,
  code: string,
  run: ExampleRun = {},
): Promise<void> {
  const pending = [...(run.replacements ?? [])];
  const source = code
    .split('\n')
    .map((line) => {
      if (!line.trimEnd().endsWith('// your model')) return line;
      const next = pending.shift();
      if (next === undefined) {
        throw new Error(`${docPath}: more '// your model' lines than replacements`);
      }
      return next;
    })
    .join('\n');
  if (pending.length > 0) {
    throw new Error(`${docPath}: fewer '// your model' lines than replacements`);
  }
  const home = run.home ?? (await mkdtemp(path.join(tmpdir(), 'sbx-readme-example-')));
  const file = path.join(
    path.dirname(docPath),
    `.readme-example-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.mts`,
  );
  const global = globalThis as { sbxExampleModel?: unknown };
  const previousHome = process.env.SBX_HOME;
  process.env.SBX_HOME = home;
  global.sbxExampleModel = run.model;
  await writeFile(file, source);
  try {
    await import(pathToFileURL(file).href);
  } finally {
    delete global.sbxExampleModel;
    if (previousHome === undefined) delete process.env.SBX_HOME;
    else process.env.SBX_HOME = previousHome;
    await rm(file, { force: true });
    if (run.home === undefined) await rm(home, { recursive: true, force: true });
  }
}

/** The replacement line that reads the scripted model, e.g. `model: ${SCRIPTED_MODEL},`. */
export const SCRIPTED_MODEL = '(globalThis as { sbxExampleModel?: never }).sbxExampleModel!';
