// What the API server refuses in a kubernetes-sigs/agent-sandbox `Sandbox`, from the project's
// CRD schema (agents.x-k8s.io_sandboxes.yaml, v1alpha1 and v1beta1): `spec` and
// `spec.podTemplate.spec` required, the enums and bounds of the lifecycle fields, a date-time
// `shutdownTime`, and the pod template's spec validated as a Pod's (the server validates the Pod
// the controller makes from it; refusing here surfaces it at the create, as a test wants).
// Fields the schema does not know are refused, as with `fieldValidation=Strict` (the server's
// default prunes them silently, which would hide a misspelling).

import { dns1123SubdomainProblem, invalid, labelCauses } from '../kube-rules.js';
import type { KubeCause } from '../kube-rules.js';
import { podSpecCauses } from './kube-validation.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;

const SPEC_FIELDS: Readonly<Record<string, readonly string[]>> = {
  v1alpha1: [
    'podTemplate',
    'volumeClaimTemplates',
    'shutdownTime',
    'shutdownPolicy',
    'replicas',
    'service',
  ],
  v1beta1: [
    'podTemplate',
    'volumeClaimTemplates',
    'shutdownTime',
    'shutdownPolicy',
    'operatingMode',
    'service',
  ],
};
export const AGENT_SANDBOX_VERSIONS_SERVED = Object.keys(SPEC_FIELDS);

// RFC 3339 date-time, as the schema's `format: date-time` checks it.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const required = (field: string): KubeCause => ({
  reason: 'FieldValueRequired',
  field,
  message: 'Required value',
});
const unknown = (field: string): KubeCause => ({
  reason: 'FieldValueInvalid',
  field,
  message: `unknown field "${field}"`,
});
const unsupported = (field: string, value: unknown, allowed: string[]): KubeCause => ({
  reason: 'FieldValueNotSupported',
  field,
  message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`,
});

/** The causes of a `Sandbox`'s refusal at `version`. */
export function agentSandboxCauses(version: string, body: Obj): KubeCause[] {
  const causes: KubeCause[] = [];
  const meta = asObj(body.metadata) ?? {};
  const name = typeof meta.name === 'string' ? meta.name : '';
  if (name === '') causes.push(required('metadata.name'));
  else {
    const p = dns1123SubdomainProblem(name);
    if (p) causes.push(invalid('metadata.name', name, p));
  }
  causes.push(...labelCauses(meta.labels));
  const expected = `agents.x-k8s.io/${version}`;
  if (body.apiVersion !== expected || body.kind !== 'Sandbox') {
    causes.push(
      invalid('apiVersion', String(body.apiVersion), `must be ${expected}, kind Sandbox`),
    );
  }
  const spec = asObj(body.spec);
  if (!spec) return [...causes, required('spec')];
  for (const key of Object.keys(spec)) {
    if (!SPEC_FIELDS[version]!.includes(key)) causes.push(unknown(`spec.${key}`));
  }
  const template = asObj(spec.podTemplate);
  if (!template) causes.push(required('spec.podTemplate'));
  else {
    for (const key of Object.keys(template)) {
      if (key !== 'spec' && key !== 'metadata') causes.push(unknown(`spec.podTemplate.${key}`));
    }
    const tmeta = template.metadata === undefined ? {} : asObj(template.metadata);
    if (!tmeta) causes.push(invalid('spec.podTemplate.metadata', '', 'must be an object'));
    else {
      for (const key of Object.keys(tmeta)) {
        if (key !== 'labels' && key !== 'annotations')
          causes.push(unknown(`spec.podTemplate.metadata.${key}`));
      }
      causes.push(...labelCauses(tmeta.labels, 'spec.podTemplate.metadata.labels'));
    }
    const podSpec = asObj(template.spec);
    if (!podSpec) causes.push(required('spec.podTemplate.spec'));
    else causes.push(...podSpecCauses(podSpec, 'spec.podTemplate.spec'));
  }
  if (spec.shutdownTime !== undefined) {
    if (typeof spec.shutdownTime !== 'string' || !DATE_TIME.test(spec.shutdownTime))
      causes.push(invalid('spec.shutdownTime', String(spec.shutdownTime), 'must be a date-time'));
  }
  if (
    spec.shutdownPolicy !== undefined &&
    !['Delete', 'Retain'].includes(String(spec.shutdownPolicy))
  )
    causes.push(unsupported('spec.shutdownPolicy', spec.shutdownPolicy, ['Delete', 'Retain']));
  if (spec.service !== undefined && typeof spec.service !== 'boolean')
    causes.push(invalid('spec.service', String(spec.service), 'must be a boolean'));
  if (version === 'v1alpha1' && spec.replicas !== undefined) {
    if (
      typeof spec.replicas !== 'number' ||
      !Number.isInteger(spec.replicas) ||
      spec.replicas < 0 ||
      spec.replicas > 1
    )
      causes.push(invalid('spec.replicas', String(spec.replicas), 'must be 0 or 1'));
  }
  if (
    version === 'v1beta1' &&
    spec.operatingMode !== undefined &&
    !['Running', 'Suspended'].includes(String(spec.operatingMode))
  ) {
    causes.push(unsupported('spec.operatingMode', spec.operatingMode, ['Running', 'Suspended']));
  }
  return causes;
}

/** The controller's tracking label value: FNV-1a (32 bit) of the Sandbox name, 8 hex digits. */
export function sandboxNameHash(name: string): string {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(name, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
