// The API server's validation rules for what the provisioner sends: names, labels and container
// resources. One module for both sides: the settings are checked with it at start-up (so a value
// the server would refuse stops the process, naming the setting), and the Kubernetes stand-in
// refuses with it what it receives (so a test meets the refusal a real cluster would give).

import { QuantityError, compareQuantities, isNegative, parseQuantity } from './kube-quantity.js';
import type { Quantity } from './kube-quantity.js';

/** One refusal, as the server's `Status.details.causes[]` carries it. */
export interface KubeCause {
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueDuplicate`, `FieldValueNotSupported`. */
  reason: string;
  /** The field path, `spec.containers[0].resources.requests`. */
  field: string;
  /** The server's wording: `Invalid value: "2": must be less than or equal to cpu limit of 1`. */
  message: string;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The problem with `value` as a DNS-1123 label (namespaces, container names), or undefined. */
export function dns1123LabelProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!DNS1123_LABEL.test(value)) {
    return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** The problem with `value` as a DNS-1123 subdomain (Pod, PVC, RuntimeClass names), or undefined. */
export function dns1123SubdomainProblem(value: string): string | undefined {
  if (value.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** The problem with `value` as a DNS-1035 label (Service names), or undefined. */
export function dns1035LabelProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!DNS1035_LABEL.test(value)) {
    return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
  }
  return undefined;
}

/** The problem with `value` as a label value, or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!LABEL_VALUE.test(value)) {
    return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** The problem with `key` as a label key (`[prefix/]name`), or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined) {
    const p = prefix === '' ? 'prefix part must be non-empty' : dns1123SubdomainProblem(prefix);
    if (p) return `prefix part ${p}`;
  }
  if (name.length === 0) return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** The causes of a label map's refusal. */
export function labelCauses(labels: unknown, field = 'metadata.labels'): KubeCause[] {
  if (labels === undefined || labels === null) return [];
  if (typeof labels !== 'object' || Array.isArray(labels)) {
    return [{ reason: 'FieldValueInvalid', field, message: 'must be a map of strings' }];
  }
  const causes: KubeCause[] = [];
  for (const [key, value] of Object.entries(labels as Record<string, unknown>)) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) causes.push(invalid(field, key, keyProblem));
    const valueProblem = typeof value === 'string' ? labelValueProblem(value) : 'must be a string';
    if (valueProblem) causes.push(invalid(`${field}`, String(value), valueProblem));
  }
  return causes;
}

export function invalid(field: string, value: string, detail: string): KubeCause {
  return {
    reason: 'FieldValueInvalid',
    field,
    message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
  };
}

/** Resources a container's requests and limits are checked for here. */
export const COMPUTE_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;
export type ComputeResource = (typeof COMPUTE_RESOURCES)[number];

/** A container's resources, as the Pod spec carries them. */
export interface ResourceRequirements {
  requests?: Record<string, unknown>;
  limits?: Record<string, unknown>;
}

/**
 * What the server refuses in one container's resources: a value that is not a quantity, a
 * negative one, and a request above its limit. A limit of 0 is a limit (of nothing), not "no
 * limit": any non-zero request above it is refused, as the server does.
 */
export function resourceCauses(resources: ResourceRequirements, field: string): KubeCause[] {
  const causes: KubeCause[] = [];
  const read = (group: 'requests' | 'limits'): Map<string, { text: string; q: Quantity }> => {
    const parsed = new Map<string, { text: string; q: Quantity }>();
    const values = resources[group];
    if (values === undefined || values === null) return parsed;
    if (typeof values !== 'object' || Array.isArray(values)) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: `${field}.${group}`,
        message: 'must be a map',
      });
      return parsed;
    }
    for (const [name, raw] of Object.entries(values)) {
      const at = `${field}.${group}[${name}]`;
      const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : '';
      let q: Quantity;
      try {
        q = parseQuantity(text.trim());
      } catch (err) {
        causes.push(invalid(at, text, quantityMessage(err)));
        continue;
      }
      if (isNegative(q)) {
        causes.push(invalid(at, text, 'must be greater than or equal to 0'));
        continue;
      }
      parsed.set(name, { text, q });
    }
    return parsed;
  };
  const requests = read('requests');
  const limits = read('limits');
  for (const [name, request] of requests) {
    const limit = limits.get(name);
    if (limit !== undefined && compareQuantities(request.q, limit.q) > 0) {
      causes.push(
        invalid(
          `${field}.requests`,
          request.text,
          `must be less than or equal to ${name} limit of ${limit.text}`,
        ),
      );
    }
  }
  return causes;
}

function quantityMessage(err: unknown): string {
  return err instanceof QuantityError
    ? `${err.message}; quantities look like 500m, 1Gi, 2e3`
    : String(err);
}

/** `<Kind> "<name>" is invalid: <field>: <message>, ...`: the server's Status message. */
export function invalidMessage(kind: string, name: string, causes: readonly KubeCause[]): string {
  return `${kind} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`;
}
