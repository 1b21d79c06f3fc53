/**
 * One HTTP/1.1 request of a brokering sandbox, read and forwarded by the proxy: the head is checked
 * (one `Host`, the brokered host; unambiguous framing; no upgrade), placeholders are swapped for
 * their secrets in the configured header of the configured host only, and a placeholder anywhere
 * else — another header, the request line, the body — refuses the request. The body is streamed
 * with back-pressure (one chunk in flight), de-chunked before it is scanned, so neither TCP writes
 * nor chunk framing can split a placeholder past the scan.
 */
import { readChunkLine } from './chunk-line.js';
import type { Writable } from 'node:stream';
import type { CredentialBroker } from './credential-broker.js';
import { EgressSecretUnavailableError } from './credential-broker.js';
import { parseAuthority } from './egress-admission.js';
import type { EgressContext, SandboxState } from './egress-context.js';
import { Refusal } from './egress-refusal.js';
import { PlaceholderScanner, containsPlaceholder } from './placeholder-scanner.js';
import { headerValues, type RequestHead } from './request-head.js';
import type { StreamReader } from './socket-reader.js';

/** Longest chunk-size line (size and extensions) of a chunked body. */

export interface RelayTarget {
  readonly state: SandboxState;
  readonly broker: CredentialBroker;
  readonly method: 'HTTP' | 'HTTPS';
  readonly host: string;
  readonly port: number;
}

type Framing =
  | { readonly kind: 'none' }
  | { readonly kind: 'length'; readonly length: number }
  | { readonly kind: 'chunked' };

interface Swap {
  readonly index: number;
  /** The header value split at the placeholder; joined with the secret when sent. */
  readonly parts: readonly string[];
  readonly secret: () => Promise<string>;
  readonly describe: string;
}

/** A checked request head: what to send, and how its body is framed. */
export interface RequestPlan {
  readonly headers: readonly (readonly [string, string])[];
  readonly swaps: readonly Swap[];
  readonly framing: Framing;
}

/** Headers for the proxy, never for the upstream. */
export const PROXY_HEADERS: ReadonlySet<string> = new Set([
  'proxy-connection',
  'proxy-authorization',
]);

/**
 * Checks `head` (its target as the client sent it) for a request to `target.host`. Synchronous:
 * no secret is looked at before the whole head passed.
 */
export function inspectHead(
  target: RelayTarget,
  head: RequestHead,
  drop: ReadonlySet<string> = PROXY_HEADERS,
): RequestPlan | Refusal {
  if (containsPlaceholder(head.target)) return new Refusal(403, 'placeholder-in-request-line');
  const credentials = target.broker.forHost(target.host);
  const swaps: Swap[] = [];
  for (const [index, [name, value]] of head.headers.entries()) {
    if (containsPlaceholder(name)) return new Refusal(403, 'placeholder-in-header');
    if (!containsPlaceholder(value)) continue;
    const entry = credentials.find((c) => c.header === name && value.includes(c.placeholder));
    const parts = entry ? value.split(entry.placeholder) : [value];
    // What is left besides this credential's own placeholder must hold no other one.
    if (!entry || parts.some(containsPlaceholder)) {
      return new Refusal(403, 'placeholder-in-header');
    }
    swaps.push({ index, parts, secret: entry.secret, describe: entry.describe });
  }
  // A secret never crosses the network in cleartext, whatever the policy says.
  if (swaps.length > 0 && target.method === 'HTTP') {
    return new Refusal(403, 'credential-over-cleartext');
  }
  const hosts = headerValues(head, 'host');
  const authority = hosts.length === 1 ? parseAuthority(hosts[0]!, target.port) : undefined;
  if (!authority || authority.host !== target.host || authority.port !== target.port) {
    // The upstream routes on Host: another name would be fronting through this connection.
    return new Refusal(400, 'host-mismatch');
  }
  if (headerValues(head, 'upgrade').length > 0) {
    // After a protocol switch the bytes are no longer HTTP, and no longer scanned.
    return new Refusal(403, 'upgrade-refused');
  }
  const encodings = headerValues(head, 'transfer-encoding');
  const lengths = headerValues(head, 'content-length');
  let framing: Framing = { kind: 'none' };
  if (encodings.length > 0) {
    // Anything but one plain `chunked` (and no Content-Length) is read two ways by two parsers.
    if (encodings.length > 1 || encodings[0]!.toLowerCase() !== 'chunked' || lengths.length > 0) {
      return new Refusal(400, 'bad-request');
    }
    framing = { kind: 'chunked' };
  } else if (lengths.length > 0) {
    if (!lengths.every((l) => l === lengths[0] && /^[0-9]{1,15}$/.test(l))) {
      return new Refusal(400, 'bad-request');
    }
    framing = { kind: 'length', length: Number(lengths[0]) };
  }
  const headers = head.headers.filter(([name]) => !drop.has(name));
  // A placeholder in a dropped header is not sent anywhere, so there is nothing to swap.
  const kept = swaps
    .map((s) => ({ ...s, index: headers.indexOf(head.headers[s.index]!) }))
    .filter((s) => s.index !== -1);
  return { headers, swaps: kept, framing };
}

/**
 * Sends the request of `plan` upstream: its head (`requestLine` and the headers, secrets put in
 * here, `extraHeaders` appended), then its body from `reader`. `undefined` when it was sent whole.
 */
export async function relayRequest(
  ctx: EgressContext,
  target: RelayTarget,
  reader: StreamReader,
  upstream: Writable,
  requestLine: string,
  plan: RequestPlan,
  extraHeaders: readonly (readonly [string, string])[] = [],
  onSecret: (secret: string) => void = () => {},
): Promise<Refusal | undefined> {
  let headers = plan.headers.map(([n, v]) => [n, v] as [string, string]);
  for (const swap of plan.swaps) {
    let secret: string;
    try {
      secret = await swap.secret();
    } catch (error) {
      if (!(error instanceof EgressSecretUnavailableError)) throw error;
      ctx.logger.error('egress secret unavailable; request refused', {
        sandboxId: target.state.sandboxId,
        host: target.host,
        source: swap.describe,
        error: error.message,
      });
      return new Refusal(502, 'secret-unavailable');
    }
    headers[swap.index]![1] = swap.parts.join(secret);
    onSecret(secret);
  }
  if (plan.swaps.length > 0) {
    // An echo of the secret is masked in the response; a compressed echo could not be.
    headers = headers.filter(([n]) => n !== 'accept-encoding');
    headers.push(['accept-encoding', 'identity']);
  }
  const head =
    `${requestLine}\r\n` +
    [...headers, ...extraHeaders].map(([n, v]) => `${n}: ${v}\r\n`).join('') +
    '\r\n';
  if (!(await writeWithBackpressure(upstream, Buffer.from(head, 'latin1')))) {
    return new Refusal(502, 'upstream-failed');
  }
  return streamBody(reader, upstream, plan.framing);
}

/** Writes `chunk`, waiting for `drain` when the peer's buffer is full; false once it closed. */
export async function writeWithBackpressure(upstream: Writable, chunk: Buffer): Promise<boolean> {
  if (upstream.destroyed || !upstream.writable) return false;
  if (upstream.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      upstream.off('drain', done);
      upstream.off('close', done);
      resolve();
    };
    upstream.on('drain', done);
    upstream.on('close', done);
  });
  return !upstream.destroyed;
}

async function streamBody(
  reader: StreamReader,
  upstream: Writable,
  framing: Framing,
): Promise<Refusal | undefined> {
  const scanner = new PlaceholderScanner();
  const copy = async (length: number): Promise<Refusal | undefined> => {
    let remaining = length;
    while (remaining > 0) {
      const chunk = await reader.read();
      if (chunk === null) return new Refusal(400, 'bad-request');
      const piece = chunk.subarray(0, remaining);
      reader.unshift(chunk.subarray(piece.length));
      // Scanned before it is written: the bytes that complete a placeholder never leave.
      if (scanner.push(piece)) return new Refusal(403, 'placeholder-in-body');
      if (!(await writeWithBackpressure(upstream, piece)))
        return new Refusal(502, 'upstream-failed');
      remaining -= piece.length;
    }
    return undefined;
  };
  if (framing.kind === 'none') return undefined;
  if (framing.kind === 'length') return copy(framing.length);
  for (;;) {
    const line = await readLine(reader);
    if (line instanceof Refusal) return line;
    const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(line);
    if (!size) return new Refusal(400, 'bad-request');
    const length = parseInt(size[1]!, 16);
    if (length === 0) {
      const trailer = await readLine(reader);
      if (trailer instanceof Refusal) return trailer;
      // Trailers would be headers nobody inspected; requests do not need them.
      if (trailer !== '') return new Refusal(400, 'trailers-refused');
      return (await writeWithBackpressure(upstream, Buffer.from('0\r\n\r\n')))
        ? undefined
        : new Refusal(502, 'upstream-failed');
    }
    // Extensions are dropped, not forwarded: the upstream sees only what was scanned.
    if (!(await writeWithBackpressure(upstream, Buffer.from(`${length.toString(16)}\r\n`)))) {
      return new Refusal(502, 'upstream-failed');
    }
    const copied = await copy(length);
    if (copied) return copied;
    const end = await readLine(reader);
    if (end instanceof Refusal) return end;
    if (end !== '') return new Refusal(400, 'bad-request');
    if (!(await writeWithBackpressure(upstream, Buffer.from('\r\n'))))
      return new Refusal(502, 'upstream-failed');
  }
}

/** One CRLF-terminated line (without it), bounded by `MAX_CHUNK_LINE_BYTES`; a bare LF refused. */
async function readLine(reader: StreamReader): Promise<string | Refusal> {
  const read = await readChunkLine(reader);
  if (read === 'ended' || read === 'too-long') return new Refusal(400, 'bad-request');
  const { line } = read;
  if (line.length === 0 || line[line.length - 1] !== 0x0d) return new Refusal(400, 'bad-request');
  return line.subarray(0, line.length - 1).toString('latin1');
}
