/**
 * The responses of an intercepted connection, read off the upstream one by one so that a brokered
 * secret echoed back (in a header or the body) is masked before the sandbox sees it. Framing is
 * read as the client would read it — 1xx interim heads, HEAD/204/304 without a body, `chunked`
 * (de-chunked to be masked, re-chunked on the way out), `Content-Length`, or to the end of the
 * connection — so masking sees the body's bytes, never a chunk-size line in between.
 */
import { readChunkLine } from './chunk-line.js';
import type { Writable } from 'node:stream';
import { writeWithBackpressure } from './http-request-relay.js';
import type { SecretMasker } from './response-secret-mask.js';
import type { StreamReader } from './socket-reader.js';

/** Largest response head read; an upstream sending more ends the connection. */
export const MAX_RESPONSE_HEAD_BYTES = 64 * 1024;

export interface ResponseRelayOptions {
  readonly upstream: StreamReader;
  readonly client: Writable;
  readonly masker: SecretMasker;
  /** The method of the oldest request not yet answered (HEAD has no body). */
  readonly nextMethod: () => string | undefined;
}

class ResponseError extends Error {}

async function readLine(reader: StreamReader): Promise<string> {
  const read = await readChunkLine(reader);
  if (read === 'ended') throw new ResponseError('upstream ended mid-body');
  if (read === 'too-long') throw new ResponseError('chunk line too long');
  return read.line.toString('latin1').replace(/\r$/, '');
}

/**
 * Relays responses until the upstream ends (then ends the client). Throws on a response it cannot
 * frame; the caller closes both sides then, so nothing unmasked is sent in doubt.
 */
export async function relayResponses(options: ResponseRelayOptions): Promise<void> {
  const { upstream, client, masker } = options;
  const send = async (data: Buffer) => {
    if (data.length > 0 && !(await writeWithBackpressure(client, data))) {
      throw new ResponseError('client closed');
    }
  };
  const copy = async (length: number | undefined, chunked: boolean) => {
    let remaining = length ?? Infinity;
    while (remaining > 0) {
      const chunk = await upstream.read();
      if (chunk === null) {
        if (length === undefined) return;
        throw new ResponseError('upstream ended mid-body');
      }
      const piece = chunk.subarray(0, Math.min(chunk.length, remaining));
      upstream.unshift(chunk.subarray(piece.length));
      remaining -= piece.length;
      const out = masker.push(piece);
      if (out.length === 0) continue;
      await send(
        chunked ? Buffer.concat([Buffer.from(`${out.length.toString(16)}\r\n`), out, CRLF]) : out,
      );
    }
  };
  const flush = async (chunked: boolean) => {
    const held = masker.flush();
    if (held.length === 0) return;
    await send(
      chunked ? Buffer.concat([Buffer.from(`${held.length.toString(16)}\r\n`), held, CRLF]) : held,
    );
  };
  for (;;) {
    const raw = await upstream.readHead(MAX_RESPONSE_HEAD_BYTES);
    if (raw === 'end') {
      client.end();
      return;
    }
    if (!Buffer.isBuffer(raw)) throw new ResponseError(`response head: ${raw.reason}`);
    const text = raw.toString('latin1');
    const status = /^HTTP\/1\.[01] ([0-9]{3})(?: |$)/.exec(text);
    if (!status) throw new ResponseError('not an HTTP/1.1 response');
    const code = Number(status[1]);
    const headers = text
      .split('\r\n')
      .slice(1)
      .map((line): [string, string] => {
        const colon = line.indexOf(':');
        return colon <= 0
          ? ['', '']
          : [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
      });
    await send(Buffer.concat([masker.maskAll(Buffer.from(raw)), CRLF, CRLF]));
    if (code >= 100 && code < 200 && code !== 101) continue;
    const method = options.nextMethod();
    if (code === 101) throw new ResponseError('protocol switch');
    if (method === 'HEAD' || code === 204 || code === 304) continue;
    const encoding = headers.filter(([n]) => n === 'transfer-encoding').map(([, v]) => v);
    const lengths = headers.filter(([n]) => n === 'content-length').map(([, v]) => v);
    if (encoding.length > 0) {
      if (encoding.join(',').toLowerCase().replace(/\s/g, '') !== 'chunked') {
        throw new ResponseError('transfer-encoding other than chunked');
      }
      for (;;) {
        const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(await readLine(upstream));
        if (!size) throw new ResponseError('bad chunk size');
        const length = parseInt(size[1]!, 16);
        if (length === 0) break;
        await copy(length, true);
        if ((await readLine(upstream)) !== '') throw new ResponseError('bad chunk end');
      }
      await flush(true);
      const trailers: Buffer[] = [];
      for (let line = await readLine(upstream); line !== ''; line = await readLine(upstream)) {
        trailers.push(masker.maskAll(Buffer.from(`${line}\r\n`, 'latin1')));
      }
      await send(Buffer.concat([Buffer.from('0\r\n'), ...trailers, CRLF]));
    } else if (lengths.length > 0) {
      if (!lengths.every((l) => l === lengths[0] && /^[0-9]{1,15}$/.test(l))) {
        throw new ResponseError('bad content-length');
      }
      await copy(Number(lengths[0]), false);
      await flush(false);
    } else {
      // Delimited by the end of the connection.
      await copy(undefined, false);
      await flush(false);
      client.end();
      return;
    }
  }
}

const CRLF = Buffer.from('\r\n');
