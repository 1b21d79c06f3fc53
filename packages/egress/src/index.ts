export { EgressProxy } from './egress-proxy.js';
export type {
  EgressApprovalRequest,
  EgressListen,
  EgressProxyLimits,
  EgressProxyOptions,
  EgressResolver,
  EgressSandboxListener,
  EgressSandboxOptions,
} from './egress-proxy.js';
export type {
  EgressDecisionEvent,
  EgressEvent,
  EgressEventListener,
  EgressEvents,
} from './egress-events.js';
export { blockedAddressReason, parseIpLiteral } from './egress-address.js';
export { MAX_CLIENT_HELLO_BYTES, parseClientHello } from './tls-client-hello.js';
export type { ClientHelloResult } from './tls-client-hello.js';
export { EgressProxyGateway, type EgressProxyGatewayOptions } from './egress-gateway.js';
