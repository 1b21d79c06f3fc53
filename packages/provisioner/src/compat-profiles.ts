// How sandbox objects are named, labelled and laid out: sbx's own profile, or the reference
// provisioner's, so an sbx provisioner can take over a running reference deployment (list and
// collect its Pods, reuse them and their data) instead of running beside it blind.

export const COMPAT_PROFILES = ['sbx', 'deer-flow'] as const;
export type CompatProfileName = (typeof COMPAT_PROFILES)[number];

export interface CompatProfile {
  /** The `app` label of every sandbox Pod and Service; listing and collection select on it. */
  appLabel: string;
  /** The `app.kubernetes.io/name` label. */
  appName: string;
  /** Defaults of settings a deployment may still set (the environment and file win). */
  defaults: {
    namespace: string;
    threadsHostPath: string;
    userDataPvcSubpathPrefix: string;
  };
}

export const COMPAT: Readonly<Record<CompatProfileName, CompatProfile>> = {
  sbx: {
    appLabel: 'sbx-sandbox',
    appName: 'sbx',
    defaults: {
      namespace: 'sbx',
      threadsHostPath: '/var/lib/sbx/threads',
      userDataPvcSubpathPrefix: 'sbx',
    },
  },
  // The reference provisioner's label, namespace, host paths (its base is the parent of the
  // threads directory, /.deer-flow) and user-data PVC prefix.
  'deer-flow': {
    appLabel: 'deer-flow-sandbox',
    appName: 'deer-flow',
    defaults: {
      namespace: 'deer-flow',
      threadsHostPath: '/.deer-flow/threads',
      userDataPvcSubpathPrefix: 'deer-flow',
    },
  },
};

export function isCompatProfileName(value: string): value is CompatProfileName {
  return (COMPAT_PROFILES as readonly string[]).includes(value);
}
