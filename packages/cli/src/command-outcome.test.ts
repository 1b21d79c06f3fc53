import { describe, expect, it } from 'vitest';
import { assembleCommandOutput } from '@sbx/local';
import { parseCommandOutput } from './command-outcome.js';

describe('parseCommandOutput', () => {
  const assemble = (stdout: string, stderr: string, exitCode: number, timedOut = false) =>
    assembleCommandOutput({ stdout, stderr, exitCode, timedOut, timeoutSeconds: 2 });

  it('reads a zero status from output without an exit line', () => {
    expect(parseCommandOutput(assemble('hello\n', '', 0))).toEqual({
      output: 'hello\n',
      exitCode: 0,
      timedOut: false,
      notice: undefined,
    });
  });

  it('takes the final Exit Code line off and returns it as the status', () => {
    const parsed = parseCommandOutput(assemble('partial\n', 'boom\n', 7));
    expect(parsed.exitCode).toBe(7);
    expect(parsed.output).toBe('partial\n\nStd Error:\nboom\n');
  });

  it('reports a non-zero status of a command that printed nothing', () => {
    expect(parseCommandOutput(assemble('', '', 3))).toMatchObject({ output: '', exitCode: 3 });
  });

  it('turns the (no output) placeholder into empty output', () => {
    expect(parseCommandOutput(assemble('', '', 0))).toMatchObject({ output: '', exitCode: 0 });
  });

  it('maps a timeout to 124 and keeps the notice apart from the output', () => {
    const parsed = parseCommandOutput(assemble('started\n', '', 0, true));
    expect(parsed).toMatchObject({ output: 'started\n', exitCode: 124, timedOut: true });
    expect(parsed.notice).toMatch(/^Command timed out after 2 seconds/);
  });

  it('keeps a status a process can exit with, and maps others to 1', () => {
    expect(parseCommandOutput('x\nExit Code: 143').exitCode).toBe(143);
    expect(parseCommandOutput('x\nExit Code: -9').exitCode).toBe(1);
    expect(parseCommandOutput('x\nExit Code: 256').exitCode).toBe(1);
  });

  it('ignores an Exit Code line that is not the last line', () => {
    expect(parseCommandOutput('Exit Code: 4\nmore\n')).toMatchObject({ exitCode: 0 });
  });
});
