import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exitCodeOf, joinOutputLines, missingExitDetail, stdoutOf } from './command-output.js';
import { splitExecdLines } from './testing/execd-output.js';

const messages = (texts: string[]) => texts.map((text) => ({ text }));

describe('joinOutputLines (rebuilding text from execd line events)', () => {
  it('gives every line back its newline and keeps empty lines', () => {
    expect(joinOutputLines(messages(['a', '\n', 'b']))).toBe('a\n\nb\n');
    expect(joinOutputLines([])).toBe('');
  });

  it('round-trips any newline-terminated text through execd line splitting', () => {
    const line = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\t', 'é', '\0', ':') });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const text = lines.map((l) => `${l}\n`).join('');
        expect(joinOutputLines(messages(splitExecdLines(text)))).toBe(text);
      }),
    );
  });

  it('reads CRLF and a missing final newline as plain newline-terminated lines', () => {
    expect(joinOutputLines(messages(splitExecdLines('a\r\nb\r\n')))).toBe('a\nb\n');
    expect(joinOutputLines(messages(splitExecdLines('no newline')))).toBe('no newline\n');
  });
});

describe('exit codes and stdout of an execution', () => {
  const base = { logs: { stdout: [], stderr: [] }, result: [] };
  it('infers like the SDK when the field is absent', () => {
    expect(exitCodeOf({ ...base, error: { name: 'CommandExecError', value: '9' } })).toBe(9);
    expect(
      exitCodeOf({ ...base, error: { name: 'CommandExecError', value: 'fork failed' } }),
    ).toBeNull();
    expect(exitCodeOf({ ...base, complete: {} })).toBe(0);
    expect(exitCodeOf(base)).toBeNull();
    expect(exitCodeOf({ ...base, exitCode: null, complete: {} })).toBeNull();
  });

  it('describes what is known about a run without an exit code', () => {
    expect(missingExitDetail(base)).toBe('no completion or error event');
    expect(
      missingExitDetail({ ...base, error: { name: 'CommandExecError', value: 'fork failed' } }),
    ).toBe('CommandExecError: fork failed');
  });

  it('§8.8.172 stdout lines come first, then result texts', () => {
    expect(
      stdoutOf({
        logs: { stdout: messages(['a', 'b']), stderr: [] },
        result: [{ text: '42' }, {}],
      }),
    ).toBe('a\nb\n42\n');
  });
});
