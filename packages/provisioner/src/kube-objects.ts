// The slice of the Kubernetes core/v1 object model the provisioner writes and reads, typed here so
// the package's public types never name the optional client library. Field names are the API's
// (camelCase JSON), so these objects go to the client as they are.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  ownerReferences?: OwnerReference[];
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
}

export interface Volume {
  name: string;
  hostPath?: { path: string; type?: string };
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  emptyDir?: Record<string, never>;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface Probe {
  httpGet: { path: string; port: string | number };
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
}

export interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  seccompProfile?: { type: string };
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  args?: string[];
  env?: { name: string; value: string }[];
  ports?: { name: string; containerPort: number; protocol?: string }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: {
    requests?: Record<string, string>;
    limits?: Record<string, string>;
  };
  securityContext?: SecurityContext;
  volumeMounts?: VolumeMount[];
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    containers: Container[];
    initContainers?: Container[];
    volumes?: Volume[];
    restartPolicy?: string;
    automountServiceAccountToken?: boolean;
    enableServiceLinks?: boolean;
    securityContext?: { seccompProfile?: { type: string }; runAsNonRoot?: boolean };
    terminationGracePeriodSeconds?: number;
    runtimeClassName?: string;
    activeDeadlineSeconds?: number;
  };
  status?: { phase?: string; podIP?: string };
}

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
  protocol?: string;
}

export interface Service {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    type?: string;
    selector?: Record<string, string>;
    ports?: ServicePort[];
    clusterIP?: string;
  };
}

/** A `metav1.Condition`. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/**
 * kubernetes-sigs/agent-sandbox's `Sandbox` (`agents.x-k8s.io`, v1alpha1 and v1beta1): the fields
 * both versions share, which are all this package writes or reads.
 */
export interface AgentSandbox {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: {
    podTemplate: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: NonNullable<Pod['spec']>;
    };
    /** Whether the controller keeps a headless Service named after the Sandbox. */
    service?: boolean;
    /** RFC 3339: the controller tears the Sandbox down then, whatever the gateways do. */
    shutdownTime?: string;
    shutdownPolicy?: 'Delete' | 'Retain';
    /** v1alpha1 only: 0 or 1. */
    replicas?: number;
    /** v1beta1 only. */
    operatingMode?: 'Running' | 'Suspended';
  };
  status?: {
    service?: string;
    serviceFQDN?: string;
    conditions?: Condition[];
    selector?: string;
    podIPs?: string[];
  };
}

export interface Namespace {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface ObjectList<T> {
  items: T[];
}

/** A `networking.k8s.io/v1` NetworkPolicy peer: Pods by label, optionally in other namespaces. */
export interface KubeNetworkPolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
  ipBlock?: { cidr: string; except?: string[] };
}

export interface KubeNetworkPolicyPort {
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  port?: number | string;
  endPort?: number;
}

/** The slice of `networking.k8s.io/v1` NetworkPolicy the provisioner writes. */
export interface KubeNetworkPolicy {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
    policyTypes: ('Ingress' | 'Egress')[];
    egress?: { to?: KubeNetworkPolicyPeer[]; ports?: KubeNetworkPolicyPort[] }[];
  };
}
