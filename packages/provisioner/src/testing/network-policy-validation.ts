// What the API server's validation refuses in a `networking.k8s.io/v1` NetworkPolicy (its
// ValidateNetworkPolicy): the name, labels, the pod selector, policyTypes, and each egress
// rule's ports and peers, with the server's field paths and messages.

import { isIP } from 'node:net';
import { dns1123SubdomainProblem, invalid, labelCauses } from '../kube-rules.js';
import type { KubeCause } from '../kube-rules.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});
const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const POLICY_TYPES = ['Egress', 'Ingress'];
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const SELECTOR_OPERATORS = ['DoesNotExist', 'Exists', 'In', 'NotIn'];

const notSupported = (field: string, value: unknown, supported: readonly string[]): KubeCause => ({
  reason: 'FieldValueNotSupported',
  field,
  message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
});

/** An IANA service name, as a named port must be (`IsValidPortName`). */
function portNameProblem(name: string): string | undefined {
  if (name.length > 15) return 'must be no more than 15 characters';
  if (!/^[-a-z0-9]+$/.test(name))
    return 'must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)';
  if (name.includes('--')) return 'must not contain consecutive hyphens';
  if (!/[a-z]/.test(name)) return 'must contain at least one letter (a-z)';
  if (name.startsWith('-') || name.endsWith('-')) return 'must not begin or end with a hyphen';
  return undefined;
}

const PORT_RANGE = 'must be between 1 and 65535, inclusive';

function selectorCauses(selector: unknown, field: string): KubeCause[] {
  const s = asObj(selector);
  const causes = labelCauses(s.matchLabels, `${field}.matchLabels`);
  asList(s.matchExpressions).forEach((e, i) => {
    const expr = asObj(e);
    const at = `${field}.matchExpressions[${i}]`;
    const op = String(expr.operator ?? '');
    if (!SELECTOR_OPERATORS.includes(op))
      causes.push(notSupported(`${at}.operator`, op, SELECTOR_OPERATORS));
    const values = asList(expr.values);
    if ((op === 'In' || op === 'NotIn') && values.length === 0)
      causes.push({
        reason: 'FieldValueRequired',
        field: `${at}.values`,
        message: "Required value: must be specified when `operator` is 'In' or 'NotIn'",
      });
    if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0)
      causes.push({
        reason: 'FieldValueForbidden',
        field: `${at}.values`,
        message: "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
      });
  });
  return causes;
}

function portCauses(port: unknown, field: string): KubeCause[] {
  const p = asObj(port);
  const causes: KubeCause[] = [];
  if (p.protocol !== undefined && !PROTOCOLS.includes(String(p.protocol)))
    causes.push(notSupported(`${field}.protocol`, p.protocol, PROTOCOLS));
  if (p.port === undefined) {
    if (p.endPort !== undefined)
      causes.push({
        reason: 'FieldValueRequired',
        field: `${field}.port`,
        message: 'Required value: must be specified when endPort is specified',
      });
    return causes;
  }
  if (typeof p.port === 'number') {
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65_535)
      causes.push(invalid(`${field}.port`, String(p.port), PORT_RANGE));
    if (p.endPort !== undefined) {
      const end = p.endPort;
      if (typeof end !== 'number' || !Number.isInteger(end) || end < 1 || end > 65_535)
        causes.push(invalid(`${field}.endPort`, String(end), PORT_RANGE));
      else if (end < p.port)
        causes.push(
          invalid(`${field}.endPort`, String(end), 'must be greater than or equal to `port`'),
        );
    }
    return causes;
  }
  if (typeof p.port !== 'string') {
    causes.push(invalid(`${field}.port`, String(p.port), 'must be a number or a port name'));
    return causes;
  }
  const problem = portNameProblem(p.port);
  if (problem) causes.push(invalid(`${field}.port`, p.port, problem));
  if (p.endPort !== undefined)
    causes.push(
      invalid(
        `${field}.endPort`,
        String(p.endPort),
        'may not be specified when `port` is non-numeric',
      ),
    );
  return causes;
}

function cidrProblem(cidr: string): string | undefined {
  const [ip, bits, extra] = cidr.split('/');
  const family = isIP(ip ?? '');
  const max = family === 4 ? 32 : 128;
  const n = bits !== undefined && /^[0-9]{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (family === 0 || extra !== undefined || !(n >= 0 && n <= max))
    return 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';
  return undefined;
}

function peerCauses(peer: unknown, field: string): KubeCause[] {
  const p = asObj(peer);
  const causes: KubeCause[] = [];
  let peers = 0;
  if (p.podSelector !== undefined && p.podSelector !== null) {
    peers++;
    causes.push(...selectorCauses(p.podSelector, `${field}.podSelector`));
  }
  if (p.namespaceSelector !== undefined && p.namespaceSelector !== null) {
    peers++;
    causes.push(...selectorCauses(p.namespaceSelector, `${field}.namespaceSelector`));
  }
  if (p.ipBlock !== undefined && p.ipBlock !== null) {
    peers++;
    const block = asObj(p.ipBlock);
    const cidr = String(block.cidr ?? '');
    if (cidr === '')
      causes.push({
        reason: 'FieldValueRequired',
        field: `${field}.ipBlock.cidr`,
        message: 'Required value',
      });
    else {
      const problem = cidrProblem(cidr);
      if (problem) causes.push(invalid(`${field}.ipBlock.cidr`, cidr, problem));
    }
  }
  if (peers === 0)
    causes.push({
      reason: 'FieldValueRequired',
      field,
      message: 'Required value: must specify a peer',
    });
  else if (peers > 1 && p.ipBlock !== undefined && p.ipBlock !== null)
    causes.push({
      reason: 'FieldValueForbidden',
      field,
      message: 'Forbidden: may not specify both ipBlock and another peer',
    });
  return causes;
}

/** The causes of a NetworkPolicy's refusal. */
export function networkPolicyCauses(body: Obj): KubeCause[] {
  const meta = asObj(body.metadata);
  const name = typeof meta.name === 'string' ? meta.name : '';
  const causes: KubeCause[] = [];
  if (name === '')
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value',
    });
  else {
    const p = dns1123SubdomainProblem(name);
    if (p) causes.push(invalid('metadata.name', name, p));
  }
  causes.push(...labelCauses(meta.labels));
  const spec = asObj(body.spec);
  causes.push(...selectorCauses(spec.podSelector, 'spec.podSelector'));
  const types = asList(spec.policyTypes);
  if (types.length > POLICY_TYPES.length)
    causes.push({
      reason: 'FieldValueForbidden',
      field: 'spec.policyTypes',
      message: `Forbidden: may not specify more than two policyTypes`,
    });
  types.forEach((t, i) => {
    if (!POLICY_TYPES.includes(String(t)))
      causes.push(notSupported(`spec.policyTypes[${i}]`, t, POLICY_TYPES));
  });
  asList(spec.egress).forEach((rule, i) => {
    const r = asObj(rule);
    asList(r.ports).forEach((port, j) =>
      causes.push(...portCauses(port, `spec.egress[${i}].ports[${j}]`)),
    );
    asList(r.to).forEach((peer, j) =>
      causes.push(...peerCauses(peer, `spec.egress[${i}].to[${j}]`)),
    );
  });
  asList(spec.ingress).forEach((rule, i) => {
    const r = asObj(rule);
    asList(r.ports).forEach((port, j) =>
      causes.push(...portCauses(port, `spec.ingress[${i}].ports[${j}]`)),
    );
    asList(r.from).forEach((peer, j) =>
      causes.push(...peerCauses(peer, `spec.ingress[${i}].from[${j}]`)),
    );
  });
  return causes;
}
