// What the API server's validation refuses, for the objects the provisioner makes, with the rules
// the provisioner's settings are checked with (`kube-rules.ts`): a malformed Pod or Service, or
// resources a real server would refuse, fail in the stand-in as they would in a cluster.

import {
  dns1035LabelProblem,
  dns1123LabelProblem,
  dns1123SubdomainProblem,
  invalid,
  labelCauses,
  resourceCauses,
} from '../kube-rules.js';
import type { KubeCause, ResourceRequirements } from '../kube-rules.js';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(asObj) : []);

const required = (field: string): KubeCause => ({
  reason: 'FieldValueRequired',
  field,
  message: 'Required value',
});

const duplicate = (field: string, value: string): KubeCause => ({
  reason: 'FieldValueDuplicate',
  field,
  message: `Duplicate value: ${JSON.stringify(value)}`,
});

function nameCauses(name: string, problem: (v: string) => string | undefined): KubeCause[] {
  if (name === '') return [required('metadata.name')];
  const p = problem(name);
  return p ? [invalid('metadata.name', name, p)] : [];
}

/** The causes of a Service's refusal. */
export function serviceCauses(body: Obj): KubeCause[] {
  const meta = asObj(body.metadata);
  const name = typeof meta.name === 'string' ? meta.name : '';
  const causes = [...nameCauses(name, dns1035LabelProblem), ...labelCauses(meta.labels)];
  const spec = asObj(body.spec);
  const ports = asList(spec.ports);
  if (ports.length === 0) causes.push(required('spec.ports'));
  ports.forEach((p, i) => {
    if (typeof p.port !== 'number' || p.port < 1 || p.port > 65535)
      causes.push(
        invalid(`spec.ports[${i}].port`, String(p.port), 'must be between 1 and 65535, inclusive'),
      );
  });
  if (
    spec.type !== undefined &&
    !['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'].includes(String(spec.type))
  ) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'spec.type',
      message: `Unsupported value: ${JSON.stringify(spec.type)}`,
    });
  }
  causes.push(...labelCauses(spec.selector, 'spec.selector'));
  return causes;
}

/** The causes of a Pod spec's refusal; `at` prefixes the field paths (`spec`, a template's). */
export function podSpecCauses(spec: Obj, at = 'spec'): KubeCause[] {
  const causes: KubeCause[] = [];
  const volumeNames = new Set<string>();
  asList(spec.volumes).forEach((v, i) => {
    const vName = String(v.name ?? '');
    const p = dns1123LabelProblem(vName);
    if (p) causes.push(invalid(`${at}.volumes[${i}].name`, vName, p));
    if (volumeNames.has(vName)) causes.push(duplicate(`${at}.volumes[${i}].name`, vName));
    volumeNames.add(vName);
  });
  if (asList(spec.containers).length === 0) causes.push(required(`${at}.containers`));
  const containerNames = new Set<string>();
  const check = (group: 'containers' | 'initContainers') =>
    asList(spec[group]).forEach((c, i) => {
      const field = `${at}.${group}[${i}]`;
      const cName = String(c.name ?? '');
      const p = dns1123LabelProblem(cName);
      if (p) causes.push(invalid(`${field}.name`, cName, p));
      if (containerNames.has(cName)) causes.push(duplicate(`${field}.name`, cName));
      containerNames.add(cName);
      if (typeof c.image !== 'string' || c.image === '') causes.push(required(`${field}.image`));
      causes.push(
        ...resourceCauses(asObj(c.resources) as ResourceRequirements, `${field}.resources`),
      );
      const paths = new Set<string>();
      asList(c.volumeMounts).forEach((m, j) => {
        const mField = `${field}.volumeMounts[${j}]`;
        if (!volumeNames.has(String(m.name)))
          causes.push({
            reason: 'FieldValueNotFound',
            field: `${mField}.name`,
            message: `Not found: ${JSON.stringify(String(m.name))}`,
          });
        const mp = String(m.mountPath ?? '');
        if (paths.has(mp)) causes.push(invalid(`${mField}.mountPath`, mp, 'must be unique'));
        paths.add(mp);
        if (
          typeof m.subPath === 'string' &&
          (m.subPath.startsWith('/') || m.subPath.split('/').includes('..'))
        ) {
          causes.push(
            invalid(`${mField}.subPath`, m.subPath, "must be a relative path without '..'"),
          );
        }
      });
    });
  check('containers');
  check('initContainers');
  if (spec.runtimeClassName !== undefined) {
    const p = dns1123SubdomainProblem(String(spec.runtimeClassName));
    if (p) causes.push(invalid(`${at}.runtimeClassName`, String(spec.runtimeClassName), p));
  }
  if (spec.activeDeadlineSeconds !== undefined) {
    const v = spec.activeDeadlineSeconds;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 2_147_483_647)
      causes.push(
        invalid(
          `${at}.activeDeadlineSeconds`,
          String(v),
          'must be between 1 and 2147483647, inclusive',
        ),
      );
  }
  return causes;
}

/** The causes of a Pod's refusal. */
export function podCauses(body: Obj): KubeCause[] {
  const meta = asObj(body.metadata);
  const name = typeof meta.name === 'string' ? meta.name : '';
  return [
    ...nameCauses(name, dns1123SubdomainProblem),
    ...labelCauses(meta.labels),
    ...podSpecCauses(asObj(body.spec)),
  ];
}

/** What the server would refuse in `body`, one `field: message` line per cause. */
export function kubeObjectProblems(kind: 'Pod' | 'Service', body: Obj): string[] {
  return (kind === 'Pod' ? podCauses(body) : serviceCauses(body)).map(
    (c) => `${c.field}: ${c.message}`,
  );
}
