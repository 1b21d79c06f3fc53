// What both halves of the process contract use: a collector of streamed output a test can wait
// on, and the commands that check a cwd holds across every shell operator.

/** Resolves when `text` has appeared in what `listen` collects; the command waits on the test. */
export function collector(): {
  listener: (chunk: string) => void;
  chunks: { at: number; text: string }[];
  until: (text: string) => Promise<void>;
} {
  const chunks: { at: number; text: string }[] = [];
  const waiters: { text: string; resolve: () => void }[] = [];
  const all = () => chunks.map((c) => c.text).join('');
  return {
    chunks,
    listener: (text) => {
      chunks.push({ at: Date.now(), text });
      const seen = all();
      for (const w of waiters.splice(0)) {
        if (seen.includes(w.text)) w.resolve();
        else waiters.push(w);
      }
    },
    until: (text) =>
      all().includes(text)
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ text, resolve })),
  };
}

/**
 * Commands whose parts are joined by every shell operator that could split a `cd <dir> && `
 * prefix from what follows it (`(cd <dir> && a) & b` runs `b` elsewhere). Each writes `file` and
 * prints `pwd` once, after the operator; a sandbox passes when both happen in the given cwd.
 */
export const CWD_SHAPES: readonly { name: string; make: (file: string) => string }[] = [
  { name: 'a & b; c', make: (file) => `true & echo x > ${file}; pwd` },
  { name: 'a & b & wait', make: (file) => `echo x > ${file} & pwd & wait` },
  { name: 'x || y', make: (file) => `false || { pwd; echo x > ${file}; }` },
  { name: 'a; b', make: (file) => `true; pwd; echo x > ${file}` },
  { name: 'a newline b', make: (file) => `true &\npwd\necho x > ${file}` },
  { name: 'a subshell, then b', make: (file) => `(cd -P . && true) & pwd; echo x > ${file}; wait` },
];
