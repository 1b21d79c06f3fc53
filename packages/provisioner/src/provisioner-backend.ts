import type { CreateSandboxRequest } from './create-request.js';

/** What the API answers for one sandbox (`status` is the backend's phase, or `NotFound`). */
export interface SandboxResponse {
  sandbox_id: string;
  sandbox_url: string;
  status: string;
}

export interface DeleteResponse {
  ok: true;
  sandbox_id: string;
  /** False when the sandbox was still terminating at the end of the delete's wait. */
  terminated: boolean;
}

export interface GarbageReport {
  /** Sandbox ids whose Pod was deleted because its Service was gone. */
  pods: string[];
  /** Sandbox ids whose Service was deleted because its Pod (or Sandbox) was gone. */
  services: string[];
}

/**
 * How the provisioner makes sandboxes: `SandboxPods` (a Pod and a Service each) or
 * `AgentSandboxes` (a kubernetes-sigs/agent-sandbox `Sandbox` each). The HTTP API is the same
 * for both.
 */
export interface ProvisionerBackend {
  readonly namespace: string;
  ensureNamespace(): Promise<void>;
  create(request: CreateSandboxRequest): Promise<SandboxResponse>;
  /** @throws ProvisionerHttpError 404 when there is no such sandbox with an access URL */
  get(id: string): Promise<SandboxResponse>;
  delete(id: string): Promise<DeleteResponse>;
  list(): Promise<{ sandboxes: SandboxResponse[]; count: number }>;
  collectGarbage(): Promise<GarbageReport>;
}
