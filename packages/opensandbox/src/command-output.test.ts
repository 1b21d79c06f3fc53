import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assembleCommandOutput,
  exitCodeOf,
  joinOutputLines,
  missingExitDetail,
  stdoutOf,
  timeoutNotice,
} from './command-output.js';
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

describe('assembleCommandOutput (core output contract)', () => {
  it('matches the contract texts', () => {
    expect(assembleCommandOutput({ stdout: '', stderr: '', exitCode: 3 })).toBe('\nExit Code: 3');
    expect(assembleCommandOutput({ stdout: '', stderr: '', exitCode: 0 })).toBe('(no output)');
    expect(assembleCommandOutput({ stdout: '', stderr: 'err\n', exitCode: 0 })).toBe('err\n');
    expect(assembleCommandOutput({ stdout: 'out\n', stderr: 'err\n', exitCode: 2 })).toBe(
      'out\n\nStd Error:\nerr\n\nExit Code: 2',
    );
  });

  it('a timeout shows the notice and never an exit code', () => {
    const out = assembleCommandOutput({
      stdout: 'x\n',
      stderr: '',
      exitCode: -1,
      timedOutAfterSeconds: 1,
    });
    expect(out).toBe(`x\n\n${timeoutNotice(1)}`);
    expect(timeoutNotice(1)).toContain('after 1 second and');
    expect(timeoutNotice(2.5)).toContain('after 2.5 seconds and');
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
