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
  EgressMethod,
} from './egress-events.js';
export {
  EgressCertificateAuthority,
  MAX_CA_PEM_BYTES,
  type EgressCaPem,
  type EgressCertificateAuthorityOptions,
} from './egress-certificate-authority.js';
export {
  EgressSecretUnavailableError,
  type EgressBrokeredEnv,
  type EgressBrokeredSecret,
  type EgressPlaceholder,
  type EgressSecretProvider,
} from './credential-broker.js';
export { PLACEHOLDER_PREFIX } from './placeholder-scanner.js';
export { blockedAddressReason, parseIpLiteral } from './egress-address.js';
export { MAX_CLIENT_HELLO_BYTES, parseClientHello } from './tls-client-hello.js';
export type { ClientHelloResult } from './tls-client-hello.js';
export { EgressProxyGateway, type EgressProxyGatewayOptions } from './egress-gateway.js';
