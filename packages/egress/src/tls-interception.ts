/**
 * A CONNECT tunnel of a brokering sandbox, terminated by the proxy: the client's TLS ends here
 * with a leaf of the gateway's CA for the CONNECT host (already checked against the SNI), each
 * HTTP/1.1 request is read and relayed (see `http-request-relay.ts`), and the upstream is a fresh
 * TLS connection to the admitted address, its certificate verified as any client would (system
 * roots or the CAs passed in, server name = the host). A certificate that fails verification ends
 * the tunnel: the proxy never forwards to an upstream it could not authenticate.
 *
 * Only HTTP/1.1 is offered to the client (ALPN `http/1.1`): HTTP/2 frames are not parsed here.
 * Responses are read back (`http-response-relay.ts`) so a secret echoed by the upstream is masked.
 */
import { isIP, type Socket } from 'node:net';
import { TLSSocket, connect as tlsConnect } from 'node:tls';
import type { Admitted, EgressContext, SandboxState } from './egress-context.js';
import { Refusal, endWithRefusal } from './egress-refusal.js';
import { inspectHead, relayRequest, type RelayTarget } from './http-request-relay.js';
import { relayResponses } from './http-response-relay.js';
import { parseRequestHead } from './request-head.js';
import { SecretMasker } from './response-secret-mask.js';
import { StreamReader } from './socket-reader.js';

export async function interceptTunnel(
  ctx: EgressContext,
  state: SandboxState,
  socket: Socket,
  host: string,
  port: number,
  admitted: Admitted,
  hello: Buffer,
): Promise<void> {
  const broker = state.broker!;
  const ca = ctx.certificateAuthority!;
  const deny = (reason: string) => ctx.decide(state, 'CONNECT', host, port, 'deny', reason);
  let secureContext;
  try {
    secureContext = await ca.secureContextFor(host);
  } catch (error) {
    ctx.logger.error('egress leaf certificate failed', { sandboxId: state.sandboxId, host, error });
    deny('certificate-failed');
    socket.destroy();
    return;
  }
  // The hello was read off the socket for the SNI check; the TLS socket reads it back first.
  socket.unshift(hello);
  const client = new TLSSocket(socket, {
    isServer: true,
    secureContext,
    ALPNProtocols: ['http/1.1'],
  });
  client.on('error', (error) =>
    ctx.logger.debug('egress intercepted client error', { sandboxId: state.sandboxId, error }),
  );
  const handshake = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ctx.limits.headerTimeoutMs);
    timer.unref();
    client.once('secure', () => {
      clearTimeout(timer);
      resolve(true);
    });
    client.once('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!handshake) {
    deny('client-tls-failed');
    client.destroy();
    return;
  }
  const upstream = tlsConnect({
    host: admitted.address,
    port,
    servername: isIP(host) ? undefined : host,
    ...(ctx.upstreamCa ? { ca: [...ctx.upstreamCa] } : {}),
    ALPNProtocols: ['http/1.1'],
  });
  upstream.setNoDelay(true);
  const connected = await new Promise<Error | undefined>((resolve) => {
    upstream.once('secureConnect', () => resolve(undefined));
    upstream.once('error', resolve);
  });
  upstream.on('error', (error) =>
    ctx.logger.debug('egress upstream error', { sandboxId: state.sandboxId, host, error }),
  );
  if (connected) {
    ctx.logger.warn('egress upstream TLS failed; tunnel refused', {
      sandboxId: state.sandboxId,
      host,
      error: connected.message,
    });
    deny('upstream-tls-failed');
    upstream.destroy();
    endWithRefusal(client, new Refusal(502, 'upstream-tls-failed'));
    return;
  }
  ctx.decide(state, 'CONNECT', host, port, 'allow', admitted.reason);
  const idle = ctx.limits.idleTimeoutMs;
  upstream.setTimeout(idle, () => upstream.destroy());
  client.setTimeout(idle, () => client.destroy());
  client.once('close', () => upstream.destroy());
  // Responses are read, not piped: a secret the upstream echoes is masked on the way back.
  const masker = new SecretMasker();
  const methods: string[] = [];
  let refused = false;
  relayResponses({
    upstream: new StreamReader(upstream),
    client,
    masker,
    nextMethod: () => methods.shift(),
  }).catch((error: unknown) => {
    if (refused) return;
    ctx.logger.debug('egress intercepted response ended the connection', {
      sandboxId: state.sandboxId,
      host,
      error,
    });
    upstream.destroy();
    client.destroy();
  });

  const target: RelayTarget = { state, broker, method: 'HTTPS', host, port };
  const reader = new StreamReader(client);
  const refuse = (refusal: Refusal) => {
    refused = true;
    ctx.decide(state, 'HTTPS', host, port, 'deny', refusal.reason);
    if (refusal.reason.startsWith('placeholder-')) {
      ctx.logger.warn('egress placeholder refused', {
        sandboxId: state.sandboxId,
        threadId: state.threadId,
        host,
        port,
        reason: refusal.reason,
      });
    }
    // Whatever the upstream still sends belongs to no request the client may see completed.
    upstream.destroy();
    endWithRefusal(client, refusal);
  };
  for (;;) {
    const raw = await reader.readHead(ctx.limits.maxHeaderBytes);
    if (raw === 'end') {
      upstream.end();
      return;
    }
    if (raw instanceof Refusal) return refuse(raw);
    const head = parseRequestHead(raw.toString('latin1'));
    if (!head) return refuse(new Refusal(400, 'bad-request'));
    const originForm =
      head.target.startsWith('/') || (head.method === 'OPTIONS' && head.target === '*');
    if (!originForm) return refuse(new Refusal(400, 'bad-request'));
    const plan = inspectHead(target, head);
    if (plan instanceof Refusal) return refuse(plan);
    const line = `${head.method} ${head.target} ${head.version}`;
    methods.push(head.method);
    const failed = await relayRequest(ctx, target, reader, upstream, line, plan, [], (secret) =>
      masker.add(secret),
    );
    if (failed) return refuse(failed);
    ctx.decide(
      state,
      'HTTPS',
      host,
      port,
      'allow',
      plan.swaps.length > 0 ? 'credential-swapped' : admitted.reason,
    );
  }
}
