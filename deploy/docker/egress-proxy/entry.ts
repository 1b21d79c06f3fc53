// The in-cluster egress proxy: one @sbx/egress listener that every sandbox Pod of the namespace
// reaches (the per-sandbox NetworkPolicy lets them reach nothing else), enforcing one network
// policy for all of them. Configured from the environment:
//   SBX_EGRESS_POLICY       the policy as JSON (`{"mode":"allowlist","allow":["pypi.org"]}`); required
//   SBX_EGRESS_LISTEN_HOST  default 0.0.0.0
//   SBX_EGRESS_LISTEN_PORT  default 3128 (0: any free port, logged)
// Credentials are refused: brokering needs a CA the sandboxes trust, which this image does not set up.
import { errorMessage, parseNetworkPolicy } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { EgressProxy } from '@sbx/egress';

const line =
  (level: string) =>
  (msg: string, fields: Record<string, unknown> = {}): void => {
    process.stderr.write(`${JSON.stringify({ level, msg, ...fields })}\n`);
  };
const logger: Logger = {
  debug: () => {},
  info: line('info'),
  warn: line('warn'),
  error: line('error'),
};

function fail(message: string): never {
  logger.error(message);
  process.exit(1);
}

const raw = process.env.SBX_EGRESS_POLICY;
if (raw === undefined || raw.trim() === '') fail('SBX_EGRESS_POLICY is not set');
let policy;
try {
  policy = parseNetworkPolicy(JSON.parse(raw), 'SBX_EGRESS_POLICY');
} catch (err) {
  fail(`SBX_EGRESS_POLICY: ${errorMessage(err)}`);
}
if (policy.credentials.length > 0)
  fail('SBX_EGRESS_POLICY: credentials are not brokered by the in-cluster proxy');
const portText = process.env.SBX_EGRESS_LISTEN_PORT ?? '3128';
const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
if (!(port >= 0 && port <= 65_535))
  fail(`SBX_EGRESS_LISTEN_PORT must be 0..65535, got '${portText}'`);
const host = process.env.SBX_EGRESS_LISTEN_HOST ?? '0.0.0.0';

const proxy = new EgressProxy({ logger });
proxy.onEvent((event) => logger.info('egress', { ...event }));
const listener = await proxy.openSandbox({
  sandboxId: 'namespace',
  policy,
  listen: { host, port },
});
logger.info('egress proxy listening', { address: listener.address, mode: policy.mode });

const stop = (): void => {
  void listener.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
