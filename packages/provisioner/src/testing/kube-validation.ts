// What the API server's validation refuses, for the objects the provisioner makes: enough that a
// malformed Pod or Service from the provisioner fails in the stand-in as it would in a cluster.

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(asObj) : []);

function labelProblems(labels: unknown): string[] {
  return Object.entries(asObj(labels)).flatMap(([k, v]) =>
    typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)
      ? [`metadata.labels.${k}: invalid label value`]
      : [],
  );
}

export function kubeObjectProblems(kind: 'Pod' | 'Service', body: Obj): string[] {
  const meta = asObj(body.metadata);
  const name = typeof meta.name === 'string' ? meta.name : '';
  const problems: string[] = [...labelProblems(meta.labels)];
  if (kind === 'Service') {
    if (name.length > 63 || !DNS_LABEL_1035.test(name))
      problems.push('metadata.name: must be a DNS-1035 label');
    const spec = asObj(body.spec);
    const ports = asList(spec.ports);
    if (ports.length === 0) problems.push('spec.ports: Required value');
    for (const p of ports) {
      if (typeof p.port !== 'number' || p.port < 1 || p.port > 65535)
        problems.push('spec.ports.port: invalid');
    }
    if (
      spec.type !== undefined &&
      !['ClusterIP', 'NodePort', 'LoadBalancer'].includes(String(spec.type))
    ) {
      problems.push('spec.type: Unsupported value');
    }
    return problems;
  }
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    problems.push('metadata.name: must be a DNS-1123 subdomain');
  const spec = asObj(body.spec);
  const volumes = asList(spec.volumes);
  const volumeNames = new Set<string>();
  for (const v of volumes) {
    const vName = String(v.name ?? '');
    if (volumeNames.has(vName)) problems.push(`spec.volumes: Duplicate value "${vName}"`);
    volumeNames.add(vName);
  }
  const containers = [...asList(spec.containers), ...asList(spec.initContainers)];
  if (asList(spec.containers).length === 0) problems.push('spec.containers: Required value');
  const containerNames = new Set<string>();
  for (const c of containers) {
    const cName = String(c.name ?? '');
    if (containerNames.has(cName)) problems.push(`spec.containers: Duplicate value "${cName}"`);
    containerNames.add(cName);
    if (typeof c.image !== 'string' || c.image === '')
      problems.push(`containers[${cName}].image: Required value`);
    const paths = new Set<string>();
    for (const m of asList(c.volumeMounts)) {
      if (!volumeNames.has(String(m.name)))
        problems.push(`containers[${cName}].volumeMounts.name: Not found "${String(m.name)}"`);
      const mp = String(m.mountPath ?? '');
      if (paths.has(mp))
        problems.push(`containers[${cName}].volumeMounts.mountPath: must be unique "${mp}"`);
      paths.add(mp);
      if (
        typeof m.subPath === 'string' &&
        (m.subPath.startsWith('/') || m.subPath.split('/').includes('..'))
      ) {
        problems.push(
          `containers[${cName}].volumeMounts.subPath: must be a relative path without ..`,
        );
      }
    }
  }
  return problems;
}
