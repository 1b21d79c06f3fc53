import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress, withProgress } from './progress.js';

function stream(isTTY: boolean): Writable & { isTTY: boolean; text: string } {
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.text += chunk.toString();
      done();
    },
  }) as Writable & { isTTY: boolean; text: string };
  out.isTTY = isTTY;
  out.text = '';
  return out;
}

describe('progress', () => {
  it('draws a labelled spinner on a terminal and erases it when done', async () => {
    const tty = stream(true);
    const result = await withProgress(createProgress(tty), 'acquiring', async () => {
      expect(tty.text).toBe('\r\x1b[K⠋ acquiring');
      return 42;
    });
    expect(result).toBe(42);
    expect(tty.text.endsWith('\r\x1b[K')).toBe(true);
  });

  it('erases the spinner when the work fails', async () => {
    const tty = stream(true);
    await expect(
      withProgress(createProgress(tty), 'x', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(tty.text.endsWith('\r\x1b[K')).toBe(true);
  });

  it('writes nothing off a terminal, or when disabled (--json)', async () => {
    const pipe = stream(false);
    await withProgress(createProgress(pipe), 'x', async () => {});
    expect(pipe.text).toBe('');
    const tty = stream(true);
    await withProgress(createProgress(tty, false), 'x', async () => {});
    expect(tty.text).toBe('');
  });
});
