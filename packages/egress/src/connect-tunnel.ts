/**
 * HTTP CONNECT, for TLS only: the target is decided and admitted, then the first bytes of the
 * tunnel must be a ClientHello whose SNI is the CONNECT host (no domain fronting). A brokering
 * sandbox's tunnel is then intercepted (`tls-interception.ts`); any other is joined blind.
 */
import type { Socket } from 'node:net';
import { parseIpLiteral } from './egress-address.js';
import { parseAuthority } from './egress-admission.js';
import type { EgressContext, SandboxState } from './egress-context.js';
import { Refusal, endWithRefusal } from './egress-refusal.js';
import { containsPlaceholder } from './placeholder-scanner.js';
import type { RequestHead } from './request-head.js';
import { readUntil } from './socket-reader.js';
import { MAX_CLIENT_HELLO_BYTES, parseClientHello } from './tls-client-hello.js';
import { interceptTunnel } from './tls-interception.js';
import { pipeUpstream } from './upstream-pipe.js';

export async function handleConnect(
  ctx: EgressContext,
  state: SandboxState,
  socket: Socket,
  head: RequestHead,
  rest: Buffer,
): Promise<void> {
  const refuse = (host: string, port: number, refusal: Refusal, respond = true) => {
    ctx.decide(state, 'CONNECT', host, port, 'deny', refusal.reason);
    endWithRefusal(socket, refusal, respond);
  };
  const target = parseAuthority(head.target, undefined);
  if (!target) return refuse('', 0, new Refusal(400, 'bad-request'));
  const { host, port } = target;
  if (
    state.broker &&
    (containsPlaceholder(head.target) || head.headers.some(([, v]) => containsPlaceholder(v)))
  ) {
    // Nothing in a CONNECT head is ever swapped: a placeholder here is sent to be seen elsewhere.
    ctx.logger.warn('egress placeholder refused', {
      sandboxId: state.sandboxId,
      threadId: state.threadId,
      host,
      port,
      reason: 'placeholder-in-connect',
    });
    return refuse(host, port, new Refusal(403, 'placeholder-in-connect'));
  }
  const admitted = await ctx.admit(state, host, port);
  if (admitted instanceof Refusal) return refuse(host, port, admitted);
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  // The tunnel carries TLS whose server name is the CONNECT host: a hello naming another host
  // (domain fronting) would reach it through an address approved for this one.
  const hello = await readUntil(
    socket,
    rest,
    MAX_CLIENT_HELLO_BYTES,
    ctx.limits.headerTimeoutMs,
    (data) => {
      const parsed = parseClientHello(data);
      if (parsed.kind === 'incomplete') return 'more';
      if (parsed.kind === 'invalid') return new Refusal(400, parsed.reason);
      const isLiteral = parseIpLiteral(host) !== undefined;
      if (parsed.serverName === undefined)
        return isLiteral ? data.length : new Refusal(403, 'no-sni');
      const sni = parsed.serverName.toLowerCase().replace(/\.$/, '');
      return sni === host ? data.length : new Refusal(403, 'sni-mismatch');
    },
  );
  if (hello instanceof Refusal) return refuse(host, port, hello, false);
  const broker = state.broker;
  if (broker && (ctx.interceptAllHosts || broker.forHost(host).length > 0)) {
    return interceptTunnel(ctx, state, socket, host, port, admitted, hello.data);
  }
  pipeUpstream(ctx, state, socket, 'CONNECT', host, port, admitted, hello.data);
}
